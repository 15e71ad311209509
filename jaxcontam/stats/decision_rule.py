# pyright: standard
"""Which evidence to recommend: a rule that a valid test passes and a null detector fails (issue 62, item 6).

Input, per candidate (a detector in one situation: `SITUATIONS`), its outcome on halves (one model's items of one
benchmark on one side of a draw) whose truth is known: a half is `control` (a model that saw neither half),
`clean` (the untrained half of a model trained on the other), `format_control` (a model trained on other items of
the same benchmarks) or `contaminated` (the trained half); flagged (the test rejected at ALPHA), not flagged, or
untested (None: no test could be made). A half may name its `cluster`: halves that test the same items (in round
four, the same benchmark's same side of the draw, audited in every arm) share the items' draw and move together.

Step 1, eligibility by level. For each required level role, the one-sided exact binomial test of "false-positive
rate <= ALPHA" on its flagged / tested halves; the candidate is ruled out when any role's p-value is at or below
ELIGIBILITY_ALPHA / R (R: the number of required roles, fixed before any data). For a test whose true rate is at
most ALPHA on independent halves, each role rules it out with probability at most ELIGIBILITY_ALPHA / R (the
binomial test is exact: its p-value is stochastically no smaller than uniform), so by the union bound, under any
dependence between the roles, it is eligible with probability at least 1 - ELIGIBILITY_ALPHA = 90% for every number
of halves (`tests/test_decision_rule_v2.py` computes the exact worst case for 1-60 halves and simulates it). The
burden of proof is on the data: a candidate is ruled out only by evidence that it exceeds its level.

Clustering. Halves that share items are positively correlated, so k flagged halves carry less evidence than k
independent ones, and the plain binomial test would rule a valid test out more often than it should. With clusters
given, the count enters at Korn & Graubard's effective sample size: n* = n / deff and k* = k / deff, deff the
cluster design effect of the share (`jaxcontam.stats.intervals.cluster_design_effect`, at least 1), the tail
continued to real counts, and the p-value used is the larger of that and the plain one (the interval the union of
both), so declaring clusters only ever weakens the evidence and the 90% bound for independent halves is kept
(deff = 1), and a clustered valid test is not ruled out for the clustering alone (approximately: deff is estimated
from few clusters; the test simulates it). Untested halves are left out of a level: neither false positives nor
evidence of validity; a required role with no tested half makes the candidate ineligible (its level is unknown).

Step 2, power. Power = flagged / all contaminated halves (an untested one is a miss), with its one-sided
POWER_CONFIDENCE Clopper-Pearson lower bound at the effective sample size. Among eligible candidates of a situation,
the one with the highest lower bound is picked, and only if that bound exceeds ALPHA: a null detector (power equal
to its level, at most ALPHA) passes that with probability at most 1 - POWER_CONFIDENCE = 5%, so evidence without
power is never recommended by default. Ties: the higher point power, then the lower pooled level, then the order
given. An `oracle` candidate (the base model as reference, which no auditor has) is assessed and never picked.

Why the rule of issue 48 (experiments/real_contamination/decision_rule.py, rule 2) could not pass a valid test, and
this one can. Its condition 3 asked the upper end of an item-bootstrap 95% interval of each level to fall below
2 ALPHA, re-running every half's permutation test on items resampled with replacement. A resample duplicates items,
and duplicated values narrow the sign-flip null, so in the bootstrap world the test itself is no longer at its level:
a test at its exact level was flagged 10.9% of the time there (round_four.bootstrap_null_level), so the bootstrap
levels centred above 2 ALPHA and their upper end could not fall below it. Even a correct bootstrap would have asked a
valid test to prove its level with an upper bound below 2 ALPHA, which fails often at 6-30 halves. This rule re-runs
no test: it reads each half's verdict once, as the audit gave it, and only evidence of excess (an exact binomial
tail, clustering only weakening it) rules a candidate out; its power bound is an exact interval, not a bootstrap.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from jaxcontam.stats.intervals import binomial_tail, clopper_pearson, cluster_design_effect
from jaxcontam.stats.paired import ConfidenceInterval
from jaxcontam.stats.validation import StatsInputError, check_probability

ALPHA = 0.05  # the level every candidate's per-half test runs at
ELIGIBILITY_ALPHA = 0.10  # at most this chance of ruling out a valid test
POWER_CONFIDENCE = 0.95  # one-sided confidence of the power's lower bound
SITUATIONS = ("model_alone", "reference_model", "corpus", "model_family")
LEVEL_ROLES = ("control", "clean", "format_control")
ROLES = (*LEVEL_ROLES, "contaminated")


@dataclasses.dataclass(frozen=True)
class HalfOutcome:
    """One half's verdict under one candidate: flagged True/False, None when untested; `cluster`: the item set it
    tests (None: a cluster of its own); `model`: the model it was tested in (read by no assessment: a report's split
    of the power by kind of contamination)."""

    role: str
    flagged: bool | None
    cluster: str | None = None
    model: str | None = None


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A detector (with its settings) in one situation, and its outcome on every half of known truth."""

    detector: str
    situation: str
    halves: tuple[HalfOutcome, ...]
    oracle: bool = False  # assessed and reported, never picked


