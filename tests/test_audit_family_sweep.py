"""A sweep over two sizes of one family: one audit config with two [[model]] entries runs both, each with its own
runs in summary.json, and the report adds the model x benchmark table and heatmaps."""

import json
import shutil
from html.parser import HTMLParser
from types import SimpleNamespace

import pytest

from jaxcontam.audit.config import load_config
from jaxcontam.audit.run import run_audit
from jaxcontam.detect.benchmark_results import Accuracy
from jaxcontam.training import init_hf_tensors, save_hf_model

BUNDLED = __import__("pathlib").Path(__file__).resolve().parents[1] / "jaxcontam" / "examples" / "tiny_contaminated"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class Cells(HTMLParser):
    def __init__(self, page: str):
        super().__init__()
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag == "td":
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self.rows[-1].append(" ".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    large = json.loads((BUNDLED / "model" / "config.json").read_text())
    small = {**large, "hidden_size": 64, "intermediate_size": 192, "num_hidden_layers": 2}
    shutil.copytree(BUNDLED / "model", root / "llama-4x128")
    save_hf_model(root / "llama-2x64", small, init_hf_tensors(small, seed=0))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(BUNDLED / "model" / name, root / "llama-2x64" / name)
    lines = [f'out = "{root / "out"}"']
    for name in ("llama-4x128", "llama-2x64"):
        lines += ["[[model]]", f'path = "{root / name}"', f'name = "{name}"']
    for name in ("gsm8k", "copa"):
        split = "test"
        lines += [
            "[[benchmark]]",
            f'name = "{name}"',
            f'split = "{split}"',
            "limit = 16",
            f'path = "{BUNDLED / f"{name}_test_sample.jsonl"}"',
            f'paraphrases = "{BUNDLED / f"{name}_rephrasings.jsonl"}"',
        ]
    lines += [
        "[corpus]",
        f'paths = ["{BUNDLED / "corpus.jsonl.gz"}"]',
        "[pacost]",
        'confidence = "answer_logprob"',
        "max_new_tokens = 8",
    ]
    (root / "audit.toml").write_text("\n".join(lines) + "\n")
    summary = run_audit(load_config(root / "audit.toml"))
    return summary, root / "out"


def test_each_model_runs_on_each_benchmark(sweep):
    summary, _ = sweep
    assert sorted((r.model, r.benchmark) for r in summary.runs) == sorted(
        (m, b) for m in ("llama-4x128", "llama-2x64") for b in ("gsm8k", "copa")
    )
    assert len(summary.sweep.labels) == 4  # PaCoST's p-values adjusted across both models


def test_the_report_shows_the_models_by_benchmarks_table_and_heatmap(sweep):
    summary, out = sweep
    heatmap = out / "plots" / "sweep-heatmap.png"
    assert heatmap.read_bytes().startswith(PNG_MAGIC)
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "Models x benchmarks" in page
    rows = {row[0]: row[1:] for row in Cells(page).rows if row and row[0] in ("llama-4x128", "llama-2x64")}
    assert set(rows) == {"llama-4x128", "llama-2x64"}
    for run in summary.runs:
        column = ["gsm8k", "copa"].index(run.benchmark)
        accuracy = run.accuracy.acc
        assert f"acc {accuracy:.3g}" in rows[run.model][column]


def test_one_model_has_no_sweep_view(tmp_path):
    from jaxcontam.report import plots

    class Run:
        def __init__(self, benchmark):
            self.model, self.benchmark = "m", benchmark
            self.pacost = SimpleNamespace(headline_pvalue=0.2)
            self.contam = SimpleNamespace(headline=SimpleNamespace(epg=0.1))
            self.accuracy = Accuracy(0.5, None)

        def verdict_of(self, detector):
            return None  # no sweep yet

    models, benchmarks, grids = plots.sweep_grid([Run("a"), Run("b")])
    assert models == ["m"] and benchmarks == ["a", "b"]
    assert grids["pacost_p"] == [[0.2, 0.2]] and grids["epg"] == [[0.1, 0.1]] and grids["accuracy"] == [[0.5, 0.5]]
