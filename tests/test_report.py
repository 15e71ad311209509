"""Report layer: a realistic three-run audit (real EPG curves, paired tests and sweep corrections) rendered to
PNGs and a self-contained report.html."""

import base64
import dataclasses
import json
import math
import subprocess
import sys
from html.parser import HTMLParser

import numpy as np
import pytest

from jaxcontam.detect.contam import ContamResult, ContamSettings, metric_verdict
from jaxcontam.report import write_report
from jaxcontam.report.formatting import interval, number, percent, value
from jaxcontam.report.html import RUN_COLUMNS, VERDICT_COLUMNS
from jaxcontam.report.summary_schema import AuditSummary
from jaxcontam.stats import EPGRow, adjust, minimum_detectable_effect, paired_test

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ALPHA = 0.05
N_ITEMS = 200
CONTAMINATED_MODEL = "runs/a/checkpoint-1000"
CLEAN_MODEL = "runs/b/checkpoint-1000"  # same basename as CONTAMINATED_MODEL
HOSTILE_MODEL = "org/<script>alert(1)</script>"
METRICS = ("token_match", "ngram_match", "token_extend", "longest_match")
PACOST_SETTINGS = {  # the settings a PaCoST entry records (`PacostResult.to_dict`)
    "preset": "jaxcontam",
    "template": "kadavath",
    "chat_template": "auto",
    "chat_used": False,
    "answers": "greedy",
    "correction": "sweep",
}


def synthetic_run(seed: int, planted_gain: float):
    """Half the items planted in the corpus; planted items score higher on every match metric and, by
    `planted_gain`, in accuracy and in confidence on the original wording. Eight confidences are missing."""
    rng = np.random.default_rng(seed)
    planted = np.arange(N_ITEMS) < N_ITEMS // 2
    longest = np.round(np.where(planted, rng.beta(6, 2, N_ITEMS), rng.beta(1, 8, N_ITEMS)), 2)
    scores = {m: np.round(np.clip(longest + rng.normal(0, 0.08 * k, N_ITEMS), 0, 1), 2) for k, m in enumerate(METRICS)}
    correct = (rng.random(N_ITEMS) < 0.2 + planted_gain * planted).astype(float)
    rephrased = rng.beta(4, 4, N_ITEMS)
    original = np.clip(rephrased + planted_gain * 0.2 * planted + rng.normal(0, 0.05, N_ITEMS), 0, 1)
    original[:8] = np.nan
    return planted, scores, correct, original, rephrased


def pacost_result(original, rephrased, confidence: str) -> dict:
    """A paired test's entry (`PairedVerdict.to_dict`), its verdict the raw p < alpha."""
    result = paired_test(original, rephrased, resamples=2000)
    ci = result.confidence_interval()
    mde = minimum_detectable_effect(result.n)
    return {
        "test": result.method,
        "confidence": confidence,
        "alternative": result.alternative,
        "status": "tested",
        "pvalue": result.pvalue,
        "n_pairs": result.n,
        "n_dropped": result.n_dropped,
        "dropped_reasons": dict(result.drop_reasons),
        "mean_difference": result.mean_difference,
        "effect_size": result.effect_size,
        "ci": [ci.low, ci.high],
        "contaminated": bool(result.pvalue < ALPHA),
        "power_note": f"with {result.n} pairs the minimum detectable effect at 80% power is d_z = {mde:.2g}",
    }


def audited_run(model: str, seed: int, planted_gain: float, with_ground_truth: bool):
    """(run dict, item rows) for one model on a synthetic benchmark with PaCoST and ConTAM."""
    planted, scores, correct, original, rephrased = synthetic_run(seed, planted_gain)
    pacost = PACOST_SETTINGS | pacost_result(original, rephrased, "p_true")
    pacost["variants"] = {
        "answer_logprob": pacost_result(np.log(original + 1e-3), np.log(rephrased + 1e-3), "answer_logprob")
    }
    metrics = {m: metric_verdict(scores[m], correct, ContamSettings(resamples=99)) for m in METRICS}
    run = {
        "model": model,
        "benchmark": "gsm8k",
        "split": "test",
        "n_items": N_ITEMS,
        "accuracy": {"acc": float(correct.mean()), "acc_norm": None},
        "pacost": pacost,
        "likelihood": {
            "mean_logprob": {"mean": -2.1, "median": -2.0},
            "zlib_ratio": {"mean": 0.8, "median": 0.79},
            "min_k": {"mean": -5.2, "median": -5.0},
            "min_k_plus_plus": {"mean": -0.4, "median": -0.3},
        },
        "contam": ContamResult("longest_match", metrics).to_dict(),
        "ground_truth": None,
    }
    if with_ground_truth:
        run["ground_truth"] = {
            "groups": {
                name: {
                    "n": int(mask.sum()),
                    "pacost_pvalue": paired_test(original[mask], rephrased[mask]).pvalue,
                    "mean_longest_match": float(scores["longest_match"][mask].mean()),
                    "accuracy": float(correct[mask].mean()),
                }
                for name, mask in (("contaminated", planted), ("clean", ~planted))
            },
            "auc": {},
        }
    items = [
        {
            "model": model,
            "benchmark": "gsm8k",
            "id": f"gsm8k-{i}",
            "pacost_conf_original": None if math.isnan(o) else float(o),
            "pacost_conf_rephrased": float(r),
            "pacost_kept": not math.isnan(o),
            "ground_truth_contaminated": bool(p) if with_ground_truth else None,
        }
        for i, (o, r, p) in enumerate(zip(original, rephrased, planted))
    ]
    return run, items


