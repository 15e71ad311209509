"""Issue 48's two rules for calibrated PaCoST, fixed in code before the round-four runs (the commit that adds this
file predates every round-four result).

Terms
-----
- **Confidence**: one of CONFIDENCES, the PaCoST confidence whose original-minus-rephrased gap is tested.
- **Design**: one of DESIGNS, the calibration of that gap (`jaxcontam.stats.calibrated`):
  `control_reference` (design a, the control arm's model as reference), `diverged_sibling` (design a, the base
  model fine-tuned on other text), `fresh_items` (design b, items of the same benchmarks no arm saw) and
  `base_model` (design a, the base model: an oracle no auditor has; reported, never eligible as the default).
- **Half**: one audited model's items of one benchmark on one side of the draw (`drawn` or the other). Each
  half has one role: `control` (a half of a control arm, any data-order seed: it saw neither half), `clean` (the
  untrained half of an arm trained on the other one), `format_control` (a half of the format-control arm, trained
  on disjoint items of the same benchmarks: every audited item clean) or `contaminated` (the trained half).
  A model is never tested against itself: the reference model's own halves (the seed-0 control arm under
  `control_reference`) are passed to neither rule.
- **p-value**: per half, candidate: the design's one-sided test (design a: `reference_test`, sign-flip
  permutation; design b: `fresh_items_test`, permutation of means). None or NaN: no test could be made
  (too few items with both confidences): an *untested* half, never counted as "not detected" silently.
- **Flagged**: p < ALPHA (0.05).

Rule 1: calibrated counts per confidence (the multiplicity rule; `counts_per_confidence`)
-----------------------------------------------------------------------------------------
Within one design, each half is tested with the 4 confidences: the family is those 4 tests of the same half
(same arm, benchmark and half). Holm's step-down adjusts the 4 p-values of a family, an untested confidence
entering as p = 1 (the family never shrinks); a half counts flagged for a confidence under Holm only if its
Holm-adjusted p < ALPHA. Both counts are given, per confidence and role: raw (p < ALPHA) and Holm, each as
flagged / tested / total halves (tested: halves with a p-value).

Rule 2: the default PaCoST confidence and design (`decide`)
-----------------------------------------------------------
For each candidate (confidence, design), from the candidate's raw per-half p-values (one test per half, as the
audit would run it):
- level(role), for each role in LEVEL_ROLES (control, clean, format_control) = flagged / tested halves of that
  role (untested halves left out: they are neither false positives nor evidence of a valid level);
- power = flagged contaminated halves / all contaminated halves (an untested contaminated half is a miss).

A candidate is **eligible** when its design is not `base_model` and, for every role in LEVEL_ROLES:
1. at least one half of that role was tested;
2. the point estimate is within the 99% binomial acceptance band of ALPHA for its number n of tested halves:
   lower <= flagged <= upper with lower, upper = binom.ppf(0.005, n, ALPHA), binom.ppf(0.995, n, ALPHA)
   (`jaxcontam.stats.intervals.binomial_band`, the band `crossover.py` uses; its lower end is 0 for n <= 103);
3. the upper end of its item-cluster-bootstrap 95% CI is below 2 * ALPHA: items resampled with replacement
   within each stratum (each benchmark's audited items; fresh items their own strata), every half's test
   recomputed on its resampled items, the level recomputed per replicate (`cluster_bootstrap_levels`); the
   upper end is the 97.5th percentile of the replicates' levels (`bootstrap_upper95`), replicates where the
   role had no tested half left out.

Among eligible candidates the default is the one with the highest power; ties (equal flagged / total, compared
exactly) go to the lower level on `clean` halves, then to the earlier candidate in the listed order (confidence
in CONFIDENCES order first, then design in DESIGNS order). If no candidate is eligible, `decide` returns no
choice and a reason naming, for each candidate, which condition failed for which role. The rule does not ask
for power above zero or above the level: an eligible candidate with power 0 can be picked, and the report must
say so.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction

import numpy as np

from experiments.real_contamination.design import ALPHA, CONFIDENCES
from jaxcontam.stats.intervals import binomial_band
from jaxcontam.stats.multiple import holm

BAND_LEVEL = 0.99
DESIGNS = ("control_reference", "diverged_sibling", "fresh_items", "base_model")
ORACLE_DESIGNS = ("base_model",)  # reported, never eligible as the default
LEVEL_ROLES = ("control", "clean", "format_control")
ROLES = (*LEVEL_ROLES, "contaminated")


@dataclasses.dataclass(frozen=True)
class HalfResult:
    """One half's test under one confidence (and one design, fixed by the caller). pvalue None/NaN: untested."""

    arm: str
    benchmark: str
    half: str  # "drawn" / "other" or "contaminated" / "clean": any label, with arm and benchmark a half's key
    role: str  # one of ROLES
    confidence: str
    pvalue: float | None

    @property
    def p(self) -> float:
        """The p-value, NaN when untested."""
        return math.nan if self.pvalue is None else float(self.pvalue)

    @property
    def tested(self) -> bool:
        return not math.isnan(self.p)


