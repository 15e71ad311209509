"""False-positive rates under the null, and power under a planted effect, of the tests of the reference log-ratio and
CoDeC (docs/methods.md, "Reference-model log-likelihood ratio" and "CoDeC"), through the functions the audit calls
on per-item rows (`jaxcontam.detect.reference_log_ratio.reference_log_ratio_result`, `jaxcontam.detect.codec.
codec_result`), 30 or 40 items per benchmark, one-sided at alpha = 0.05; the nulls are `jaxcontam.stats.simulation`'s
(experiments/stats/levels.py draws the same at 34 items for the level table):

- reference log-ratio, calibrated test: two models that differ in fluency by 0.4 nats on every text, rephrasings
  that both find less likely by a per-item amount, symmetric noise; planted: +0.15 nats on the audited originals;
- CoDeC, the authors' score under the sign test: per-item deltas symmetric about 0 with ties (context helps as often
  as it hurts); planted: deltas shifted by -0.2 (spread 0.3);
- CoDeC, calibrated against a reference: context hurts both models alike (-1 nat per item on average), symmetric
  noise; the authors' sign test is run on the same null; planted: the audited delta 0.25 lower.

    python -m experiments.stats.reference_detectors_level [--runs 400]

Prints one JSON line (counts of p < 0.05 and the 99.9% binomial bound of the null counts).
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import scipy.stats

from jaxcontam.detect.codec import REFERENCE_SCORE, codec_result
from jaxcontam.detect.codec import SCORE as DELTA
from jaxcontam.detect.reference_log_ratio import MODELS, SIDES, reference_log_ratio_result
from jaxcontam.detect.reference_log_ratio import SCORE as RATIO
from jaxcontam.stats.multiple import DEFAULT_ALPHA
from jaxcontam.stats.simulation import context_deltas, context_deltas_two_models, log_ratio_sides

ALPHA = DEFAULT_ALPHA  # the audit's default level


def ratio_rows(rng, n: int, effect: float = 0.0) -> list[dict]:
    sides = log_ratio_sides(rng, n, effect)
    names = [f"{RATIO}_{model}_{side}" for model in MODELS for side in SIDES]
    return [
        {RATIO: values[0] - values[2], **dict(zip(names, values)), "ground_truth_contaminated": None}
        for values in zip(*sides)
    ]


def delta_rows(deltas, reference=None) -> list[dict]:
    reference = np.full(len(deltas), np.nan) if reference is None else reference
    return [{DELTA: d, REFERENCE_SCORE: r, "ground_truth_contaminated": None} for d, r in zip(deltas, reference)]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=400)
    args = parser.parse_args(argv)
    runs, rng = args.runs, np.random.default_rng(0)

    def rate(pvalues) -> int:
        return int(sum(p < ALPHA for p in pvalues))

    ratio_null = rate(reference_log_ratio_result(ratio_rows(rng, 30), "ref", s, 199).pvalue for s in range(runs))
    ratio_power = rate(reference_log_ratio_result(ratio_rows(rng, 30, 0.15), "ref", s, 199).pvalue for s in range(100))
    sign_null = rate(codec_result(delta_rows(context_deltas(rng, 40))).pvalue for _ in range(runs))
    sign_power = rate(codec_result(delta_rows(rng.normal(-0.2, 0.3, 40))).pvalue for _ in range(100))
    calibrated, authors = [], []
    for seed in range(runs):
        result = codec_result(delta_rows(*context_deltas_two_models(rng, 30)), "ref", seed, 199)
        assert result.calibrated is not None
        calibrated.append(result.calibrated.pvalue)
        authors.append(result.pvalue)
    planted = []
    for seed in range(100):
        result = codec_result(delta_rows(*context_deltas_two_models(rng, 30, 0.25)), "ref", seed, 199)
        assert result.calibrated is not None
        planted.append(result.calibrated.pvalue)
    report = {
        "runs": runs,
        "null_bound_999": int(scipy.stats.binom.ppf(0.999, runs, ALPHA)),
        "reference_log_ratio": {"null": ratio_null, "planted_of_100": ratio_power},
        "codec_sign_test": {"null": sign_null, "planted_of_100": sign_power},
        "codec_calibrated": {
            "null": rate(calibrated),
            "authors_sign_test_on_that_null": rate(authors),
            "planted_of_100": rate(planted),
        },
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
