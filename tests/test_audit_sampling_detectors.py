"""GradNorm, CDD and TS-Guessing in audits of the bundled example: from Python (`audit_benchmark`, against the
example's ground truth) and through `jaxcontam audit` (summary.json, items.parquet, console, report.html, and a
second run that reuses every stored chunk); and the level of the labelled Mann-Whitney test on their tied scores by
simulation under the null."""

import dataclasses
import json
import math

import numpy as np
import pyarrow.parquet as pq
import pytest

from helpers import run_cli, small_toml
from jaxcontam.audit.config import EXAMPLE_CONFIG, load_config
from jaxcontam.audit.inputs import load_audit_benchmark
from jaxcontam.detect.audit_core import AuditSettings, audit_benchmark
from jaxcontam.detect.cdd import CddSettings
from jaxcontam.detect.item_scores import score_summary
from jaxcontam.detect.json_values import json_ready
from jaxcontam.detect.registry import DETECTORS
from jaxcontam.detect.stage import AuditTarget
from jaxcontam.detect.ts_guessing import TsGuessingSettings

NEW = ("gradnorm", "cdd", "ts_guessing")
SMALL = {"cdd": CddSettings(samples=3, max_new_tokens=12), "ts_guessing": TsGuessingSettings(max_new_tokens=12)}
TABLES = "\n[gradnorm]\n[cdd]\nsamples = 3\nmax_new_tokens = 12\n[ts_guessing]\nmax_new_tokens = 12\n"


def example_target(name: str, limit: int) -> AuditTarget:
    entry = next(b for b in load_config(EXAMPLE_CONFIG).benchmarks if b.name == name)
    loaded = load_audit_benchmark(dataclasses.replace(entry, limit=limit))
    benchmark = loaded.benchmark
    assert loaded.truth is not None
    return AuditTarget(benchmark, [None] * len(benchmark), contaminated=[loaded.truth.get(i.id) for i in benchmark])


@pytest.fixture(scope="module")
def tiny():
    import jaxcontam

    return jaxcontam.load_model(str(EXAMPLE_CONFIG.parent / "model"))


def test_the_three_detectors_in_a_python_audit_of_the_bundled_example(tiny):
    """COPA (options: TS-Guessing asks); GSM8K's "not tested: no options" is checked through the command below."""
    target = example_target("copa", 8)
    audit = audit_benchmark(tiny, target, AuditSettings(detectors=NEW, detector_settings=SMALL))
    assert set(NEW) <= set(audit.results)
    labels = [t for t in target.contaminated or [] if t is not None]
    assert True in labels and False in labels  # both halves, so every score has an AUC
    gradnorm, cdd, ts = (audit.results[n] for n in NEW)
    assert gradnorm.gradnorm.auc is not None and 0 <= gradnorm.gradnorm.auc <= 1
    assert all(math.isfinite(r["gradnorm"]) and r["gradnorm"] > 0 for r in audit.rows)
    assert cdd.n_items == 8 and 0 <= cdd.flagged_share <= 1 and cdd.peakedness.auc is not None
    assert all(len(r["cdd_distances"]) == 3 for r in audit.rows)
    assert ts.reason is None and ts.n_asked + ts.n_skipped == 8 and ts.n_asked > 0
    assert [DETECTORS[n].headline(audit.results[n], 0.05) for n in NEW if DETECTORS[n].headline] == [None]
    for n in NEW:  # summary.json's entry reads back as the same result
        stage = DETECTORS[n]
        written = json.dumps(json_ready(stage.summary_entry(audit.results[n])), sort_keys=True)
        assert (
            json.dumps(json_ready(stage.summary_entry(stage.read_entry(json.loads(written)))), sort_keys=True)
            == written
        )


def test_the_three_detectors_through_jaxcontam_audit_and_a_resumed_run(tmp_path, capsys):
    config = small_toml(tmp_path, limit=4, chunk_size=4, exchangeability=False, extra=TABLES)
    code, printed = run_cli(["audit", "--config", config], capsys)
    assert code == 0, printed
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["settings"]["stages"] == ["pacost", "likelihood", *NEW]
    assert summary["settings"]["cdd"] == {"samples": 3, "max_new_tokens": 12}
    for run in summary["runs"]:
        assert run["gradnorm"]["gradnorm"]["mean"] > 0
        assert run["cdd"]["n_items"] == 4
        assert run["ts_guessing"]["reason"] == ("no options" if run["benchmark"] == "gsm8k" else None)
        ts_verdicts = [v for v in run["verdicts"] if v["detector"] == "ts_guessing"]
        if run["benchmark"] == "gsm8k":
            assert [(v["outcome"], v["contaminated"]) for v in ts_verdicts] == [("not tested", None)]
            assert ts_verdicts[0]["reason"].startswith("no options")
        else:
            assert ts_verdicts == []
    rows = pq.read_table(tmp_path / "out" / "items.parquet").to_pandas()
    assert {"gradnorm", "cdd_peakedness", "cdd_flagged", "cdd_distances", "ts_exact_match", "ts_guess"} <= set(rows)
    console = [line for line in printed.splitlines() if " items)  acc " in line]
    assert len(console) == 2 and all("gradnorm mean=" in line and "cdd flagged=" in line for line in console)
    assert any("ts-guessing not tested: no options" in line for line in console)
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    for title in ("GradNorm (mimir)", "CDD (output distribution)", "TS-Guessing (masked option)"):
        assert page.count(f"<h3>{title}</h3>") == 2
    first = summary
    code, printed = run_cli(["audit", "--config", config], capsys)
    assert code == 0, printed
    chunks = [line for line in printed.splitlines() if ": chunk " in line]
    assert chunks and all("reused" in line for line in chunks)
    again = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert [{n: r[n] for n in NEW} for r in again["runs"]] == [{n: r[n] for n in NEW} for r in first["runs"]]


def level(draw_scores, higher_means_seen: bool, n: int = 24, simulations: int = 2000, alpha: float = 0.05):
    """The share of simulated benchmarks whose labelled one-sided Mann-Whitney p is below alpha when the labels are
    independent of the scores (half the items contaminated, drawn at random)."""
    rng = np.random.default_rng(0)
    rejected = 0
    for _ in range(simulations):
        scores = draw_scores(rng, n)
        labels = rng.permutation([True] * (n // 2) + [False] * (n - n // 2))
        rows = [{"s": float(s), "ground_truth_contaminated": bool(t)} for s, t in zip(scores, labels)]
        rejected += score_summary(rows, "s", higher_means_seen).pvalue < alpha
    return rejected / simulations


@pytest.mark.parametrize(
    ("scores", "higher"),
    [
        (lambda rng, n: rng.lognormal(0, 1, n), False),  # GradNorm: continuous, lower = seen
        (lambda rng, n: rng.binomial(20, 0.1, n) / 20, True),  # CDD: peakedness in steps of 1/20, many ties
        (lambda rng, n: rng.binomial(1, 0.2, n), True),  # TS-Guessing: exact match, 0 or 1
    ],
    ids=["gradnorm", "cdd", "ts_guessing"],
)
def test_the_labelled_test_keeps_its_level_under_the_null(scores, higher):
    """At most alpha plus three standard errors of 2000 simulations (0.05 + 0.015)."""
    assert level(scores, higher) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 2000)
