"""How often the blind baseline's interval holds 1/2 when the two sets are drawn alike (docs/methods.md, "The blind
baseline"): the inverted permutation interval of `jaxcontam.stats.blind.blind_baseline` against a percentile
bootstrap of the fixed out-of-fold scores (`jaxcontam.stats.auc`), on pairs of 34-item sets of synthetic texts drawn
from one word distribution (200 words, 5-29 words per text).

    python -m experiments.stats.blind_coverage [--pairs 100] [--permutations 199]

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from jaxcontam.stats.auc import auc
from jaxcontam.stats.blind import blind_baseline, out_of_fold_log_odds
from jaxcontam.stats.simulation import alike_texts, word_distribution


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--permutations", type=int, default=199)
    parser.add_argument("--items", type=int, default=34)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    vocabulary, p = word_distribution(rng)

    def texts() -> list[str]:
        return alike_texts(rng, vocabulary, p, args.items)

    permutation, bootstrap, statistics, rejected = [], [], [], []
    for seed in range(args.pairs):
        first, second = texts(), texts()
        result = blind_baseline(first, second, seed=seed, permutations=args.permutations)
        interval = result.confidence_interval(0.95)
        permutation.append(interval.low <= 0.5 <= interval.high)
        statistics.append(result.statistic)
        rejected.append(result.pvalue <= 0.05)
        scores = out_of_fold_log_odds(first, second, seed=seed)
        fixed = auc(scores, np.arange(len(scores)) < len(first), resamples=1000, seed=seed).confidence_interval(0.95)
        bootstrap.append(fixed.low <= 0.5 <= fixed.high)
    record = {
        "pairs": args.pairs,
        "items": args.items,
        "permutations": args.permutations,
        "nominal": 0.95,
        "coverage_permutation_interval": float(np.mean(permutation)),
        "coverage_fixed_score_bootstrap": float(np.mean(bootstrap)),
        "mean_auc": float(np.mean(statistics)),
        "rejection_rate_at_0.05": float(np.mean(rejected)),
    }
    print(json.dumps(record))


if __name__ == "__main__":
    main()