def hostile_run():
    """A run where PaCoST and ConTAM did not run, with NaN and infinite values and a model name with markup."""
    run = {
        "model": HOSTILE_MODEL,
        "benchmark": "arc<b>",
        "split": "test",
        "n_items": 50,
        "accuracy": {"acc": 0.42, "acc_norm": math.nan},
        "pacost": None,
        "likelihood": {
            "mean_logprob": {"mean": math.nan, "median": -math.inf},
            "min_k": {"mean": None, "median": None},
        },
        "contam": None,
        "ground_truth": None,
    }
    return run, [{"model": HOSTILE_MODEL, "benchmark": "arc<b>", "id": f"arc-{i}"} for i in range(50)]


def audit_summary():
    """summary.json and the item rows of a three-run sweep, round-tripped through JSON like the real files."""
    contaminated, contaminated_items = audited_run(CONTAMINATED_MODEL, 0, 0.4, with_ground_truth=True)
    clean, clean_items = audited_run(CLEAN_MODEL, 1, 0.0, with_ground_truth=False)
    hostile, hostile_items = hostile_run()
    tested = [contaminated, clean]
    pvalues = [run["pacost"]["pvalue"] for run in tested]
    holm, bh = adjust(pvalues, "holm", ALPHA), adjust(pvalues, "bh", ALPHA)
    for run, adjusted, reject in zip(tested, holm.pvalues, holm.reject):  # the sweep's decisions
        run["pacost"].update(correction="holm", pvalue_adjusted=float(adjusted), contaminated=bool(reject))
    summary = {
        "jaxcontam_version": "0.1.0",
        "alpha": ALPHA,
        "runs": [contaminated, hostile, clean],
        "sweep": {
            "labels": [f"{run['model']} | {run['benchmark']}" for run in tested],
            "pvalues": pvalues,
            "holm": {"adjusted": holm.pvalues.tolist(), "reject": holm.reject.tolist()},
            "bh": {"adjusted": bh.pvalues.tolist(), "reject": bh.reject.tolist()},
        },
    }
    return json.loads(json.dumps(summary)), contaminated_items + hostile_items + clean_items


