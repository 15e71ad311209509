"""jaxcontam.stats.decision_rule (issue 62's rule) and jaxcontam.stats.intervals: exact against scipy, and by
seeded simulation: a test at its exact level is eligible at least 90% of the time, clustered or not; a planted
effect is picked over a null detector; a test above its level is usually ruled out."""

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from jaxcontam.stats import decision_rule as rule
from jaxcontam.stats.intervals import binomial_tail, clopper_pearson, cluster_design_effect
from jaxcontam.stats.validation import StatsInputError


def test_binomial_tail_and_clopper_pearson_are_scipys_at_integer_counts():
    for n in (1, 6, 17, 60):
        for k in range(n + 1):
            test = scipy_stats.binomtest(k, n, 0.05, alternative="greater")
            assert binomial_tail(k, n, 0.05) == pytest.approx(test.pvalue, rel=1e-9, abs=1e-12)
            for alternative in ("two-sided", "greater", "less"):
                ours = clopper_pearson(k, n, 0.9, alternative)
                theirs = scipy_stats.binomtest(k, n, alternative=alternative).proportion_ci(0.9, method="exact")
                assert (ours.low, ours.high) == pytest.approx((theirs.low, theirs.high), abs=1e-9)
    assert binomial_tail(2.5, 12.5, 0.05) == pytest.approx(
        scipy_stats.beta.cdf(0.05, 2.5, 11.0)
    )  # the real-count continuation
    with pytest.raises(StatsInputError, match="0 <= k <= n"):
        binomial_tail(3, 2, 0.05)


def test_cluster_design_effect():
    assert cluster_design_effect([0, 1, 0, 1], [1, 1, 1, 1]) == 1.0  # one unit per cluster: no clustering
    assert cluster_design_effect([0, 0], [5, 5]) == 1.0  # share 0: nothing to compare
    assert cluster_design_effect([3], [6]) == 6.0  # one cluster: one unit of evidence
    # every flag in one of 3 clusters of 4: p = 1/3, var = 3/2 * ((4 - 4/3)^2 + 2 (4/3)^2) / 144, binomial 2/9/12
    assert cluster_design_effect([4, 0, 0], [4, 4, 4]) == pytest.approx((1.5 * (64 / 9 + 32 / 9) / 144) / (2 / 108))
    assert cluster_design_effect([1, 1, 1], [4, 4, 4]) == 1.0  # less spread than binomial: floored at 1
    with pytest.raises(StatsInputError, match="per-cluster counts"):
        cluster_design_effect([2], [1])


def test_each_role_rules_out_a_test_at_its_exact_level_at_most_its_share_for_every_n():
    """The discrete binomial, computed exactly: at rate = alpha the probability that one role rules a candidate out
    is at most 0.10 / R for every n from 1 to 60 halves, so 3 roles leave it eligible >= 90% (union bound)."""
    for roles in (1, 3):
        threshold = rule.ELIGIBILITY_ALPHA / roles
        for n in range(1, 61):
            ruled_out = [k for k in range(n + 1) if rule.level_pvalue(rule.Share(k, n, n, n, 1.0)) <= threshold]
            probability = scipy_stats.binom.pmf(ruled_out, n, rule.ALPHA).sum()
            assert probability <= threshold, (roles, n, probability)


def _halves(rng, role, n, rate, clusters=None, rho=0.0):
    """n halves of `role` flagged at `rate`; with `clusters`, split into that many item sets whose rates are
    Beta-distributed about `rate` with intra-cluster correlation `rho`."""
    if clusters is None:
        return [rule.HalfOutcome(role, bool(f)) for f in rng.random(n) < rate]
    out = []
    for c, members in enumerate(np.array_split(np.arange(n), clusters)):
        r = rng.beta(rate * (1 - rho) / rho, (1 - rate) * (1 - rho) / rho) if rho else rate
        out += [rule.HalfOutcome(role, bool(f), f"{role}/{c}") for f in rng.random(len(members)) < r]
    return out


