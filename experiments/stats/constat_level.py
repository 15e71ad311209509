"""How often ConStat's verdict in an audit flags a clean model (docs/methods.md, "ConStat in an audit"): null families
through the detector itself (`jaxcontam.detect.constat.constat_result` and the stage's headline at 0.05), each of 6
reference models (skills 0.2-0.9) and one audited model (skill uniform in 0.3-0.8) on four-option items that every
model answers by one relation: skill s gives accuracy 1/4 + 3/4 s on the rephrased items and 1/4 + 3/4 s^1.5 on the
originals. With `--inflation`, that share of the audited model's originals is answered right regardless (power).

    python -m experiments.stats.constat_level [--families 300] [--items 40] [--resamples 1000] [--inflation 0]

Prints one JSON line: the share flagged with its 95% Clopper-Pearson interval.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from jaxcontam.data.item import Benchmark, Item
from jaxcontam.detect.constat import ConStatSettings, constat_result
from jaxcontam.detect.registry import FAMILY_DETECTORS
from jaxcontam.stats.intervals import clopper_pearson

CHANCE = 0.25
REFERENCE_SKILLS = (0.2, 0.35, 0.5, 0.65, 0.8, 0.9)


def family_rows(rng: np.random.Generator, skills: dict[str, float], bench: Benchmark, inflation: float) -> list:
    """(model, benchmark, rows) of every model; the audited model ("audited") with `inflation`."""
    n = len(bench)
    runs = []
    for model, skill in skills.items():
        original = rng.random(n) < CHANCE + (1 - CHANCE) * skill**1.5
        rephrased = rng.random(n) < CHANCE + (1 - CHANCE) * skill
        if model == "audited":
            original[: int(inflation * n)] = True
        rows = [
            {"id": item.id, "correct_original": float(o), "correct_rephrased": float(r)}
            for item, o, r in zip(bench, original, rephrased)
        ]
        runs.append((model, bench, rows))
    return runs


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", type=int, default=300)
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--inflation", type=float, default=0.0)
    args = parser.parse_args(argv)
    stage = FAMILY_DETECTORS["constat"]
    assert stage.headlines is not None
    rng = np.random.default_rng(0)
    bench = Benchmark(
        "quiz",
        "test",
        tuple(Item(f"q{i}", "quiz", f"q{i}?", i % 4, choices=("a", "b", "c", "d")) for i in range(args.items)),
    )
    references = {f"ref-{i}": skill for i, skill in enumerate(REFERENCE_SKILLS)}
    settings = ConStatSettings(reference_models=tuple(references), resamples=args.resamples)
    flagged, untested = 0, 0
    for _ in range(args.families):
        skills = {"audited": float(rng.uniform(0.3, 0.8)), **references}
        family = stage.family_input(family_rows(rng, skills, bench, args.inflation), seed=int(rng.integers(2**31)))
        verdict = stage.headlines(constat_result(family, settings), 0.05)[("audited", "quiz", "test")]
        untested += verdict.contaminated is None
        flagged += bool(verdict.contaminated)
    tested = args.families - untested
    interval = clopper_pearson(flagged, tested)
    print(
        json.dumps(
            {
                "families": args.families,
                "items": args.items,
                "resamples": args.resamples,
                "inflation": args.inflation,
                "untested": untested,
                "flagged": flagged,
                "share": flagged / tested,
                "ci95": [round(interval.low, 4), round(interval.high, 4)],
            }
        )
    )


if __name__ == "__main__":
    main()
