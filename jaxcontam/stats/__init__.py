# pyright: standard
"""Statistics for contamination verdicts: paired tests, corrections, power, EPG and thresholds.

    result = paired_test(p_true_original, p_true_rephrased)           # default: permutation
    result.pvalue, result.effect_size, result.confidence_interval(0.95)
    adjust([r.pvalue for r in sweep], method="holm").reject
    curve = epg_curve(longest_match_scores, correct)
    select_threshold(curve, z_crit=1.645, min_clean=10, min_contaminated=10).row
    max_z_test(longest_match_scores, correct, min_clean=10, min_contaminated=10).pvalue   # the search, calibrated
    auc(scores, seen).confidence_interval(0.95); clopper_pearson(flagged, tested)
    blind_baseline(member_texts, nonmember_texts).statistic                 # a model-free classifier's AUC
    constat_test(acc_original, acc_rephrased, refs_original, refs_rephrased).pvalue   # ConStat over a family
    jaxcontam.stats.decision_rule.decide(candidates)                        # which evidence to recommend

Pure numpy/scipy; every test equal to scipy where scipy has it (see tests/test_stats_*.py).
"""

from jaxcontam.stats.auc import AUCResult, MeanAUCResult, auc, mean_auc
from jaxcontam.stats.blind import BlindBaselineResult, blind_baseline
from jaxcontam.stats.constat import ConStatResult, constat_test
from jaxcontam.stats.epg import (
    EPGCurve,
    EPGRow,
    MaxZTestResult,
    ThresholdSelection,
    default_thresholds,
    epg_curve,
    max_z_test,
    select_threshold,
)
from jaxcontam.stats.exchangeability import ExchangeabilityStatistic, exchangeability_statistic
from jaxcontam.stats.intervals import binomial_tail, clopper_pearson, cluster_design_effect
from jaxcontam.stats.multiple import AdjustedPValues, adjust, sweep_resamples
from jaxcontam.stats.paired import (
    ConfidenceInterval,
    PairedTestResult,
    cohens_dz,
    default_paired_method,
    paired_test,
)
from jaxcontam.stats.pairs import DROP_REASONS, FilteredPairs, filter_pairs
from jaxcontam.stats.power import minimum_detectable_effect, power, sample_size
from jaxcontam.stats.separation import separation
from jaxcontam.stats.validation import StatsInputError

__all__ = [
    "DROP_REASONS",
    "AUCResult",
    "AdjustedPValues",
    "BlindBaselineResult",
    "ConStatResult",
    "ConfidenceInterval",
    "EPGCurve",
    "EPGRow",
    "ExchangeabilityStatistic",
    "FilteredPairs",
    "MaxZTestResult",
    "MeanAUCResult",
    "PairedTestResult",
    "StatsInputError",
    "ThresholdSelection",
    "adjust",
    "auc",
    "binomial_tail",
    "blind_baseline",
    "clopper_pearson",
    "cluster_design_effect",
    "cohens_dz",
    "constat_test",
    "default_paired_method",
    "default_thresholds",
    "epg_curve",
    "exchangeability_statistic",
    "filter_pairs",
    "max_z_test",
    "mean_auc",
    "minimum_detectable_effect",
    "paired_test",
    "power",
    "sample_size",
    "select_threshold",
    "separation",
    "sweep_resamples",
]
