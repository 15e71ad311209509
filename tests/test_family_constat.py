"""ConStat as a detector across the audit's models (`detect.constat`, `detectors/constat.py`): its entry per audited
(model, benchmark) is `stats.constat.constat_test` on the same per-item correctness (original and rephrased sides,
the random guesser at the items' chance accuracy); fewer than 5 reference models, no shared items and reference
models that score alike are "not tested" with the reason; the config names the reference models by their [[model]]
names; the verdict holds its level under the null in simulation; summary.json reads back to the same content."""

import dataclasses
import json
import math

import numpy as np
import pytest

from jaxcontam.audit.config import AuditConfig, BenchmarkEntry, ModelEntry, config_from_toml
from jaxcontam.data.item import Benchmark, Item
from jaxcontam.detect.constat import ConStatFamilyResult, ConStatSettings, constat_result
from jaxcontam.detect.json_values import json_ready
from jaxcontam.detect.registry import FAMILY_DETECTORS
from jaxcontam.errors import JaxcontamError
from jaxcontam.report.summary_schema import AuditSummary
from jaxcontam.stats.constat import constat_test

OPTIONS = 4
CHANCE = 1 / OPTIONS


def benchmark(n: int, name: str = "quiz") -> Benchmark:
    items = [Item(f"{name}/{i}", name, f"question {i}?", i % OPTIONS, choices=("a", "b", "c", "d")) for i in range(n)]
    return Benchmark(name=name, split="test", items=tuple(items))


def correctness(rng, skill: float, n: int, inflation: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """One model's 0/1 correctness on n items: skill s gives accuracy chance + (1 - chance) s on the rephrased items
    and chance + (1 - chance) s^1.5 on the originals, the one relation every clean model follows; `inflation`: that
    share of the originals answered right regardless (contamination)."""
    original = rng.random(n) < CHANCE + (1 - CHANCE) * skill**1.5
    rephrased = rng.random(n) < CHANCE + (1 - CHANCE) * skill
    original[: int(inflation * n)] = True
    return original.astype(float), rephrased.astype(float)


def family_input(rng, skills: dict, n: int, inflation: dict | None = None, bench: Benchmark | None = None):
    """The family stage's input: every model's rows on one benchmark of n items (model name -> skill)."""
    bench = bench or benchmark(n)
    runs = []
    for model, skill in skills.items():
        original, rephrased = correctness(rng, skill, n, (inflation or {}).get(model, 0.0))
        rows = [
            {"id": item.id, "correct_original": o, "correct_rephrased": r, "unread": "left out"}
            for item, o, r in zip(bench, original, rephrased)
        ]
        runs.append((model, bench, rows))
    return FAMILY_DETECTORS["constat"].family_input(runs, seed=0)


REFERENCES = {f"ref-{i}": skill for i, skill in enumerate((0.2, 0.35, 0.5, 0.65, 0.8, 0.9))}


def test_each_audited_models_entry_is_constat_test_on_its_correctness():
    rng = np.random.default_rng(0)
    family = family_input(rng, {"audited": 0.5, **REFERENCES, "contaminated": 0.5}, 60, {"contaminated": 0.5})
    assert all(set(row) == {"id", "correct_original", "correct_rephrased"} for run in family.runs for row in run.rows)
    settings = ConStatSettings(reference_models=tuple(REFERENCES), resamples=200)
    result = constat_result(family, settings)
    assert [entry.model for entry in result.entries] == ["audited", "contaminated"]  # the references are not tested
    by_model = {run.model: run for run in family.runs}

    def side(model, column):
        return [row[column] for row in by_model[model].rows]

    for entry in result.entries:
        expected = constat_test(
            side(entry.model, "correct_original"),
            side(entry.model, "correct_rephrased"),
            [side(m, "correct_original") for m in REFERENCES],
            [side(m, "correct_rephrased") for m in REFERENCES],
            resamples=200,
            seed=0,
            chance=(CHANCE, CHANCE),
        )
        interval = expected.confidence_interval(0.95)
        assert entry.status.ran and (entry.n, entry.n_models, entry.chance) == (60, 6, CHANCE)
        assert (entry.statistic, entry.pvalue, entry.predicted) == (
            expected.statistic,
            expected.pvalue,
            expected.predicted,
        )
        assert entry.ci95 == (interval.low, interval.high) and entry.accuracy_original == expected.actual
        assert entry.accuracy_rephrased == np.mean(side(entry.model, "correct_rephrased"))
    verdicts = FAMILY_DETECTORS["constat"].headlines(result, 0.05)  # type: ignore[misc]
    contaminated = verdicts[("contaminated", "quiz", "test")]
    assert contaminated.contaminated is True and contaminated.pvalue < 0.05 and not contaminated.swept


def test_fewer_than_five_references_no_shared_items_and_alike_references_are_not_tested():
    rng = np.random.default_rng(1)
    four = dict(list(REFERENCES.items())[:4])
    result = constat_result(
        family_input(rng, {"audited": 0.5, **four}, 30), ConStatSettings(reference_models=tuple(four), resamples=20)
    )
    (entry,) = result.entries
    assert not entry.status.ran and math.isnan(entry.pvalue)
    assert "4 reference model(s) on this benchmark (ref-0, ref-1, ref-2, ref-3); ConStat needs at least 5" in (
        entry.status.reason or ""
    )
    verdict = FAMILY_DETECTORS["constat"].headlines(result, 0.05)[("audited", "quiz", "test")]  # type: ignore[misc]
    assert verdict.contaminated is None and verdict.reason == entry.status.reason

    family = family_input(rng, {"audited": 0.5, **REFERENCES}, 30)
    unrephrased = dataclasses.replace(
        family,
        runs=tuple(
            dataclasses.replace(run, rows=tuple(row | {"correct_rephrased": math.nan} for row in run.rows))
            for run in family.runs
        ),
    )
    (entry,) = constat_result(unrephrased, ConStatSettings(reference_models=tuple(REFERENCES))).entries
    assert entry.status.reason == "no item has its original and its rephrased question answered by every model"

    alike = dataclasses.replace(
        family,
        runs=tuple(
            run if run.model == "audited" else dataclasses.replace(run, rows=family.runs[1].rows) for run in family.runs
        ),
    )
    (entry,) = constat_result(alike, ConStatSettings(reference_models=tuple(REFERENCES), resamples=20)).entries
    assert "the reference models score too alike" in (entry.status.reason or "") and entry.n == 30


def test_the_verdict_holds_its_level_under_the_null():
    """150 null families (the audited model follows the references' relation), small bootstraps: the
    verdict at 0.05 flags at most its level plus binomial noise; families with half of the originals answered right
    regardless are flagged."""
    rng = np.random.default_rng(2)
    settings = ConStatSettings(reference_models=tuple(REFERENCES), resamples=40)
    headlines = FAMILY_DETECTORS["constat"].headlines
    assert headlines is not None
    flagged = []
    for _ in range(150):
        skill = rng.uniform(0.3, 0.8)
        result = constat_result(family_input(rng, {"audited": skill, **REFERENCES}, 40), settings)
        flagged.append(headlines(result, 0.05)[("audited", "quiz", "test")].contaminated)
    assert None not in flagged
    assert np.mean(flagged) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 150)  # 0.103: three standard errors
    planted = [
        headlines(
            constat_result(family_input(rng, {"audited": 0.5, **REFERENCES}, 100, {"audited": 0.5}), settings), 0.05
        )[("audited", "quiz", "test")].contaminated
        for _ in range(10)
    ]
    assert np.mean(planted) >= 0.7  # an expected gain of 0.24 on 100 items