@dataclasses.dataclass(frozen=True)
class Count:
    """flagged of tested halves, of total halves."""

    flagged: int
    tested: int
    total: int


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A (confidence, design) with its halves' raw p-values and each level role's bootstrap CI upper end."""

    confidence: str
    design: str
    halves: tuple[HalfResult, ...]
    level_upper95: Mapping[str, float]  # role -> upper end of the item-cluster-bootstrap 95% CI of the level


@dataclasses.dataclass(frozen=True)
class Assessment:
    """How one candidate fared: its power, levels, bands, eligibility and the failed conditions."""

    confidence: str
    design: str
    power: Count
    levels: Mapping[str, Count]
    bands: Mapping[str, tuple[int, int]]
    level_upper95: Mapping[str, float]
    eligible: bool
    reasons: tuple[str, ...]  # why not eligible (empty when eligible)


@dataclasses.dataclass(frozen=True)
class Decision:
    """The default (confidence, design), or None with the reason; every candidate's assessment."""

    choice: tuple[str, str] | None
    reason: str
    assessments: tuple[Assessment, ...]


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise ValueError(f"role {role!r}: expected one of {ROLES}")


def count(halves: Sequence[HalfResult], flagged: Callable[[HalfResult], bool]) -> Count:
    """Count `flagged` halves among the tested ones, of all."""
    return Count(sum(h.tested and flagged(h) for h in halves), sum(h.tested for h in halves), len(halves))


def counts_per_confidence(halves: Sequence[HalfResult], alpha: float = ALPHA) -> dict[str, dict[str, dict[str, Count]]]:
    """Rule 1, within one design: confidence -> role -> {"raw": Count, "holm": Count}.

    Family: the CONFIDENCES tests of one half (arm, benchmark, half), Holm-adjusted, a missing or untested
    confidence entering as p = 1.
    """
    families: dict[tuple[str, str, str], dict[str, HalfResult]] = {}
    for h in halves:
        _check_role(h.role)
        if h.confidence not in CONFIDENCES:
            raise ValueError(f"confidence {h.confidence!r}: expected one of {CONFIDENCES}")
        family = families.setdefault((h.arm, h.benchmark, h.half), {})
        if h.confidence in family:
            raise ValueError(f"two results for {h.arm}/{h.benchmark}/{h.half}, {h.confidence}")
        if family and next(iter(family.values())).role != h.role:
            raise ValueError(f"{h.arm}/{h.benchmark}/{h.half} has two roles")
        family[h.confidence] = h
    adjusted: dict[tuple[str, str, str, str], float] = {}
    for key, family in families.items():
        raw = [family[c].p if c in family and family[c].tested else 1.0 for c in CONFIDENCES]
        for confidence, p in zip(CONFIDENCES, holm(np.array(raw))):
            adjusted[(*key, confidence)] = float(p)
    result: dict[str, dict[str, dict[str, Count]]] = {}
    for confidence in CONFIDENCES:
        mine = [h for h in halves if h.confidence == confidence]
        result[confidence] = {}
        for role in ROLES:
            group = [h for h in mine if h.role == role]
            result[confidence][role] = {
                "raw": count(group, lambda h: h.p < alpha),
                "holm": count(group, lambda h: adjusted[(h.arm, h.benchmark, h.half, h.confidence)] < alpha),
            }
    return result


def assess(candidate: Candidate, alpha: float = ALPHA) -> Assessment:
    """Rule 2's eligibility of one candidate (see the module docstring)."""
    if candidate.confidence not in CONFIDENCES or candidate.design not in DESIGNS:
        raise ValueError(f"unknown candidate ({candidate.confidence!r}, {candidate.design!r})")
    for h in candidate.halves:
        _check_role(h.role)
        if h.confidence != candidate.confidence:
            raise ValueError(f"a {h.confidence} half in the {candidate.confidence} candidate")
    flagged = lambda h: h.p < alpha  # noqa: E731
    by_role = {role: [h for h in candidate.halves if h.role == role] for role in ROLES}
    power = count(by_role["contaminated"], flagged)
    levels = {role: count(by_role[role], flagged) for role in LEVEL_ROLES}
    bands = {role: binomial_band(levels[role].tested, alpha, BAND_LEVEL) for role in LEVEL_ROLES}
    name = f"{candidate.confidence} / {candidate.design}"
    reasons = []
    if candidate.design in ORACLE_DESIGNS:
        reasons.append(f"{name}: the oracle design (no auditor has the base model)")
    if power.total == 0:
        reasons.append(f"{name}: no contaminated half")
    for role in LEVEL_ROLES:
        level, (low, high) = levels[role], bands[role]
        upper = float(candidate.level_upper95.get(role, math.nan))
        if level.tested == 0:
            reasons.append(f"{name}: no tested {role} half")
            continue
        if not low <= level.flagged <= high:
            reasons.append(
                f"{name}: level on {role} {level.flagged}/{level.tested} outside the 99% band [{low}, {high}]"
            )
        if not upper < 2 * alpha:  # NaN fails too
            reasons.append(f"{name}: level on {role}, bootstrap 95% upper end {upper:.3f} not below {2 * alpha:g}")
    return Assessment(
        candidate.confidence,
        candidate.design,
        power,
        levels,
        bands,
        dict(candidate.level_upper95),
        not reasons,
        tuple(reasons),
    )


