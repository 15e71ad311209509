"""A benchmark and a PaCoST confidence are plug-ins too: the worked examples of docs/adding_a_benchmark.md and
docs/adding_a_detector.md ("A PaCoST confidence"), taken from the pages and run as they are, register into the same
`Registry` shape as the detectors and are then found by the library's own entry points (`load_benchmark` by the
benchmark's hub id; PaCoST's test on the bundled example by the confidence's name)."""

import json
import math
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
EXAMPLE = Path(__file__).resolve().parents[1] / "jaxcontam" / "examples" / "tiny_contaminated"


def run_example(page: str, marker: str) -> dict:
    """The page's python block between `<!-- marker -->` and `<!-- /marker -->`, run; its namespace."""
    path = DOCS / page
    block = re.search(rf"<!-- {marker} -->\s*```python\n(.*?)```\s*<!-- /{marker} -->", path.read_text(), re.S)
    assert block, f"{page} lost its marked {marker}"
    namespace: dict = {"__name__": marker.replace("-", "_")}
    exec(compile(block.group(1), str(path), "exec"), namespace)  # noqa: S102 - the repository's own documentation
    return namespace


@pytest.fixture
def capitals():
    from jaxcontam.data.registry import BENCHMARKS

    yield run_example("adding_a_benchmark.md", "benchmark-example")["CAPITALS"]
    BENCHMARKS.unregister("capitals")
    assert "capitals" not in BENCHMARKS and BENCHMARKS.get("example-org/capitals") is None


def test_the_documented_benchmark_loads_by_its_hub_id_from_a_data_root(capitals, tmp_path):
    from jaxcontam.data import list_benchmarks, load_benchmark

    rows = [
        {"q": "What is the capital of France?", "options": ["Lyon", "Paris"], "gold": 1},
        {"q": "What is the capital of Peru?", "options": ["Lima", "Cusco", "Quito"], "gold": 0},
    ]
    (tmp_path / "capitals").mkdir()
    (tmp_path / "capitals" / "test.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert "capitals" in list_benchmarks()
    benchmark = load_benchmark("Example-Org/Capitals", roots=(tmp_path,))
    assert (benchmark.name, benchmark.split, [item.id for item in benchmark]) == (
        "capitals",
        "test",
        ["capitals/test/0", "capitals/test/1"],
    )
    first = list(benchmark)[0]
    assert benchmark.prompt(first) == "Question: What is the capital of France?\nAnswer:" and first.answer == 1


@pytest.fixture
def question_logprob():
    from jaxcontam.detect.pacost.confidences import CONFIDENCES

    yield run_example("adding_a_detector.md", "confidence-example")["QUESTION_LOGPROB"]
    CONFIDENCES.unregister("question_logprob")
    assert "question_logprob" not in CONFIDENCES


def test_the_documented_confidence_is_measured_and_tested_when_chosen(question_logprob):
    import jaxcontam
    from jaxcontam.data import load_benchmark
    from jaxcontam.detect.pacost.records import pacost_records
    from jaxcontam.detect.pacost.settings import PacostSettings
    from jaxcontam.detect.pacost.significance import pacost_result
    from jaxcontam.engine import score_logprobs

    model = jaxcontam.load_model(str(EXAMPLE / "model"))
    benchmark = load_benchmark("copa", split="test", path=EXAMPLE / "copa_test_sample.jsonl", limit=6)
    items = list(benchmark)
    lines = (EXAMPLE / "copa_rephrasings.jsonl").read_text().splitlines()
    paraphrase = {row["id"]: row["paraphrase"][0] for row in map(json.loads, lines)}  # the first of each
    rephrasings = [paraphrase.get(item.id) for item in items]
    assert sum(r is not None for r in rephrasings) >= 4
    chosen = PacostSettings(confidence="question_logprob", max_new_tokens=8)
    records = pacost_records(model, benchmark, items, rephrasings, chosen)
    expected = score_logprobs(model, [model.tokenizer.encode(items[0].question)])[0].logprobs.mean()
    assert math.isclose(records[0]["question_logprob_original"], float(expected), rel_tol=1e-6)
    result = pacost_result(records, chosen)
    assert result.verdict.confidence == "question_logprob" and "question_logprob" not in result.variants
    assert result.verdict.n_pairs + result.verdict.n_dropped == len(items)
    unchosen = pacost_records(model, benchmark, items[:2], rephrasings[:2], PacostSettings(max_new_tokens=8))
    assert "question_logprob_original" not in unchosen[0]  # on demand: measured only when chosen