def config(raw_constat: dict | None, stages=None) -> AuditConfig:
    raw = {
        "model": [{"path": f"m{i}", "name": f"m{i}"} for i in range(6)],
        "benchmark": [{"name": "copa"}],
    }
    if raw_constat is not None:
        raw["constat"] = raw_constat
    built = config_from_toml(raw, __import__("pathlib").Path("."), "audit.toml")
    return built if stages is None else dataclasses.replace(built, stages=stages)


def test_the_table_turns_it_on_and_names_the_reference_models():
    assert config(None).family == {}
    chosen = config({"reference_models": ["m1", "m2", "m3", "m4", "m5"], "resamples": 500})
    assert chosen.family == {"constat": ConStatSettings(("m1", "m2", "m3", "m4", "m5"), 500)}
    assert chosen.settings()["constat"] == {"reference_models": ("m1", "m2", "m3", "m4", "m5"), "resamples": 500}
    with pytest.raises(JaxcontamError, match=r"'m9' is no \[\[model\]\] of this audit \(its models: m0, m1"):
        config({"reference_models": ["m1", "m9"]})
    with pytest.raises(JaxcontamError, match="names m1 twice"):
        config({"reference_models": ["m1", "m1"]})
    with pytest.raises(JaxcontamError, match="unknown key"):
        config({"references": ["m1"]})
    with pytest.raises(JaxcontamError, match=r"\[constat\] alpha"):
        config({"alpha": 0.1})
    with pytest.raises(JaxcontamError, match="reads the per-item column.*correct_original.*add pacost"):
        config({"reference_models": ["m1"]}, stages=("likelihood",))
    with pytest.raises(JaxcontamError, match="resamples = 1 is out of range"):
        config({"resamples": 1})
    with pytest.raises(JaxcontamError, match="constat settings must be a ConStatSettings"):
        AuditConfig(models=(ModelEntry("m", "m"),), benchmarks=(BenchmarkEntry("copa"),), family={"constat": {}})


def test_summary_json_reads_back_to_the_same_content():
    rng = np.random.default_rng(3)
    result = constat_result(
        family_input(rng, {"audited": 0.5, **REFERENCES, "few": 0.4}, 30),
        ConStatSettings(reference_models=tuple(REFERENCES), resamples=50),
    )
    untested = dataclasses.replace(result.entries[0], status=result.entries[0].status.no_test("why"))
    result = dataclasses.replace(result, entries=(*result.entries, untested))
    summary = AuditSummary(2, "x", 0.05, "holm", {}, (), None, family={"constat": result})
    written = json.loads(json.dumps(json_ready(summary.to_dict())))
    assert written["family"]["constat"]["entries"][0]["ci95"] == list(result.entries[0].ci95)
    read = AuditSummary.from_dict(written)
    assert isinstance(read.family["constat"], ConStatFamilyResult)
    assert json.loads(json.dumps(json_ready(read.to_dict()))) == written
    assert AuditSummary.from_dict({"runs": []}).family == {}  # written before `family` existed
    with pytest.raises(JaxcontamError, match="summary.json family constat: not an entry"):
        AuditSummary.from_dict({"runs": [], "family": {"constat": {"entries": 3}}})
