"""A benchmark's `offset`: audit the items after the first N (fresh items beside an audited slice), with the
rephrasings of the whole split and stored chunks that never stand in for another offset's."""

import dataclasses
import json
import re

import pyarrow.parquet as pq
import pytest

from helpers import run_cli, small_toml
from jaxcontam.audit.config import BenchmarkEntry, load_config
from jaxcontam.errors import JaxcontamError


def test_an_offset_selects_the_items_after_it_with_their_own_rephrasings(shared_data):
    from jaxcontam.audit.inputs import load_audit_benchmark

    entry = BenchmarkEntry("gsm8k", split="test", path=str(shared_data), paraphrases="gsm8k_rephrase", limit=5)
    selected = load_audit_benchmark(dataclasses.replace(entry, offset=68), needs_rephrasings=True).benchmark
    # the references: the raw test file's and the rephrase file's lines 68-72 (line i <-> test item i)
    raw = (shared_data / "gsm8k" / "test.jsonl").read_text().splitlines()[68:73]
    rephrased = (shared_data / "llm_decontaminator_rephrase" / "rephrase_gsm8k.jsonl").read_text().splitlines()[68:73]
    assert [item.id for item in selected] == [f"gsm8k/test/{i}" for i in range(68, 73)]
    assert [item.question for item in selected] == [json.loads(line)["question"] for line in raw]
    expected = [re.match(r"\s*Question:\s*(.*?)\nAnswer:", json.loads(line)["text"], re.S)[1] for line in rephrased]
    assert [item.paraphrases[0].strip() for item in selected] == [text.strip() for text in expected]
    assert dataclasses.replace(entry, offset=68).label == "gsm8k:test[68:]" and entry.label == "gsm8k:test"


@pytest.mark.parametrize("offset", [-1, True, 1.5])
def test_an_offset_that_is_not_a_whole_number_is_refused(tmp_path, offset):
    config = tmp_path / "audit.toml"
    config.write_text(f'[[model]]\npath = "m"\n[[benchmark]]\nname = "gsm8k"\noffset = {json.dumps(offset)}\n')
    with pytest.raises(JaxcontamError, match="offset"):
        load_config(config)


def test_an_offset_past_the_end_names_the_fix(tmp_path, capsys):
    code, printed = run_cli(["pacost", "--config", small_toml(tmp_path), "--set", "benchmark.offset=100000"], capsys)
    assert code != 0 and "has no items (offset=100000" in printed and "lower the offset" in printed
    assert not (tmp_path / "out" / "summary.json").exists()


def test_a_second_offset_in_the_same_folder_computes_its_own_items(tmp_path, capsys):
    from jaxcontam.audit.inputs import load_audit_benchmark

    config = small_toml(tmp_path, limit=4, exchangeability=False)
    first_code, _ = run_cli(["pacost", "--config", config], capsys)
    first = pq.read_table(tmp_path / "out" / "items.parquet").to_pandas()
    code, printed = run_cli(["pacost", "--config", config, "--offset", "4"], capsys)
    assert first_code == 0 and code == 0, printed
    second = pq.read_table(tmp_path / "out" / "items.parquet").to_pandas()
    chunks = [line for line in printed.splitlines() if ": chunk " in line]
    assert chunks and not [line for line in chunks if "reused" in line]  # nothing of offset 0 stands in
    assert len(first) == len(second) == 8 and not set(first.id) & set(second.id)
    for benchmark in ("gsm8k", "copa"):  # the first run's next four items of each benchmark
        entry = next(b for b in load_config(config).benchmarks if b.name == benchmark)
        expected = [item.id for item in load_audit_benchmark(dataclasses.replace(entry, limit=8)).benchmark][4:]
        assert list(second[second.benchmark == benchmark].id) == expected
    assert "[4:]" in printed  # progress names the selection with its offset