def _candidate(rng, n, clean_rate=rule.ALPHA, power=0.5, name="x", clusters=None, rho=0.0):
    """n halves of each level role at rate alpha (clean: `clean_rate`) and n contaminated halves at `power`."""
    halves = [
        h
        for role in rule.LEVEL_ROLES
        for h in _halves(rng, role, n, clean_rate if role == "clean" else rule.ALPHA, clusters, rho)
    ]
    halves += _halves(rng, "contaminated", n, power)
    return rule.Candidate(name, "reference_model", tuple(halves))


@pytest.mark.parametrize("n", [10, 18, 30, 60])
def test_a_test_at_its_exact_level_is_eligible_at_least_90_percent(n):
    rng = np.random.default_rng(n)
    eligible = [rule.assess(_candidate(rng, n)).eligible for _ in range(1000)]
    assert np.mean(eligible) >= 0.90


def test_clustered_halves_at_the_exact_level_stay_eligible_where_the_plain_count_would_not():
    """30 halves per role in 6 item sets sharing a Beta rate (intra-cluster correlation 0.3): with the clusters
    declared the valid test stays eligible >= 90%; read as independent halves it does not."""
    rng = np.random.default_rng(7)
    declared, plain = [], []
    for _ in range(1000):
        candidate = _candidate(rng, 30, clusters=6, rho=0.3)
        declared.append(rule.assess(candidate).eligible)
        flat = tuple(rule.HalfOutcome(h.role, h.flagged) for h in candidate.halves)
        plain.append(rule.assess(rule.Candidate("x", "reference_model", flat)).eligible)
    assert np.mean(declared) >= 0.90 > np.mean(plain)


def test_a_test_above_its_level_is_usually_ruled_out():
    rng = np.random.default_rng(11)
    eligible = [rule.assess(_candidate(rng, 30, clean_rate=0.25)).eligible for _ in range(1000)]
    assert np.mean(eligible) < 0.25


def test_a_planted_effect_is_picked_over_a_null_detector_and_a_null_detector_alone_almost_never():
    """Both valid (clean halves at alpha); the planted detector flags half of 30 contaminated halves, the null one
    flags them at its level. The planted one is picked unless its own level check rules it out (at most 10%)."""
    rng = np.random.default_rng(13)
    picked, null_alone = [], []
    for _ in range(500):
        null = _candidate(rng, 30, power=rule.ALPHA, name="null")
        effect = _candidate(rng, 30, power=0.5, name="planted")
        choice = rule.decide([null, effect])["reference_model"].choice
        picked.append(None if choice is None else choice.detector)
        null_alone.append(rule.decide([null])["reference_model"].choice is not None)
    assert picked.count("planted") / len(picked) >= 0.90
    assert picked.count("null") / len(picked) <= 0.02
    assert np.mean(null_alone) <= 0.05


def _fixed(name, flags, situation="model_alone", oracle=False, cluster=None):
    halves = tuple(
        rule.HalfOutcome(role, f, cluster(role, i) if cluster else None)
        for role, values in flags.items()
        for i, f in enumerate(values)
    )
    return rule.Candidate(name, situation, halves, oracle)


def _flags(flagged_contaminated, clean=0, n=10, untested=0):
    missed = n - flagged_contaminated - untested
    return {
        "control": [False] * n,
        "clean": [True] * clean + [False] * (n - clean),
        "format_control": [False] * n,
        "contaminated": [True] * flagged_contaminated + [None] * untested + [False] * missed,
    }


def test_decide_per_situation_with_reasons():
    decisions = rule.decide(
        [
            _fixed("weak", _flags(4)),
            _fixed("strong", _flags(8)),
            _fixed("too many clean flags", _flags(10, clean=5)),
            _fixed("oracle", _flags(10), oracle=True),
            _fixed("corpus detector", _flags(1), situation="corpus"),
        ]
    )
    alone = decisions["model_alone"]
    assert alone.choice is not None and alone.choice.detector == "strong"
    assert alone.choice.power_lower == pytest.approx(clopper_pearson(8, 10, 0.95, "greater").low)
    by_name = {a.detector: a for a in alone.assessments}
    assert not by_name["too many clean flags"].eligible
    assert "clean level 5/10 exceeds 0.05" in by_name["too many clean flags"].reasons[0]
    assert "never picked" in by_name["oracle"].reasons[-1]
    corpus = decisions["corpus"]
    assert corpus.choice is None and "lower bound" in corpus.reason  # 1/10: no evidence of power
    assert set(decisions) == {"model_alone", "corpus"}


