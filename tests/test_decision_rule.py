"""Issue 48's decision rule (experiments/real_contamination/decision_rule.py) on hand-made halves: an eligible
winner, a tie, none eligible, the Holm family of rule 1 and the item-cluster bootstrap (the 99% band and Holm
themselves: tests/test_stats_intervals.py, tests/test_stats_multiple.py)."""

import numpy as np
import pytest

import experiments.real_contamination.decision_rule
from experiments.real_contamination import round_four


@pytest.fixture(scope="module")
def rule():
    return experiments.real_contamination.decision_rule


def _halves(rule, confidence, flags):
    """Halves with p 0.01 (flagged) or 0.5, None for untested: flags = {role: [True, False, None, ...]}."""
    return tuple(
        rule.HalfResult(f"arm{i}", "gsm8k", role, role, confidence, None if f is None else (0.01 if f else 0.5))
        for role, values in flags.items()
        for i, f in enumerate(values)
    )


def _candidate(rule, confidence, design, power, clean=0, control=0, fmt=0, upper=0.05, n=6):
    flags = {
        "contaminated": [i < power for i in range(n)],
        "clean": [i < clean for i in range(n)],
        "control": [i < control for i in range(n)],
        "format_control": [i < fmt for i in range(n)],
    }
    bounds = {role: upper for role in rule.LEVEL_ROLES}
    return rule.Candidate(confidence, design, _halves(rule, confidence, flags), bounds)


def test_eligible_winner(rule):
    decision = rule.decide(
        [
            _candidate(rule, "p_true", "control_reference", power=1),
            _candidate(rule, "answer_logprob", "control_reference", power=3),
            _candidate(rule, "answer_logprob", "diverged_sibling", power=4, fmt=3),  # 3/6 above the band [0, 2]
            _candidate(rule, "answer_logprob", "fresh_items", power=5, upper=0.12),  # bootstrap upper >= 2 alpha
            _candidate(rule, "answer_logprob", "base_model", power=6),  # the oracle: never the default
        ]
    )
    assert decision.choice == ("answer_logprob", "control_reference")
    assessed = {(a.confidence, a.design): a for a in decision.assessments}
    assert assessed[("answer_logprob", "control_reference")].power == rule.Count(3, 6, 6)
    sibling = assessed[("answer_logprob", "diverged_sibling")]
    assert not sibling.eligible and "format_control 3/6 outside the 99% band [0, 2]" in sibling.reasons[0]
    assert "bootstrap 95% upper end 0.120" in assessed[("answer_logprob", "fresh_items")].reasons[0]
    assert "oracle" in assessed[("answer_logprob", "base_model")].reasons[0]


def test_untested_halves(rule):
    flags = {"contaminated": [True, None], "clean": [None, False], "control": [False], "format_control": [False]}
    candidate = rule.Candidate("p_true", "fresh_items", _halves(rule, "p_true", flags), dict.fromkeys(rule.ROLES, 0.0))
    assessment = rule.assess(candidate)
    assert assessment.power == rule.Count(1, 1, 2)  # an untested contaminated half is a miss: power 1/2
    assert assessment.levels["clean"] == rule.Count(0, 1, 2)  # the level reads the tested halves only
    assert assessment.eligible


def test_tie(rule):
    decision = rule.decide(
        [
            _candidate(rule, "p_true", "control_reference", power=2, clean=1),
            _candidate(rule, "answer_logprob", "diverged_sibling", power=2, clean=0),
            _candidate(rule, "answer_logprob", "fresh_items", power=2, clean=0),
        ]
    )
    assert decision.choice == ("answer_logprob", "diverged_sibling")  # lower clean level, then the listed order
    assert "3 tied on power" in decision.reason
    same = rule.decide(
        [
            _candidate(rule, "answer_logprob", "control_reference", power=2),
            _candidate(rule, "p_true", "diverged_sibling", power=2),
        ]
    )
    assert same.choice == ("p_true", "diverged_sibling")  # the confidence's order comes before the design's


