"""`jaxcontam score` and `jaxcontam generate` end to end on a small real text file (toy decoder)."""

import json

import numpy as np
import pytest

import jaxcontam
from helpers import naive_logprobs, toy_model
from jaxcontam.cli import main
from jaxcontam.detect import likelihood


class ByteTokenizer:
    """BOS (1) then one token per UTF-8 byte."""

    def encode(self, text, add_special_tokens=True):
        return ([1] if add_special_tokens else []) + [2 + b % 59 for b in text.encode("utf-8")]

    def decode(self, ids, skip_special_tokens=True):
        return "".join(chr(ord("a") + i % 26) for i in ids)


@pytest.fixture
def texts_file(shared_data, tmp_path):
    lines = [json.loads(line) for line in (shared_data / "copa" / "copa_dev.jsonl").read_text().splitlines()[:6]]
    path = tmp_path / "copa.jsonl"
    path.write_text("".join(json.dumps({"idx": i, "premise": row["premise"]}) + "\n" for i, row in enumerate(lines)))
    return path, [row["premise"] for row in lines]


@pytest.fixture
def toy_cli(monkeypatch):
    models = {
        "target": toy_model(seed=0, tokenizer=ByteTokenizer()),
        "ref": toy_model(seed=1, tokenizer=ByteTokenizer()),
    }
    monkeypatch.setattr(jaxcontam, "load_model", lambda path, dtype="float32", mesh=None, fsdp=False, **_: models[path])
    return models


def test_score_writes_one_record_per_text_in_order(toy_cli, texts_file, tmp_path):
    path, premises = texts_file
    out = tmp_path / "scores.jsonl"
    main(
        [
            "score",
            "--model",
            "target",
            "--data",
            str(path),
            "--field",
            "text=premise",
            "--field",
            "id=idx",
            "--out",
            str(out),
            "--k",
            "0.3",
            "--reference-model",
            "ref",
        ]
    )
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in records] == [str(i) for i in range(6)]
    for r, text in zip(records, premises):
        ids = ByteTokenizer().encode(text)
        want = naive_logprobs(toy_cli["target"], ids)
        assert r["num_tokens"] == len(ids)
        np.testing.assert_allclose(r["token_logprobs"], want, rtol=1e-5, atol=1e-5)
        assert r["min_k"] == pytest.approx(likelihood.min_k_prob(want, 0.3), rel=1e-4)
        assert r["zlib_ratio"] == pytest.approx(likelihood.zlib_ratio(want, text), rel=1e-4)
        ref = naive_logprobs(toy_cli["ref"], ids)
        assert r["reference_ratio"] == pytest.approx(want.mean() / ref.mean(), rel=1e-4)
        assert np.isfinite(r["min_k_plus_plus"])


def test_generate_writes_completions(toy_cli, texts_file, tmp_path):
    path, _ = texts_file
    out = tmp_path / "gen.jsonl"
    main(
        [
            "generate",
            "--model",
            "target",
            "--data",
            str(path),
            "--field",
            "text=premise",
            "--out",
            str(out),
            "--max-new-tokens",
            "5",
            "--temperature",
            "0.8",
            "--seed",
            "3",
        ]
    )
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 6 and all(len(r["completion_token_ids"]) == 5 for r in records)
    assert all(r["finish_reason"] == "length" for r in records)


def test_bad_field_mapping_is_a_user_error(toy_cli, texts_file, tmp_path, capsys):
    path, _ = texts_file
    with pytest.raises(SystemExit) as exit_info:
        main(["score", "--model", "target", "--data", str(path), "--out", str(tmp_path / "x.jsonl")])
    assert exit_info.value.code == 2
    assert "missing field 'text'" in capsys.readouterr().err