class TableCells(HTMLParser):
    """The text of every <td>, by table (its class) and row; rows without a <td> are left out."""

    def __init__(self, page: str):
        super().__init__()
        self.tables: list[tuple[str, list[list[str]]]] = []
        self._cell: list[str] | None = None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append((dict(attrs).get("class") or "", []))
        elif tag == "tr":
            self.tables[-1][1].append([])
        elif tag == "td":
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "td":
            self.tables[-1][1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def rows(self, css_class: str | None = None) -> list[list[str]]:
        return [row for name, rows in self.tables if css_class in (None, name) for row in rows if row]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    summary, items = audit_summary()
    out_dir = tmp_path_factory.mktemp("report")
    path = write_report(AuditSummary.from_dict(summary), items, out_dir)
    return summary, out_dir, path.read_text(encoding="utf-8")


def test_every_plot_is_a_png(report):
    _, out_dir, _ = report
    files = sorted((out_dir / "plots").iterdir())
    # two runs with PaCoST and ConTAM (two plots each), none for the run without them, the sweep's p-values and
    # its model x benchmark heatmaps (three models)
    assert len(files) == 6
    assert {out_dir / "plots" / "sweep-pvalues.png", out_dir / "plots" / "sweep-heatmap.png"} <= set(files)
    for path in files:
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 10_000, path


def test_models_sharing_a_basename_get_distinct_files(report):
    _, out_dir, _ = report
    curves = sorted(p.name for p in (out_dir / "plots").glob("*-contam.png"))
    assert len(curves) == 2 and curves[0] != curves[1]
    assert all(name.startswith("checkpoint-1000-gsm8k-") for name in curves)


def test_page_is_self_contained(report):
    _, _, page = report
    assert "http://" not in page and "https://" not in page and "<link" not in page
    assert "<script" not in page.lower()
    sources = [chunk.split('"', 1)[0] for chunk in page.split(' src="')[1:]]
    assert len(sources) == 6
    for source in sources:
        assert source.startswith("data:image/png;base64,")
        assert base64.b64decode(source.split(",", 1)[1]).startswith(PNG_MAGIC)
    hrefs = [chunk.split('"', 1)[0] for chunk in page.split(' href="')[1:]]
    assert hrefs and all(href.startswith("#run-") for href in hrefs)


def test_markup_in_names_is_escaped(report):
    _, _, page = report
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "arc&lt;b&gt;" in page and "arc<b>" not in page


def run_rows(page: str) -> list[list[str]]:
    """The verdict table's rows grouped per run: a run's first row has every column, its other headline verdicts
    follow as rows of the verdict columns alone (the run's cells span them)."""
    runs: list[list[str]] = []
    for cells in TableCells(page).rows("verdict"):
        if len(cells) > len(VERDICT_COLUMNS) - len(RUN_COLUMNS):  # a run's first row: its own cells lead
            runs.append(list(cells))
        else:
            runs[-1] += cells
    return runs


def test_verdict_table_lists_every_run_with_each_headline_verdict(report):
    summary, _, page = report
    rows = run_rows(page)
    assert [row[0] for row in rows] == [run["model"] for run in summary["runs"]]
    contaminated, hostile, clean = rows
    assert "contaminated" in contaminated and any("LONGEST_MATCH" in cell for cell in contaminated)
    assert any("PaCoST" in cell and "uncalibrated" in cell for cell in contaminated)
    assert hostile[-1] == "no detector states a verdict on this run"
    assert "not detected" in clean


def test_missing_and_infinite_values_render_as_text(report):
    _, _, page = report
    cells = TableCells(page).rows()
    words = {word.strip("()[],") for row in cells for cell in row for word in cell.split()}
    assert not words & {"nan", "NaN", "inf", "-inf", "Infinity", "None"}
    hostile_row = run_rows(page)[1]
    assert "(norm n/a)" in hostile_row[3]
    assert "∞)" in page  # the one-sided PaCoST interval
    assert "−∞" in page  # the hostile run's median log-prob


def test_formatting_helpers():
    assert [number(x) for x in (None, math.nan, math.inf, -math.inf, 0.031234, 1.2e-5)] == [
        "n/a",
        "n/a",
        "∞",
        "−∞",
        "0.0312",
        "1.2e-05",
    ]
    assert percent(0.5) == "50%" and percent(1 / 3) == "33.3%" and percent(None) == "n/a"
    assert interval([0.02, math.inf]) == "[0.02, ∞)" and interval([-0.1, 0.3]) == "[-0.1, 0.3]"
    assert interval(None) == "n/a"
    assert [value(x) for x in (True, 200, "text", 0.5)] == ["yes", "200", "text", "0.5"]


def test_importing_the_report_package_does_not_import_matplotlib():
    code = "import sys, jaxcontam.report; print('matplotlib' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def untested_metric(threshold, curve: list[dict]) -> dict:
    """A ConTAM metric entry (`MetricVerdict.to_dict`) whose max-z test could not run."""
    selected = dict.fromkeys(("frac_contaminated", "epg", "epg_ci", "z", "accuracy_difference", "max_z_threshold"))
    return selected | {
        "threshold": threshold,
        "reason": "no threshold qualifies",
        "max_z": math.nan,
        "pvalue": math.nan,
        "significant": False,
        "n_resamples": 0,
        "status": "no test: too few items",
        "curve": curve,
    }


def test_degenerate_inputs_still_render(tmp_path):
    """A p-value of 0 and a missing one, a metric without a curve, NaN rows and a PaCoST run without kept pairs."""
    nan_row = {f.name: math.nan for f in dataclasses.fields(EPGRow)} | {"n_contaminated": 0, "n_clean": 0}
    pacost = PACOST_SETTINGS | {
        "test": "permutation",
        "confidence": "p_true",
        "alternative": "greater",
        "status": "no test: no pairs kept",
        "pvalue": math.nan,
        "n_pairs": 0,
        "n_dropped": 1,
        "dropped_reasons": {},
        "mean_difference": math.nan,
        "effect_size": math.nan,
        "ci": [math.nan, math.inf],
        "contaminated": False,
        "power_note": "no pairs kept: no test",
        "variants": {},
    }
    run = {
        "model": "m",
        "benchmark": "b",
        "n_items": 3,
        "accuracy": {"acc": None, "acc_norm": None},
        "pacost": pacost,
        "contam": {
            "metric": "longest_match",
            "alpha": ALPHA,
            "metrics": {
                "longest_match": untested_metric(None, [nan_row, {**nan_row, "threshold": 0.5, "epg": 0.1}]),
                "token_match": untested_metric(0.4, []),
            },
        },
    }
    items = [{"model": "m", "benchmark": "b", "id": "1", "pacost_conf_original": None, "pacost_kept": False}]
    sweep = {
        "labels": ["m | b", "n | b"],
        "pvalues": [0.0, math.nan],
        "holm": {"adjusted": [0.0, math.nan], "reject": [True, False]},
        "bh": {"adjusted": [0.0, math.nan], "reject": [True, False]},
    }
    page = write_report(
        AuditSummary.from_dict({"alpha": ALPHA, "runs": [run], "sweep": sweep}), items, tmp_path
    ).read_text(encoding="utf-8")
    assert page.count('src="data:image/png;base64,') == 3
    assert "[n/a, ∞)" in page
