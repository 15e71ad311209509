"""ConStat in a real audit of a family of tiny models: the bundled model and copies of it with its weights perturbed
by noise of growing size (a family of declining ability) audited in one run of `jaxcontam audit`; the copies are
named as ConStat's reference models in the [constat] table. The audited model's ConStat entry in summary.json is
`stats.constat.constat_test` on the correctness items.parquet holds; its verdict is in the run's verdicts, on the
console and in report.html; summary.json reads back to the same content."""

import json
import shutil

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from safetensors.numpy import load_file

from jaxcontam.cli import cli
from jaxcontam.detect.json_values import json_ready
from jaxcontam.report.summary_schema import read_summary
from jaxcontam.stats.constat import constat_test
from jaxcontam.training import save_hf_model

BUNDLED = __import__("pathlib").Path(__file__).resolve().parents[1] / "jaxcontam" / "examples" / "tiny_contaminated"
NOISE = (0.2, 0.4, 0.6, 0.8, 1.0)  # each reference copy's noise, relative to each tensor's own spread
ITEMS = 40
RESAMPLES = 200


def perturbed_copy(folder, scale: float, seed: int) -> None:
    """The bundled model with N(0, (scale * std of the tensor)^2) noise added to every weight."""
    tensors = load_file(str(BUNDLED / "model" / "model.safetensors"))
    rng = np.random.default_rng(seed)
    noisy = {name: t + rng.normal(0, scale * float(t.std()), t.shape).astype(np.float32) for name, t in tensors.items()}
    save_hf_model(folder, json.loads((BUNDLED / "model" / "config.json").read_text()), noisy)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(BUNDLED / "model" / name, folder / name)


@pytest.fixture(scope="module")
def audit(tmp_path_factory):
    root = tmp_path_factory.mktemp("constat")
    names = [f"noise-{scale}" for scale in NOISE]
    for seed, (name, scale) in enumerate(zip(names, NOISE)):
        perturbed_copy(root / name, scale, seed)
    lines = [f'out = "{root / "out"}"', "[[model]]", f'path = "{BUNDLED / "model"}"', 'name = "bundled"']
    for name in names:
        lines += ["[[model]]", f'path = "{root / name}"', f'name = "{name}"']
    lines += [
        "[[benchmark]]",
        'name = "copa"',
        'split = "test"',
        f"limit = {ITEMS}",
        f'path = "{BUNDLED / "copa_test_sample.jsonl"}"',
        f'paraphrases = "{BUNDLED / "copa_rephrasings.jsonl"}"',
        "[pacost]",
        'confidence = "answer_logprob"',
        "[constat]",
        f"reference_models = {json.dumps(names)}",
        f"resamples = {RESAMPLES}",
    ]
    (root / "audit.toml").write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(cli, ["audit", "--config", str(root / "audit.toml")])
    assert result.exit_code in (0, 4), result.output
    return root / "out", result.output


def test_the_audited_models_entry_is_constat_test_on_its_items(audit):
    out, _ = audit
    summary = read_summary(out)
    result = summary.family["constat"]
    assert result.reference_models == tuple(f"noise-{scale}" for scale in NOISE)
    (entry,) = result.entries  # the reference models are not tested
    assert (entry.model, entry.benchmark, entry.split, entry.n_models) == ("bundled", "copa", "test", 5)
    items = pd.read_parquet(out / "items.parquet")
    kept = items.groupby("id")["correct_rephrased"].apply(lambda v: v.notna().all())
    kept_ids = [i for i in items[items.model == "bundled"]["id"] if kept[i]]
    assert entry.n == len(kept_ids) > 20

    def side(model: str, column: str) -> np.ndarray:
        rows = items[items.model == model].set_index("id")
        return rows.loc[kept_ids, column].to_numpy(float)

    expected = constat_test(
        side("bundled", "correct_original"),
        side("bundled", "correct_rephrased"),
        [side(name, "correct_original") for name in result.reference_models],
        [side(name, "correct_rephrased") for name in result.reference_models],
        resamples=RESAMPLES,
        seed=0,
        chance=(0.5, 0.5),  # COPA: two options
    )
    assert entry.status.ran and entry.chance == 0.5
    assert (entry.statistic, entry.pvalue, entry.predicted) == pytest.approx(
        (expected.statistic, expected.pvalue, expected.predicted), abs=1e-12
    )
    interval = expected.confidence_interval(0.95)
    assert entry.ci95 == pytest.approx((interval.low, interval.high), abs=1e-12)
    bundled = next(run for run in summary.runs if run.model == "bundled")
    verdict = next(v for v in bundled.verdicts if v.detector == "constat")
    assert verdict.pvalue == entry.pvalue and verdict.contaminated == (entry.pvalue < summary.alpha)
    assert verdict.correction == "none" and not verdict.swept and verdict.pvalue_adjusted is None
    for run in summary.runs:
        if run.model != "bundled":
            assert all(v.detector != "constat" for v in run.verdicts)  # a reference model gets no ConStat verdict
    assert len(summary.sweep.labels) == 6 and "ConStat" not in " ".join(summary.sweep.tests)  # PaCoST's family alone


def test_it_shows_on_the_console_and_in_the_report_and_reads_back(audit):
    out, console = audit
    assert "ConStat (5 reference models: noise-0.2, noise-0.4, noise-0.6, noise-0.8, noise-1.0" in console
    line = next(line for line in console.splitlines() if line.startswith("  bundled | copa:test  delta="))
    assert "predicted" in line and ("CONTAMINATED" in line or "not detected" in line)
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<h2>ConStat across the models</h2>" in page and "predicted original accuracy" in page
    assert page.count("ConStat: original vs rephrased accuracy against the reference models") == 1  # verdict table
    text = (out / "summary.json").read_text(encoding="utf-8")
    assert json.dumps(json_ready(read_summary(out).to_dict()), indent=2) + "\n" == text