@dataclasses.dataclass(frozen=True)
class Share:
    """flagged of `tested` halves (of `total`), over `clusters` clusters with design effect `design_effect`."""

    flagged: int
    tested: int
    total: int
    clusters: int
    design_effect: float

    @property
    def rate(self) -> float:
        return self.flagged / self.tested if self.tested else math.nan

    @property
    def effective_tested(self) -> float:
        return self.tested / self.design_effect

    @property
    def effective_flagged(self) -> float:
        return self.flagged / self.design_effect

    def confidence_interval(self, level: float = 0.95, alternative: str = "two-sided") -> ConfidenceInterval:
        """Clopper-Pearson interval of the rate at the effective sample size, never narrower than the plain one
        (their union; NaN when nothing was tested)."""
        if not self.tested:
            return ConfidenceInterval(math.nan, math.nan)
        plain = clopper_pearson(self.flagged, self.tested, level, alternative)
        effective = clopper_pearson(self.effective_flagged, self.effective_tested, level, alternative)
        return ConfidenceInterval(min(plain.low, effective.low), max(plain.high, effective.high))


@dataclasses.dataclass(frozen=True)
class LevelCheck:
    """One level role: its share, the exact binomial p-value of "rate <= alpha" and whether it ruled out."""

    role: str
    share: Share
    pvalue: float  # NaN: no tested half
    threshold: float  # ELIGIBILITY_ALPHA / number of required roles
    exceeds: bool


@dataclasses.dataclass(frozen=True)
class Assessment:
    """How one candidate fared: each level role, its power with the lower bound, and the reasons it was not picked."""

    detector: str
    situation: str
    oracle: bool
    levels: tuple[LevelCheck, ...]
    pooled_level: Share
    power: Share
    power_lower: float
    eligible: bool
    shows_power: bool  # power_lower > alpha
    reasons: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Decision:
    """A situation's pick (None with the reason when no candidate qualifies) and every candidate's assessment."""

    situation: str
    choice: Assessment | None
    reason: str
    assessments: tuple[Assessment, ...]


def share(halves: Sequence[HalfOutcome], untested_as_miss: bool = False) -> Share:
    """The flagged share of `halves` with its cluster design effect; untested halves left out, or counted as not
    flagged with `untested_as_miss` (power)."""
    counted = [h for h in halves if h.flagged is not None or untested_as_miss]
    by_cluster: dict[object, list[int]] = {}
    for index, h in enumerate(counted):
        key = ("cluster", h.cluster) if h.cluster is not None else ("own", index)
        tally = by_cluster.setdefault(key, [0, 0])
        tally[0] += bool(h.flagged)
        tally[1] += 1
    flagged = sum(k for k, _ in by_cluster.values())
    tested = sum(m for _, m in by_cluster.values())
    deff = cluster_design_effect([k for k, _ in by_cluster.values()], [m for _, m in by_cluster.values()])
    return Share(flagged, tested, len(halves), len(by_cluster), deff)


def _check(candidate: Candidate, required: Sequence[str]) -> None:
    if candidate.situation not in SITUATIONS:
        raise StatsInputError(f"situation {candidate.situation!r}: expected one of {SITUATIONS}")
    for role in (h.role for h in candidate.halves):
        if role not in ROLES:
            raise StatsInputError(f"{candidate.detector}: half role {role!r}; expected one of {ROLES}")
    unknown = set(required) - set(LEVEL_ROLES)
    if unknown or not required:
        raise StatsInputError(f"required roles {list(required)}: expected a non-empty subset of {LEVEL_ROLES}")