def test_none_eligible(rule):
    missing_format = _candidate(rule, "p_true_raw", "control_reference", power=3)
    missing_format = rule.Candidate(
        missing_format.confidence,
        missing_format.design,
        tuple(h for h in missing_format.halves if h.role != "format_control"),
        missing_format.level_upper95,
    )
    decision = rule.decide(
        [_candidate(rule, "p_true", "control_reference", power=3, control=1, upper=0.1), missing_format]
    )
    assert decision.choice is None
    assert decision.reason.startswith("no candidate is eligible")
    assert (
        "p_true / control_reference: level on control, bootstrap 95% upper end 0.100 not below 0.1" in decision.reason
    )
    assert "p_true_raw / control_reference: no tested format_control half" in decision.reason
    with pytest.raises(ValueError):
        rule.decide([missing_format, missing_format])


def test_holm_family(rule):
    def half(confidence, p, arm="x1", half="drawn", role="contaminated"):
        return rule.HalfResult(arm, "copa", half, role, confidence, p)

    halves = [
        half("p_true", 0.01),
        half("p_true_raw", 0.04),
        half("answer_logprob", 0.03),
        half("question_min_k_plus_plus", None),  # untested: p = 1 in its family of 4
        half("answer_logprob", 0.02, half="other", role="clean"),  # its own family: 0.02 * 4 = 0.08
        half("answer_logprob", 0.003, arm="x4"),  # its own family, three confidences missing: 0.012
    ]
    counts = rule.counts_per_confidence(halves)
    assert counts["p_true"]["contaminated"] == {"raw": rule.Count(1, 1, 1), "holm": rule.Count(1, 1, 1)}
    assert counts["p_true_raw"]["contaminated"] == {"raw": rule.Count(1, 1, 1), "holm": rule.Count(0, 1, 1)}
    assert counts["answer_logprob"]["contaminated"] == {"raw": rule.Count(2, 2, 2), "holm": rule.Count(1, 2, 2)}
    assert counts["answer_logprob"]["clean"] == {"raw": rule.Count(1, 1, 1), "holm": rule.Count(0, 1, 1)}
    assert counts["question_min_k_plus_plus"]["contaminated"]["raw"] == rule.Count(0, 0, 1)
    with pytest.raises(ValueError):
        rule.counts_per_confidence([half("p_true", 0.01), half("p_true", 0.02)])


def test_cluster_bootstrap(rule):
    ids = tuple(f"copa/{i}" for i in range(8))
    values = (1.0, 0.5, 0.2, -0.1, -0.4, -0.6, 0.3, 0.1)
    sample = rule.ItemSample("copa", ids, values)

    def test(samples):
        (x,) = samples
        return None if x.size == 0 else (0.0 if x.mean() > 0.1 else 1.0)

    halves = [rule.HalfSamples(arm, "copa", "drawn", "control", (sample,)) for arm in ("a", "b")]
    halves.append(rule.HalfSamples("c", "copa", "drawn", "clean", (rule.ItemSample("copa", (), ()),)))
    shares = rule.cluster_bootstrap_levels(halves, test, replicates=200, seed=1)
    control = shares["control"]
    assert set(np.unique(control)) <= {0.0, 1.0}  # the two halves share their items: they move together
    assert 0 < control.mean() < 1
    assert np.isnan(shares["clean"]).all()  # never tested
    upper = rule.bootstrap_upper95(shares)
    assert upper["control"] == 1.0 and np.isnan(upper["clean"])
    again = rule.cluster_bootstrap_levels(halves, test, replicates=200, seed=1)
    np.testing.assert_array_equal(again["control"], control)


