"""Every test jaxcontam gives today holds its level under its simulated null (experiments/stats/levels.py, small):
the count of rejections at p <= 0.05 is within scipy's exact binomial bound, and PaCoST's authors' test on a clean
model preferring the original wording (a null it does not claim) is far above it, so the check can fail."""

import json

import pytest
from scipy import stats as scipy_stats

from experiments.stats import levels as LEVELS

SMALL = {  # data sets per simulation here (the script's own counts: LEVELS.CASES)
    "pacost_permutation": 600,
    "pacost_permutation_binary": 600,
    "pacost_t": 600,
    "pacost_authors_biased": 40,
    "calibrated_reference": 150,
    "calibrated_fresh": 150,
    "exchangeability": 600,
    "contam_max_z": 60,
    "blind_baseline": 30,
    "constat": 20,
    "codec_sign": 600,
    "codec_sign_context_hurts": 40,
    "codec_calibrated": 300,
    "reference_log_ratio": 300,
}


def test_every_simulation_is_sized_here():
    assert set(SMALL) == {case.name for case in LEVELS.CASES}


@pytest.mark.parametrize("case", LEVELS.CASES, ids=lambda case: case.name)
def test_level_under_the_null(case):
    row = LEVELS.run_case(case, SMALL[case.name], seed=1)
    above = scipy_stats.binom.sf(row.rejected - 1, row.datasets, LEVELS.ALPHA)  # P(X >= rejected) at rate alpha
    assert row.pvalue_above_alpha == pytest.approx(above, rel=1e-9, abs=1e-300)
    if case.valid:
        assert above > 0.001, f"{case.test}: {row.rejected} of {row.datasets} null data sets rejected"
    else:
        assert above < 1e-6, f"{case.test}: expected far above its level, {row.rejected} of {row.datasets}"
    low, high = row.ci95
    assert low <= row.rate <= high


def test_the_table_is_generated_from_the_run():
    report = LEVELS.run(scale=0.002, names=("pacost_t", "exchangeability"))
    table = LEVELS.docs_table(report)
    assert [r["name"] for r in report["rows"]] == ["pacost_t", "exchangeability"]
    assert all(
        f"| {r['test']} | {r['null']} | {r['datasets']:,} | {r['rejected']:,} |" in table for r in report["rows"]
    )


def test_only_reruns_the_named_simulations_and_keeps_the_other_rows(tmp_path):
    """Each simulation is seeded by its name, so the re-run rows are the full run's; the others are the kept file's."""
    out, rerun = tmp_path / "levels.json", ("codec_sign", "pacost_t")
    LEVELS.main(["--scale", "0.002", "--out", str(out)])
    full = json.loads(out.read_text())
    out.write_text(json.dumps({**full, "rows": [{**row, "rejected": -1} for row in full["rows"]]}))
    LEVELS.main(["--scale", "0.002", "--out", str(out), "--only", *rerun])
    rows = json.loads(out.read_text())["rows"]
    assert [row["name"] for row in rows] == [row["name"] for row in full["rows"]]
    for row, before in zip(rows, full["rows"]):
        assert row["rejected"] == (before["rejected"] if row["name"] in rerun else -1)
    with pytest.raises(SystemExit, match="same --scale and --seed"):
        LEVELS.main(["--scale", "0.004", "--out", str(out), "--only", "codec_sign"])