def level_pvalue(s: Share, alpha: float = ALPHA) -> float:
    """One-sided exact binomial p-value of "rate <= alpha" at the share's effective sample size, never below the
    plain binomial p-value (the larger of the two; NaN if untested)."""
    if not s.tested:
        return math.nan
    return max(binomial_tail(s.flagged, s.tested, alpha), binomial_tail(s.effective_flagged, s.effective_tested, alpha))


def assess(
    candidate: Candidate,
    alpha: float = ALPHA,
    eligibility_alpha: float = ELIGIBILITY_ALPHA,
    power_confidence: float = POWER_CONFIDENCE,
    required: Sequence[str] = LEVEL_ROLES,
) -> Assessment:
    """Steps 1 and 2 of the module docstring for one candidate."""
    alpha = check_probability("alpha", alpha)
    eligibility_alpha = check_probability("eligibility_alpha", eligibility_alpha)
    power_confidence = check_probability("power_confidence", power_confidence)
    _check(candidate, required)
    name = f"{candidate.detector} ({candidate.situation})"
    threshold = eligibility_alpha / len(required)
    reasons, checks = [], []
    for role in required:
        s = share([h for h in candidate.halves if h.role == role])
        p = level_pvalue(s, alpha)
        exceeds = s.tested > 0 and p <= threshold
        checks.append(LevelCheck(role, s, p, threshold, exceeds))
        if not s.tested:
            reasons.append(f"{name}: no tested {role} half, its level is unknown")
        elif exceeds:
            reasons.append(
                f"{name}: {role} level {s.flagged}/{s.tested} exceeds {alpha:g} (exact binomial p = {p:.3g} <= "
                f"{threshold:.3g}, design effect {s.design_effect:.2f})"
            )
    pooled = share([h for h in candidate.halves if h.role in required])
    power = share([h for h in candidate.halves if h.role == "contaminated"], untested_as_miss=True)
    eligible = not reasons
    if power.tested:
        lower = power.confidence_interval(power_confidence, "greater").low
    else:
        lower = math.nan
        reasons.append(f"{name}: no contaminated half, its power is unknown")
    shows_power = bool(lower > alpha)  # NaN: False
    if power.tested and not shows_power:
        reasons.append(
            f"{name}: power {power.flagged}/{power.tested}, its {power_confidence:.0%} lower bound {lower:.3f} does "
            f"not exceed {alpha:g}"
        )
    if candidate.oracle:
        reasons.append(f"{name}: an oracle (no auditor has it), never picked")
    return Assessment(
        candidate.detector,
        candidate.situation,
        candidate.oracle,
        tuple(checks),
        pooled,
        power,
        lower,
        eligible,
        shows_power,
        tuple(reasons),
    )


def _rank(a: Assessment) -> tuple[float, float, float]:
    pooled = a.pooled_level.rate if a.pooled_level.tested else 1.0
    return (-a.power_lower, -a.power.rate, pooled)


def decide(
    candidates: Sequence[Candidate],
    alpha: float = ALPHA,
    eligibility_alpha: float = ELIGIBILITY_ALPHA,
    power_confidence: float = POWER_CONFIDENCE,
    required: Sequence[str] | Mapping[str, Sequence[str]] = LEVEL_ROLES,
) -> dict[str, Decision]:
    """Situation -> its Decision, over the situations the candidates name (`required`: the level roles, or per
    situation)."""
    keys = [(c.detector, c.situation) for c in candidates]
    if len(set(keys)) != len(keys):
        raise StatsInputError("a (detector, situation) candidate is given twice; give each once")
    decisions = {}
    for situation in [s for s in SITUATIONS if any(c.situation == s for c in candidates)]:
        roles = required[situation] if isinstance(required, Mapping) else required
        assessed = tuple(
            assess(c, alpha, eligibility_alpha, power_confidence, roles) for c in candidates if c.situation == situation
        )
        qualified = [a for a in assessed if a.eligible and a.shows_power and not a.oracle]
        if not qualified:
            reasons = "; ".join(r for a in assessed for r in a.reasons)
            decisions[situation] = Decision(situation, None, f"no candidate qualifies: {reasons}", assessed)
            continue
        best = min(qualified, key=_rank)  # min keeps the first of equals: the order given
        reason = (
            f"{best.detector}: power {best.power.flagged}/{best.power.tested}, {power_confidence:.0%} lower bound "
            f"{best.power_lower:.3f}, the highest of {len(qualified)} eligible with power among {len(assessed)}"
        )
        decisions[situation] = Decision(situation, best, reason, assessed)
    return decisions
