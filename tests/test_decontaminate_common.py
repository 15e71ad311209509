"""`--drop-common K`: benchmark n-grams in more than K documents are counted in a first pass, left out of the run
and listed apart; the counts checked by brute force over the documents' words, through the pool and the command."""

from __future__ import annotations

import json
import unicodedata

import pytest

from helpers import run_cli as run
from jaxcontam.decontam import DecontIndex, benchmark_items
from jaxcontam.decontam.run import RunSettings, decontaminate


@pytest.fixture(scope="module")
def planted(shared_data, tmp_path_factory):
    """GSM8K items; a corpus of Pile text where 6 documents repeat the first 20 words of item 0 (a shared opening,
    as boilerplate is) and one holds a whole copy of item 1."""
    import gzip

    from jaxcontam.data import load_benchmark

    gsm8k = load_benchmark("gsm8k", path=shared_data / "gsm8k", split="test")
    items = benchmark_items([gsm8k])
    with gzip.open(next((shared_data / "mimir_pile_nonmembers" / "wikipedia_en").rglob("*.jsonl.gz")), "rt") as f:
        texts = [json.loads(line)["text"][:1500] for _, line in zip(range(40), f)]
    opening = " ".join(items[0].question.split()[:20])
    for k in range(6):
        texts[k] = f"{texts[k]}\n{opening}\n"
    texts[10] = f"{texts[10]}\n{items[1].question}\n{items[1].answer}\n"
    folder = tmp_path_factory.mktemp("common")
    for shard in range(2):  # two shards: the counts add across them
        lines = "".join(json.dumps({"id": f"d{k}", "text": t}) + "\n" for k, t in enumerate(texts) if k % 2 == shard)
        (folder / f"s{shard}.jsonl").write_text(lines)
    return gsm8k, items, texts, folder


def _documents_holding(ngram: str, texts: list[str]) -> int:
    """By brute force: documents whose words (lowercased, punctuation and symbols deleted) hold `ngram` in a row."""
    target = ngram.split()
    count = 0
    for text in texts:
        words = [
            w
            for w in ("".join(c for c in t.lower() if unicodedata.category(c)[0] not in "PS") for t in text.split())
            if w
        ]
        count += any(words[i : i + len(target)] == target for i in range(len(words) - len(target) + 1))
    return count


def test_common_ngrams_are_counted_left_out_and_listed(planted, tmp_path):
    _, items, texts, folder = planted
    index = DecontIndex.build(items)
    before = decontaminate(index, [str(folder)], str(tmp_path / "all"), RunSettings(policy="annotate"), workers=2)
    assert before["total"]["matched"] == 7 and "common_ngrams" not in before
    after = decontaminate(
        index, [str(folder)], str(tmp_path / "common"), RunSettings(policy="annotate", drop_common=5), workers=2
    )
    common = after["common_ngrams"]
    assert common["limit"] == 5 and common["documents_counted"] == 40
    assert common["dropped"] == len(common["ngrams"]) == 20 - 13 + 1  # every 13-gram of the shared opening
    for entry in common["ngrams"]:
        assert entry["documents"] == _documents_holding(entry["ngram"], texts) == 6
        assert f"gsm8k/{items[0].id}" in entry["items"]
    assert after["total"]["matched"] == 1  # the whole copy alone: no flag rests on a common n-gram
    assert after["benchmarks"]["gsm8k"]["items_found"] == 1
    limit_six = decontaminate(index, [str(folder)], str(tmp_path / "six"), RunSettings(drop_common=6), workers=1)
    assert limit_six["common_ngrams"]["dropped"] == 0 and limit_six["total"]["matched"] == 7  # "more than K"
    assert json.loads((tmp_path / "common" / "common" / "s0.jsonl.json").read_text())["documents"] == 20  # resumable


def test_the_command_records_the_limit_and_reproduces_it(planted, shared_data, tmp_path, capsys):
    _, _, _, folder = planted
    out = tmp_path / "out"
    args = ["decontaminate", "--benchmark", "gsm8k", "--path", shared_data / "gsm8k", "--split", "test"]
    code, text = run([*args, "--corpus", folder, "--out", out, "--drop-common", 5, "--workers", 1], capsys)
    assert code == 0, text
    summary = json.loads((out / "summary.json").read_text())
    assert summary["manifest"]["run"]["drop_common"] == 5 and summary["common_ngrams"]["dropped"] == 8
    assert "Common n-grams left out (8)" in (out / "report.html").read_text()
    again = tmp_path / "again"
    code, text = run(["decontaminate", "--reproduce", out / "summary.json", "--out", again], capsys)
    assert code == 0, text
    assert json.loads((again / "summary.json").read_text())["common_ngrams"] == summary["common_ngrams"]
    code, text = run([*args, "--corpus", folder, "--out", tmp_path / "bad", "--drop-common", 0], capsys)
    assert code == 2 and "--drop-common" in text
