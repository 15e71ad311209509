"""The false-positive rate of every test jaxcontam gives today, by simulation under its null (issue 62: level first).

One seeded simulation per test, each drawing null data sets shaped like the audit's inputs and counting how often the
test rejects at p <= alpha (0.05); the rate's 95% Clopper-Pearson interval and the exact binomial p-value of
"rate <= alpha" (`jaxcontam.stats.intervals`) beside it. The nulls (every data set independent):

- PaCoST's paired test (the `jaxcontam` preset's sign-flip permutation test, the `paper` preset's paired t): 34
  exchangeable P(True)-shaped pairs (`jaxcontam.stats.simulation.ptrue_pairs`, the "confident" and "binary"
  shapes of experiments/stats/README.md), PaCoST's own null;
- the same authors' test on a clean model that prefers the original wording (a per-item rephrasing bias, as on the
  control arms of experiments/real_contamination): not its null, so it is shown failing, which is what the
  calibrated test is for;
- the calibrated test (`reference_test`, design a): the audited and a reference model, both clean, sharing the
  items' rephrasing bias (`simulation.biased_clean_models`); design b (`fresh_items_test`): fresh items from the
  same biased clean model;
- exchangeability (Oren et al.'s t over chunks): each chunk's canonical and permuted orders' log-likelihoods drawn
  alike (Gumbel noise around the chunk's own level);
- ConTAM's EPG (`max_z_test`): benchmarks whose correctness is independent of the match scores
  (`simulation.epg_benchmark`, 500 items, 50-90% zero scores, 2 decimals);
- the blind baseline (`blind_baseline`'s permutation test): two 34-item sets of texts drawn from one word
  distribution (`simulation.word_distribution`, `alike_texts`, as experiments/stats/blind_coverage.py draws them);
- ConStat (`constat_test`'s bootstrap p-value): the audited model one more member of its family (the relation of
  original to reference accuracy the same for every model: `simulation.constat_family`, 6 reference models);
- CoDeC's sign test (`detect.codec.codec_result`, model alone): deltas symmetric about 0 with ties
  (`simulation.context_deltas`), the paper's reading of unseen data; beside it, the same test on a clean model that
  context hurts on most items (deltas centred at -0.2), a null it does not claim, shown as the contrast the
  calibrated test answers;
- CoDeC calibrated (`codec_result` with a reference model's deltas): two clean models sharing each item's effect of
  context (`simulation.context_deltas_two_models`);
- the reference log-ratio's calibrated test (`detect.reference_log_ratio.reference_log_ratio_result`): two clean
  models differing in fluency and sharing each item's rephrasing penalty (`simulation.log_ratio_sides`).
  These three are called through the audit's own row-level functions, so what is simulated is what an audit runs.

    python -m experiments.stats.levels [--scale 1.0] [--seed 0] [--out experiments/stats/levels.json] [--only NAME ...]

`--scale` multiplies every simulation's number of data sets (1.0: about 4 minutes on the 2 shared cores, 4: about
15; the committed levels.json is scale 4). Writes one JSON file; docs/methods.md's table (`<!-- generated:stats-levels
-->`) is `docs_table` of it. `--only` re-runs the named simulations and keeps the other rows of `--out` (each simulation
is seeded by the seed and its own name, so the file is the one a full run writes). tests/test_stats_levels.py runs
each simulation small and checks every valid test against an exact binomial bound.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import sys
import time
from collections.abc import Callable

import numpy as np

from jaxcontam.detect.codec import REFERENCE_SCORE as CODEC_REFERENCE
from jaxcontam.detect.codec import SCORE as CODEC
from jaxcontam.detect.codec import codec_result
from jaxcontam.detect.reference_log_ratio import MODELS, SIDES, reference_log_ratio_result
from jaxcontam.detect.reference_log_ratio import SCORE as LOG_RATIO
from jaxcontam.stats.batched import paired_pvalues
from jaxcontam.stats.blind import blind_baseline
from jaxcontam.stats.calibrated import fresh_items_test, reference_test, uncalibrated_test
from jaxcontam.stats.constat import constat_test
from jaxcontam.stats.epg import max_z_test
from jaxcontam.stats.exchangeability import exchangeability_statistic
from jaxcontam.stats.intervals import binomial_tail, clopper_pearson
from jaxcontam.stats.multiple import DEFAULT_ALPHA
from jaxcontam.stats.simulation import (
    SHAPES,
    alike_texts,
    biased_clean_models,
    constat_family,
    context_deltas,
    context_deltas_two_models,
    epg_benchmark,
    log_ratio_sides,
    ptrue_pairs,
    word_distribution,
)

HERE = pathlib.Path(__file__).resolve().parent
ALPHA = DEFAULT_ALPHA  # the audit's default level
ITEMS = 34  # a half of round four: the item count one PaCoST verdict of experiments/real_contamination tests
RESAMPLES = 999  # Monte Carlo resamples of the permutation tests (alpha (R + 1) whole: the Monte Carlo test is exact)

PValues = Callable[[np.random.Generator, int], np.ndarray]  # (rng, data sets) -> one p-value per data set


@dataclasses.dataclass(frozen=True)
class NullCase:
    """One test under one null: `pvalues` draws that many null data sets and tests each; `valid`: the test claims
    its level under this null (False: a null it is known to fail, shown as the contrast); `datasets`: at scale 1."""

    name: str
    test: str
    null: str
    pvalues: PValues
    datasets: int
    valid: bool = True


@dataclasses.dataclass(frozen=True)
class LevelRow:
    name: str
    test: str
    null: str
    valid: bool
    datasets: int
    rejected: int
    rate: float
    ci95: tuple[float, float]
    pvalue_above_alpha: float  # exact binomial p of "rate <= alpha"
    seconds: float


def _paired(method: str, shape: str) -> PValues:
    def pvalues(rng: np.random.Generator, datasets: int) -> np.ndarray:
        original, rephrased = ptrue_pairs(SHAPES[shape], ITEMS, datasets, rng)
        seed = int(rng.integers(2**31))
        return paired_pvalues(original - rephrased, method, "greater", resamples=RESAMPLES, seed=seed)[1]

    return pvalues


def _each(test: Callable[[np.random.Generator], float]) -> PValues:
    return lambda rng, datasets: np.array([test(rng) for _ in range(datasets)])


def _authors_biased(rng: np.random.Generator) -> float:
    (original, rephrased), _ = biased_clean_models(rng, ITEMS)
    return uncalibrated_test(original, rephrased, resamples=RESAMPLES, seed=int(rng.integers(2**31))).pvalue


def _reference(rng: np.random.Generator) -> float:
    (audited_o, audited_r), (reference_o, reference_r) = biased_clean_models(rng, ITEMS)
    seed = int(rng.integers(2**31))
    return reference_test(audited_o, audited_r, reference_o, reference_r, resamples=RESAMPLES, seed=seed).pvalue


def _fresh(rng: np.random.Generator) -> float:
    (original, rephrased), _ = biased_clean_models(rng, ITEMS)
    (fresh_o, fresh_r), _ = biased_clean_models(rng, ITEMS)
    return fresh_items_test(
        original, rephrased, fresh_o, fresh_r, resamples=RESAMPLES, seed=int(rng.integers(2**31))
    ).pvalue


def _exchangeability(rng: np.random.Generator, datasets: int) -> np.ndarray:
    chunks, permutations = 10, 25
    level = rng.normal(-300.0, 30.0, (datasets, chunks, 1))
    orders = level + rng.gumbel(0.0, 2.0, (datasets, chunks, permutations + 1))
    return np.array([exchangeability_statistic(o[:, 0], o[:, 1:]).pvalue for o in orders])


def _epg(rng: np.random.Generator) -> float:
    scores, correct = epg_benchmark(500, rng, accuracy=rng.uniform(0.2, 0.8), zero_share=rng.uniform(0.5, 0.9))
    return max_z_test(scores, correct, resamples=99, seed=int(rng.integers(2**31))).pvalue


def _blind(rng: np.random.Generator) -> float:
    vocabulary, p = word_distribution(rng)
    first, second = alike_texts(rng, vocabulary, p, ITEMS), alike_texts(rng, vocabulary, p, ITEMS)
    return blind_baseline(first, second, seed=int(rng.integers(2**31)), permutations=99).pvalue


def _constat(rng: np.random.Generator) -> float:
    original, reference = constat_family(rng, 6, 100)
    seed = int(rng.integers(2**31))
    return constat_test(original[0], reference[0], original[1:], reference[1:], resamples=100, seed=seed).pvalue


def _codec_sign(centre: float) -> Callable[[np.random.Generator], float]:
    def pvalue(rng: np.random.Generator) -> float:
        deltas = context_deltas(rng, ITEMS, centre)
        return codec_result([{CODEC: float(d), "ground_truth_contaminated": None} for d in deltas]).pvalue

    return pvalue


def _codec_calibrated(rng: np.random.Generator) -> float:
    audited, reference = context_deltas_two_models(rng, ITEMS)
    rows = [{CODEC: a, CODEC_REFERENCE: r, "ground_truth_contaminated": None} for a, r in zip(audited, reference)]
    calibrated = codec_result(rows, "reference", int(rng.integers(2**31)), RESAMPLES).calibrated
    assert calibrated is not None
    return calibrated.pvalue


def _log_ratio(rng: np.random.Generator) -> float:
    sides = dict(zip([(m, s) for m in MODELS for s in SIDES], log_ratio_sides(rng, ITEMS)))
    rows = [
        {
            LOG_RATIO: float(sides["audited", "original"][i] - sides["reference", "original"][i]),
            **{f"{LOG_RATIO}_{m}_{s}": float(values[i]) for (m, s), values in sides.items()},
            "ground_truth_contaminated": None,
        }
        for i in range(ITEMS)
    ]
    return reference_log_ratio_result(rows, "reference", int(rng.integers(2**31)), RESAMPLES).pvalue


CASES = (
    NullCase(
        "pacost_permutation",
        "PaCoST, sign-flip permutation (jaxcontam preset)",
        "exchangeable pairs, P(True) confident shape",
        _paired("permutation", "confident"),
        4000,
    ),
    NullCase(
        "pacost_permutation_binary",
        "PaCoST, sign-flip permutation (jaxcontam preset)",
        "exchangeable pairs, 0/1 confidences (binary shape)",
        _paired("permutation", "binary"),
        4000,
    ),
    NullCase(
        "pacost_t",
        "PaCoST, paired t (paper preset)",
        "exchangeable pairs, P(True) confident shape",
        _paired("t", "confident"),
        4000,
    ),
    NullCase(
        "pacost_authors_biased",
        "PaCoST, the authors' test (sign-flip)",
        "a clean model preferring the original wording (rephrasing bias)",
        _each(_authors_biased),
        400,
        valid=False,
    ),
    NullCase(
        "calibrated_reference",
        "calibrated PaCoST, reference model (design a)",
        "audited and reference models clean, sharing the rephrasing bias",
        _each(_reference),
        4000,
    ),
    NullCase(
        "calibrated_fresh",
        "calibrated PaCoST, fresh items (design b)",
        "a clean model with the rephrasing bias, fresh items alike",
        _each(_fresh),
        4000,
    ),
    NullCase(
        "exchangeability",
        "exchangeability (Oren et al.), t over 10 chunks",
        "canonical and 25 permuted orders alike (Gumbel noise)",
        _exchangeability,
        4000,
    ),
    NullCase(
        "contam_max_z",
        "ConTAM EPG, max-z permutation test (99)",
        "correctness independent of match scores, 500 items, 50-90% zeros",
        _each(_epg),
        2000,
    ),
    NullCase(
        "blind_baseline",
        "blind baseline, permutation test (99)",
        "two 34-item sets from one word distribution",
        _each(_blind),
        200,
    ),
    NullCase(
        "constat",
        "ConStat, bootstrap p-value (100 replicates)",
        "the audited model on its family's relation, 6 reference models, 100 items",
        _each(_constat),
        200,
    ),
    NullCase(
        "codec_sign",
        "CoDeC, exact sign test (model alone)",
        "deltas symmetric about 0 (context helps as often as it hurts), ties",
        _each(_codec_sign(0.0)),
        4000,
    ),
    NullCase(
        "codec_sign_context_hurts",
        "CoDeC, exact sign test (model alone)",
        "a clean model that context hurts on most items (deltas centred at -0.2)",
        _each(_codec_sign(-0.2)),
        400,
        valid=False,
    ),
    NullCase(
        "codec_calibrated",
        "CoDeC calibrated, sign-flip permutation against a reference model",
        "two clean models sharing each item's effect of context (it hurts both)",
        _each(_codec_calibrated),
        4000,
    ),
    NullCase(
        "reference_log_ratio",
        "reference log-ratio, sign-flip permutation against a reference model",
        "two clean models 0.4 nats apart in fluency, sharing each item's rephrasing penalty",
        _each(_log_ratio),
        4000,
    ),
)


def run_case(case: NullCase, datasets: int, seed: int) -> LevelRow:
    """`datasets` null data sets of `case`, seeded by (seed, the case's name)."""
    rng = np.random.default_rng([seed, *case.name.encode()])
    start = time.perf_counter()
    pvalues = np.asarray(case.pvalues(rng, datasets), dtype=np.float64)
    seconds = time.perf_counter() - start
    if pvalues.shape != (datasets,) or not np.all(np.isfinite(pvalues)):
        raise SystemExit(f"{case.name}: expected {datasets} finite p-values, got {pvalues.shape}")
    rejected = int(np.count_nonzero(pvalues <= ALPHA))
    interval = clopper_pearson(rejected, datasets, 0.95)
    return LevelRow(
        case.name,
        case.test,
        case.null,
        case.valid,
        datasets,
        rejected,
        rejected / datasets,
        (interval.low, interval.high),
        binomial_tail(rejected, datasets, ALPHA),
        round(seconds, 2),
    )


def run(scale: float = 1.0, seed: int = 0, names: tuple[str, ...] | None = None) -> dict:
    rows = [
        dataclasses.asdict(run_case(case, max(1, round(case.datasets * scale)), seed))
        for case in CASES
        if names is None or case.name in names
    ]
    return {"alpha": ALPHA, "seed": seed, "scale": scale, "items": ITEMS, "rows": rows}


def merged(kept: dict, rerun: dict) -> dict:
    """`kept`'s rows with `rerun`'s in their place, in CASES' order; refused when the two ran at another scale or
    seed (their rows would not be one run's)."""
    if (kept["scale"], kept["seed"]) != (rerun["scale"], rerun["seed"]):
        ran = f"scale {kept['scale']:g}, seed {kept['seed']}"
        raise SystemExit(f"--only: the kept file ran at {ran}; give the same --scale and --seed")
    rows = {row["name"]: row for row in kept["rows"]} | {row["name"]: row for row in rerun["rows"]}
    return {**rerun, "rows": [rows[case.name] for case in CASES if case.name in rows]}


def docs_table(report: dict) -> str:
    """docs/methods.md's table: per test and null, the rejection rate at p <= alpha with its 95% CI and the exact
    binomial p-value of "rate <= alpha" (small: the test exceeds its level)."""
    lines = [
        f"| test | null simulated | data sets | rejected at p <= {report['alpha']:g} | rate [95% CI] | "
        "p of 'rate <= alpha' | claims its level here |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in report["rows"]:
        low, high = row["ci95"]
        lines.append(
            f"| {row['test']} | {row['null']} | {row['datasets']:,} | {row['rejected']:,} | {row['rate']:.3f} "
            f"[{low:.3f}, {high:.3f}] | {row['pvalue_above_alpha']:.2g} | {'yes' if row['valid'] else 'no'} |"
        )
    return (
        "\n".join(lines)
        + f"\n\n`python -m experiments.stats.levels --scale {report['scale']:g} --seed {report['seed']}`.\n"
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=pathlib.Path, default=HERE / "levels.json")
    parser.add_argument("--only", nargs="+", choices=[case.name for case in CASES], help="re-run these, keep the rest")
    args = parser.parse_args(argv)
    report = run(args.scale, args.seed, None if args.only is None else tuple(args.only))
    if args.only is not None:
        report = merged(json.loads(args.out.read_text(encoding="utf-8")), report)
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    sys.stdout.write(docs_table(report))


if __name__ == "__main__":
    main()