def test_untested_halves_and_missing_roles():
    assessment = rule.assess(_fixed("x", _flags(5, untested=3)))
    assert (assessment.power.flagged, assessment.power.tested) == (5, 10)  # an untested contaminated half: a miss
    flags = _flags(5)
    flags["format_control"] = [None, None]
    assessment = rule.assess(_fixed("x", flags))
    assert not assessment.eligible and "no tested format_control half" in assessment.reasons[0]
    assert rule.assess(_fixed("x", flags), required=("control", "clean")).eligible
    with pytest.raises(StatsInputError, match="given twice"):
        rule.decide([_fixed("x", _flags(5)), _fixed("x", _flags(6))])
    with pytest.raises(StatsInputError, match="role"):
        rule.assess(rule.Candidate("x", "model_alone", (rule.HalfOutcome("seen", True),)))
    with pytest.raises(StatsInputError, match="situation"):
        rule.assess(rule.Candidate("x", "alone", ()))


def test_declared_clusters_only_weaken_the_evidence():
    """Flags piled into one item set: the level's p-value and the power's interval at the effective sample size
    are never stronger than the plain binomial ones."""
    flags = _flags(6, clean=3)
    plain = rule.assess(_fixed("x", flags))
    clustered = rule.assess(_fixed("x", flags, cluster=lambda role, i: f"{role}/{i // 5}"))
    clean_plain, clean_clustered = plain.levels[1], clustered.levels[1]
    assert clean_clustered.share.design_effect > 1
    assert clean_clustered.pvalue >= clean_plain.pvalue
    assert clustered.power_lower <= plain.power_lower
    assert math.isnan(rule.level_pvalue(rule.Share(0, 0, 3, 0, 1.0)))


def test_apply_rule_docs_table_names_the_pick_and_what_was_not_measured():
    from experiments.real_contamination import apply_rule as module

    found = [_fixed("strong", _flags(8)), _fixed("weak", _flags(1))]
    decisions = rule.decide(found)
    by_name = {c.detector: c for c in found}
    report = {
        "rule_commit": "abc1234",
        "situations": {
            "model_alone": {
                "choice": "strong",
                "reason": decisions["model_alone"].reason,
                "candidates": [
                    module._assessment(a, by_name[a.detector]) for a in decisions["model_alone"].assessments
                ],
            },
            "corpus": {"not_measured": "no per-half test"},
        },
    }
    table = module.docs_table(report)
    row = "| model_alone | strong | 0/10, p 1 | 0/10, p 1 | 0/10, p 1 | 8/10 [0.44, 0.97] | 0.49 | **picked** |"
    assert row in table
    assert "| model_alone | weak |" in table and "eligible, no power" in table
    assert "| corpus | not measured: no per-half test |" in table
    assert table.endswith("picks, per situation: model_alone: strong.\n")


def test_apply_rule_splits_a_candidates_power_by_the_model_each_half_was_tested_in():
    from experiments.real_contamination import apply_rule as module

    halves = (
        rule.HalfOutcome("contaminated", True, "a", "verbatim_x1"),
        rule.HalfOutcome("contaminated", None, "b", "verbatim_x1"),  # untested: a miss, as the power counts it
        rule.HalfOutcome("contaminated", False, "a", "rephrased_x4"),
        rule.HalfOutcome("clean", True, "b", "rephrased_x4"),  # not a contaminated half
    )
    candidate = rule.Candidate("c", "model_alone", halves)
    assert module.power_by_arm(candidate) == {"rephrased_x4": [0, 1], "verbatim_x1": [1, 2]}
    power = rule.assess(candidate).power  # the split adds up to the power the rule counts
    assert (power.flagged, power.total) == (1, 3)