def test_round_four_bootstrap_flip_test_agrees_with_scipy():
    """round_four.py re-tests every half inside the bootstrap with its own Monte Carlo sign flips: its p-value is
    scipy's exact one-sided sign-flip permutation p-value within Monte Carlo error."""
    from scipy.stats import permutation_test

    rng = np.random.default_rng(3)
    for shift in (0.0, 0.2, 0.5):
        d = rng.normal(shift, 1.0, 14)
        exact = permutation_test(
            (d,), np.mean, permutation_type="samples", alternative="greater", n_resamples=np.inf
        ).pvalue
        ours = round_four.flip_pvalue(d, flips=20000)
        assert abs(ours - exact) < 4 * np.sqrt(exact * (1 - exact) / 20000) + 1e-3
    assert round_four.flip_pvalue(np.array([np.nan])) is None
    assert round_four.role_of("control_seed1", False) == "control"
    assert round_four.role_of("format_x4", False) == "format_control"
    assert (round_four.role_of("verbatim_x1", True), round_four.role_of("verbatim_x1", False)) == (
        "contaminated",
        "clean",
    )


def test_round_four_fresh_items_bootstrap_test_agrees_with_scipy():
    """Design (b)'s re-test inside the bootstrap (random splits of the pooled gaps) is scipy's exact one-sided
    two-sample permutation p-value of the difference of means within Monte Carlo error, and has no test where a side
    is empty."""
    from scipy.stats import permutation_test

    rng = np.random.default_rng(5)
    # 9 + 8 gaps: every split is enumerated on both sides; 20 + 20: random splits here, 200,000 in scipy
    for shift, sizes, resamples in ((0.0, (9, 8), np.inf), (0.4, (9, 8), np.inf), (0.5, (20, 20), 200_000)):
        half, fresh = rng.normal(shift, 1.0, sizes[0]), rng.normal(0.0, 1.0, sizes[1])
        exact = permutation_test(
            (half, fresh),
            lambda a, b, axis: np.mean(a, axis=axis) - np.mean(b, axis=axis),
            permutation_type="independent",
            alternative="greater",
            n_resamples=resamples,
            vectorized=True,
            rng=0,
        ).pvalue
        ours = round_four.split_pvalue((half, fresh))
        flips = round_four.BOOTSTRAP_FLIPS
        assert abs(ours - exact) < 4 * np.sqrt(exact * (1 - exact) / flips) + 2 / flips
    assert round_four.split_pvalue((np.array([]), np.array([1.0, 2.0]))) is None


def test_round_four_docs_table_names_every_candidate_and_the_outcome():
    """docs/methods.md's table: one row per candidate with flagged / tested halves and the bootstrap upper end of each
    level, an untested role said as such, a design without input listed as not run, and the rule's outcome."""

    def count(flagged, tested, total):
        return {"flagged": flagged, "tested": tested, "total": total}

    row = {
        "levels": {"control": count(0, 0, 6), "clean": count(1, 17, 18), "format_control": count(0, 6, 6)},
        "bootstrap_ci95": {"clean": [0.0, 0.17], "format_control": [0.0, 0.08]},
        "power": count(9, 18, 18),
        "eligible": False,
    }
    report = {
        "designs": {"control_reference": {"confidences": {"p_true": row}}},
        "not_run": {"fresh_items": "no arm has an audit of fresh items"},
        "decision": {"choice": None},
    }
    table = round_four.docs_table(report)
    assert "| control_reference | p_true | no half tested | 1/17 (1 no test) (0.17) | 0/6 (0.08) | 9/18 | no |" in table
    assert "| fresh_items | - | not run: no arm has an audit of fresh items |" in table
    assert table.endswith("Rule 2's outcome: no candidate passes: the default is unchanged.\n")
    report["decision"]["choice"] = ["p_true", "control_reference"]
    assert "default: p_true / control_reference" in round_four.docs_table(report)


def test_rule_two_bootstrap_condition_under_an_exact_null():
    """round_four.bootstrap_null_level: a sign-flip test at its level on symmetric differences is flagged about alpha
    of the time, but its item-bootstrap re-tests (resampled with replacement, as condition 3 re-tests) flag about
    twice that: above 2 alpha, which is why rule 2 as committed picks no default."""
    null = round_four.bootstrap_null_level(data_sets=200, replicates=10)
    assert 0.02 < null["level"] < 0.09
    assert null["bootstrap_level"] > 2 * 0.05 > null["level"]