def _order(a: Assessment) -> tuple[Fraction, Fraction, int, int]:
    clean = a.levels["clean"]
    return (
        -Fraction(a.power.flagged, a.power.total),
        Fraction(clean.flagged, clean.tested),
        CONFIDENCES.index(a.confidence),
        DESIGNS.index(a.design),
    )


def decide(candidates: Sequence[Candidate], alpha: float = ALPHA) -> Decision:
    """Rule 2: the eligible candidate with the highest power (ties: lower clean level, then listed order)."""
    keys = [(c.confidence, c.design) for c in candidates]
    if len(set(keys)) != len(keys):
        raise ValueError("a (confidence, design) given twice")
    assessments = tuple(assess(c, alpha) for c in candidates)
    eligible = sorted((a for a in assessments if a.eligible), key=_order)
    if not eligible:
        reasons = "; ".join(r for a in assessments for r in a.reasons) or "no candidate given"
        return Decision(None, f"no candidate is eligible: {reasons}", assessments)
    best = eligible[0]
    tied = [a for a in eligible if _order(a)[:1] == _order(best)[:1]]
    reason = (
        f"{best.confidence} / {best.design}: highest power {best.power.flagged}/{best.power.total} among "
        f"{len(eligible)} eligible of {len(assessments)}"
    )
    if len(tied) > 1:
        reason += f"; {len(tied)} tied on power, broken by the clean level, then the listed order"
    return Decision((best.confidence, best.design), reason, assessments)


# ---------------------------------------------------------------- the item-cluster bootstrap of the levels


@dataclasses.dataclass(frozen=True)
class ItemSample:
    """Per-item values one half's test reads (design a: d = gap(audited) - gap(reference); design b: the half's
    gaps, or the fresh items' gaps in their own stratum), aligned with `ids`; items of one stratum."""

    stratum: str
    ids: tuple[str, ...]
    values: tuple[float, ...]


@dataclasses.dataclass(frozen=True)
class HalfSamples:
    """One half's role and the samples its test reads, in the order the test takes them."""

    arm: str
    benchmark: str
    half: str
    role: str
    samples: tuple[ItemSample, ...]


def cluster_bootstrap_levels(
    halves: Sequence[HalfSamples],
    test: Callable[[Sequence[np.ndarray]], float | None],
    replicates: int = 1000,
    seed: int = 0,
    alpha: float = ALPHA,
) -> dict[str, np.ndarray]:
    """Role -> the flagged share of its tested halves in each replicate (NaN where none was tested).

    Each replicate draws, per stratum, as many items as the stratum holds, with replacement, from all of its
    item ids across every half; an item drawn k times enters every sample holding it k times, so the halves
    that share items (the same items in every arm) move together. `test` maps a half's resampled samples to a
    p-value (None or NaN: untested).
    """
    pools: dict[str, list[str]] = {}
    for h in halves:
        _check_role(h.role)
        for s in h.samples:
            if len(s.ids) != len(s.values):
                raise ValueError(f"{h.arm}/{h.benchmark}/{h.half}: {len(s.ids)} ids, {len(s.values)} values")
            pools.setdefault(s.stratum, []).extend(s.ids)
    pool = {stratum: sorted(set(ids)) for stratum, ids in pools.items()}
    index = {stratum: {item: i for i, item in enumerate(ids)} for stratum, ids in pool.items()}
    positions = [[np.array([index[s.stratum][i] for i in s.ids], dtype=np.int64) for s in h.samples] for h in halves]
    values = [[np.asarray(s.values, dtype=float) for s in h.samples] for h in halves]
    rng = np.random.default_rng(seed)
    shares = {role: np.full(replicates, np.nan) for role in {h.role for h in halves}}
    for r in range(replicates):
        counts = {
            stratum: np.bincount(rng.integers(0, len(ids), len(ids)), minlength=len(ids))
            for stratum, ids in sorted(pool.items())
        }
        tally: dict[str, list[int]] = {role: [0, 0] for role in shares}
        for h, where, vals in zip(halves, positions, values):
            drawn = [np.repeat(v, counts[s.stratum][w]) for s, w, v in zip(h.samples, where, vals)]
            p = test(drawn)
            if p is None or math.isnan(p):
                continue
            tally[h.role][0] += p < alpha
            tally[h.role][1] += 1
        for role, (k, n) in tally.items():
            if n:
                shares[role][r] = k / n
    return shares


def bootstrap_upper95(shares: Mapping[str, np.ndarray]) -> dict[str, float]:
    """Role -> the 97.5th percentile of its replicates' levels (NaN when no replicate tested a half)."""
    upper = {}
    for role, values in shares.items():
        finite = values[np.isfinite(values)]
        upper[role] = float(np.percentile(finite, 97.5)) if finite.size else math.nan
    return upper
