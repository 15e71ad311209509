"""ReCaLL (Xie et al. 2024; mimir's `recall` attack) against mimir's definition written here in plain torch loops on
the bundled model; the non-member prefix: its file, its default, its cut to the model's positions; both passes in
one batched scoring call."""

import json

import numpy as np
import pytest

from helpers import TINY_MODEL, bundled_target, small_toml, torch_token_logprobs
from jaxcontam.detect import prefixed
from jaxcontam.detect.audit_core import AuditSettings, audit_benchmark
from jaxcontam.detect.prefixed import SEPARATOR, fit_prefix
from jaxcontam.detect.recall import BUNDLED_NONMEMBERS, RecallSettings, nonmember_texts, recall_records
from jaxcontam.detect.registry import DETECTORS
from jaxcontam.errors import JaxcontamError

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def tiny():
    from transformers import LlamaForCausalLM

    import jaxcontam

    return jaxcontam.load_model(str(TINY_MODEL)), LlamaForCausalLM.from_pretrained(str(TINY_MODEL)).eval()


def mimir_recall(model, tokenizer, text: str, prefix_ids: list[int]) -> tuple[float, float]:
    """(LL(x), LL(x | P)) as mimir's ReCaLL computes them: minus the mean loss of the text alone, and minus the mean
    loss over the text's tokens after the prefix (labels of the prefix masked); the text's own BOS is not repeated
    after the prefix."""
    ids = tokenizer.encode(text)
    body = ids[1:] if ids[0] == tokenizer.bos_token_id else ids
    joined = torch_token_logprobs(model, prefix_ids + body)  # joined[t - 1] scores token t
    return float(np.mean(torch_token_logprobs(model, ids))), float(np.mean(joined[len(prefix_ids) - 1 :]))


def test_recall_is_mimirs_conditional_over_unconditional_log_likelihood(tiny):
    ours, theirs = tiny
    benchmark, target = bundled_target("gsm8k", limit=8)
    tok = ours.tokenizer
    audit = audit_benchmark(ours, target, AuditSettings(detectors=("recall",)))
    # the prefix by the stated rule: the bundled texts, whole texts dropped from the front until the benchmark's
    # longest item fits beside them in the model's 512 positions
    longest = max(len(tok.encode(benchmark.solved_text(item))) - 1 for item in benchmark)
    kept = next(
        texts
        for start in range(len(BUNDLED_NONMEMBERS))
        if len(tok.encode(SEPARATOR.join(texts := BUNDLED_NONMEMBERS[start:]) + SEPARATOR)) <= 512 - longest
    )
    prefix_ids = tok.encode(SEPARATOR.join(kept) + SEPARATOR)
    assert 0 < len(kept) < len(BUNDLED_NONMEMBERS)  # this benchmark needs the cut
    for item, row in zip(benchmark, audit.rows):
        alone, conditional = mimir_recall(theirs, tok, benchmark.solved_text(item), prefix_ids)
        assert row["recall_logprob"] == pytest.approx(alone, abs=2e-4)
        assert row["recall_prefixed_logprob"] == pytest.approx(conditional, abs=2e-4)
        assert row["recall"] == pytest.approx(conditional / alone, rel=1e-3)
        assert row["recall_prefix_texts"] == len(kept) and row["recall_prefix_tokens"] == len(prefix_ids)
    result = audit.results["recall"]
    assert result.prefix_source == "bundled" and result.prefix_texts == len(kept)
    scores = [row["recall"] for row in audit.rows]
    assert result.summary.mean == pytest.approx(np.mean(scores)) and result.summary.median == pytest.approx(
        np.median(scores)
    )
    assert DETECTORS["recall"].headline is None  # a score with no test states no verdict


def test_both_passes_are_one_batched_call_and_the_prefix_does_not_depend_on_the_chunk(tiny, monkeypatch):
    ours, _ = tiny
    benchmark, _ = bundled_target("gsm8k", limit=8)
    calls = []
    real = prefixed.score_logprobs

    def counted(model, sequences, spans=None, **kwargs):
        calls.append(len(sequences))
        return real(model, sequences, spans, **kwargs)

    monkeypatch.setattr(prefixed, "score_logprobs", counted)
    items = list(benchmark)
    whole = recall_records(ours, benchmark, items, RecallSettings())
    parts = recall_records(ours, benchmark, items[:3], RecallSettings()) + recall_records(
        ours, benchmark, items[3:], RecallSettings()
    )
    assert calls == [16, 6, 10]  # per chunk: every text alone and after the prefix, in one call
    for a, b in zip(whole, parts):
        assert a["id"] == b["id"] and a["recall_prefix_tokens"] == b["recall_prefix_tokens"]
        assert a["recall"] == pytest.approx(b["recall"], rel=1e-5)


class WordTokenizer:
    """One id per word (its length), BOS = 0 first: enough to count tokens exactly."""

    bos_token_id = 0

    def encode(self, text: str) -> list[int]:
        return [0] + [len(word) for word in text.split()]


def test_the_prefix_drops_whole_texts_from_the_front_then_keeps_the_last_tokens_of_one():
    texts = ["a b c", "d e", "f g h i"]  # 3, 2 and 4 words
    tok = WordTokenizer()
    assert fit_prefix(tok, texts, 10, "here") == prefixed.Prefix((0, 1, 1, 1, 1, 1, 1, 1, 1, 1), 3, False)
    assert fit_prefix(tok, texts, 7, "here").texts == 2  # "d e f g h i" and BOS
    assert fit_prefix(tok, texts, 5, "here") == prefixed.Prefix((0, 1, 1, 1, 1), 1, False)
    assert fit_prefix(tok, texts, 3, "here") == prefixed.Prefix((1, 1, 1), 1, True)  # the last tokens of the last
    with pytest.raises(JaxcontamError, match="here: the scored text leaves no room for a prefix"):
        fit_prefix(tok, texts, 0, "here")


def test_the_prefix_file_its_default_and_its_refusals(tmp_path):
    from jaxcontam.audit.config import load_config

    assert nonmember_texts(RecallSettings()) == BUNDLED_NONMEMBERS
    assert nonmember_texts(RecallSettings(shots=2)) == BUNDLED_NONMEMBERS[:2]
    rows = [{"text": "First fresh text."}, {"text": "Second fresh text."}, {"text": "Third."}]
    (tmp_path / "nonmembers.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    config = load_config(small_toml(tmp_path, extra='\n[recall]\nprefix_file = "nonmembers.jsonl"\nshots = 2\n'))
    settings = config.settings_of("recall")
    assert settings.prefix_file == str(tmp_path / "nonmembers.jsonl")  # read from the TOML file's folder
    assert nonmember_texts(settings) == ("First fresh text.", "Second fresh text.") and "recall" in config.stages
    with pytest.raises(JaxcontamError, match="shots = 4 but .* hold.s. 3 text"):
        RecallSettings(prefix_file=str(tmp_path / "nonmembers.jsonl"), shots=4)
    (tmp_path / "bad.jsonl").write_text('{"text": "fine"}\n{"body": "no text key"}\n')
    with pytest.raises(JaxcontamError, match="bad.jsonl, line 2: expected"):
        RecallSettings(prefix_file=str(tmp_path / "bad.jsonl"), shots=1)
    with pytest.raises(JaxcontamError, match="prefix_file not found"):
        RecallSettings(prefix_file=str(tmp_path / "missing.jsonl"))
    with pytest.raises(JaxcontamError, match="shots"):
        RecallSettings(shots=0)
