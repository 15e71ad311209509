"""Contamination detectors run on a model's current weights inside the training process.

`AuditCallback` plugs into a training loop (`train(..., callback=..., callback_every=N)`, or any loop that calls
it with its params): it wraps the live params as a `Model` (no checkpoint written, no reload) and runs the chosen
detectors on each benchmark:

- `likelihood`: mean log-prob, zlib ratio, Min-K% and Min-K%++ of each item's solved text; with known
  contamination labels, each detector's AUC (contaminated vs clean) and its one-sided Mann-Whitney p-value;
- `pacost`: answers to the original and rephrased questions, their confidences and the paired test
  (`jaxcontam.detect.pacost`), plus accuracy on the contaminated and clean items;
- `sharded`: the sharded likelihood test of Oren et al. on the items in benchmark order, with the fewest
  shards of at least `shards` whose concatenations fit the model's context.
Each result records the seconds its detector took, so audit cost can be tracked alongside detection.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxcontam.audit.summary import DETECTORS as LIKELIHOOD_SIGNALS
from jaxcontam.audit.summary import LOWER_MEANS_SEEN
from jaxcontam.detect.pacost import PacostSettings, pacost_records, pacost_summary
from jaxcontam.models.model import Model
from jaxcontam.models.sharding import make_mesh
from jaxcontam.models.spec import from_hf_config
from jaxcontam.stats import separation
from jaxcontam.training.injection import FILE_SEPARATOR
from jaxcontam.training.weights import params_from_hf

DETECTORS = ("likelihood", "pacost", "sharded")


@dataclasses.dataclass(frozen=True)
class AuditTarget:
    """One benchmark to audit: its items in order, the accepted rephrasing of each (or None), known labels."""

    benchmark: object
    rephrasings: tuple
    contaminated: tuple | None = None  # bool per item when the truth is known


@dataclasses.dataclass(frozen=True)
class AuditPlan:
    detectors: tuple[str, ...] = DETECTORS
    pacost: PacostSettings = PacostSettings(confidence="answer_logprob")
    k: float = 0.2
    shards: int = 10
    permutations: int = 10
    seed: int = 0

    def __post_init__(self):
        unknown = sorted(set(self.detectors) - set(DETECTORS))
        if unknown:
            raise ValueError(f"unknown detector(s) {', '.join(unknown)}: use some of {', '.join(DETECTORS)}")


def model_from_weights(config: dict, tensors: dict, tokenizer, mesh=None) -> Model:
    """A `Model` over HF-named weights held in memory (e.g. the training loop's current parameters)."""
    spec = from_hf_config(config)
    params = params_from_hf({name: jnp.asarray(value) for name, value in tensors.items()}, spec)
    return Model(config=spec, params=params, tokenizer=tokenizer, mesh=mesh or make_mesh())


def _likelihood(model, target: AuditTarget, plan: AuditPlan) -> tuple[dict, list[dict]]:
    from jaxcontam.audit.run import likelihood_records

    rows = likelihood_records(model, target.benchmark, list(target.benchmark), plan.k)
    result = {name: {"mean": float(np.nanmean([r[name] for r in rows]))} for name in LIKELIHOOD_SIGNALS}
    if target.contaminated is not None:
        for name in LIKELIHOOD_SIGNALS:
            result[name] |= separation([r[name] for r in rows], target.contaminated, name not in LOWER_MEANS_SEEN)
    return result, rows


def _pacost(model, target: AuditTarget, plan: AuditPlan) -> tuple[dict, list[dict]]:
    items = list(target.benchmark)
    records = pacost_records(model, target.benchmark, items, list(target.rephrasings), plan.pacost)
    result = pacost_summary(records, plan.pacost, seed=plan.seed)
    result["accuracy"] = {"all": float(np.mean([r["correct_original"] for r in records]))}
    if target.contaminated is not None:
        for name, flag in (("contaminated", True), ("clean", False)):
            group = [r["correct_original"] for r, seen in zip(records, target.contaminated) if seen is flag]
            result["accuracy"][name] = float(np.mean(group)) if group else math.nan
    return result, records


def fitting_shards(lengths: Sequence[int], max_tokens: int, at_least: int) -> int | None:
    """The fewest contiguous shards (>= at_least, >= 2 items each) whose summed lengths all fit max_tokens."""
    from jaxcontam.detect.sharded_test import shard_bounds

    for shards in range(at_least, len(lengths) // 2 + 1):
        if all(sum(lengths[a:b]) <= max_tokens for a, b in shard_bounds(len(lengths), shards)):
            return shards
    return None


def _sharded(model, target: AuditTarget, plan: AuditPlan) -> tuple[dict, list[dict]]:
    from jaxcontam.detect.sharded_test import sharded_likelihood_test

    tokenizer, benchmark = model.tokenizer, target.benchmark
    examples = [tokenizer.encode(benchmark.solved_text(item) + FILE_SEPARATOR, add_special_tokens=False)
                for item in benchmark]
    shards = fitting_shards([len(e) for e in examples], model.config.max_position - 1, plan.shards)
    if shards is None:
        return {"pvalue": math.nan, "reason": "no sharding of the items fits the model's context"}, []
    test = sharded_likelihood_test(model, examples, num_shards=shards, permutations=plan.permutations,
                                   seed=plan.seed, prefix=[tokenizer.bos_token_id])
    return {"statistic": test.statistic, "pvalue": test.pvalue, "shards": shards,
            "permutations": plan.permutations}, []


_RUNNERS = {"likelihood": _likelihood, "pacost": _pacost, "sharded": _sharded}


def audit_model(model, targets: Sequence[AuditTarget], plan: AuditPlan = AuditPlan()) -> dict:
    """{benchmark name: {detector: result, "seconds": {...}, "rows": per-item records merged by position}}."""
    results = {}
    for target in targets:
        entry, rows, seconds = {}, [{"id": item.id} for item in target.benchmark], {}
        if target.contaminated is not None:
            for row, seen in zip(rows, target.contaminated):
                row["contaminated"] = bool(seen)
        for detector in plan.detectors:
            start = time.perf_counter()
            entry[detector], records = _RUNNERS[detector](model, target, plan)
            seconds[detector] = time.perf_counter() - start
            for row, record in zip(rows, records):
                row.update(record)
        results[target.benchmark.name] = entry | {"seconds": seconds, "rows": rows}
    return results


class AuditCallback:
    """`callback(step, params)`: audits the live params of a training run; results pile up in `history`.

    `model_fn(params) -> Model` makes the audited model from the params the loop passes, e.g.
    `lambda params: dataclasses.replace(model, params=params)` for a model wrapped once (`jaxcontam.flax`):
    its `LanguageModel` stays the same object, so every audit reuses the steps compiled by the first.
    `log`: where the one-line summary of each audit goes (print, or the user's logger).
    """

    def __init__(self, model_fn: Callable[[object], Model], targets: Sequence[AuditTarget],
                 plan: AuditPlan = AuditPlan(), log: Callable[[str], None] = print):
        self.model_fn, self.targets, self.plan, self.log = model_fn, targets, plan, log
        self.history: list[dict] = []

    @classmethod
    def for_hf_weights(cls, config: dict, tokenizer, targets: Sequence[AuditTarget], plan: AuditPlan = AuditPlan(),
                       log: Callable[[str], None] = print) -> AuditCallback:
        """For `training.train`, whose weights are HF-named tensors of `config`'s decoder."""
        mesh = make_mesh()
        return cls(lambda weights: model_from_weights(config, weights, tokenizer, mesh), targets, plan, log)

    def __call__(self, step: int, params) -> None:
        jax.block_until_ready(params)  # steps are dispatched asynchronously: time the audit, not the training
        start = time.perf_counter()
        results = audit_model(self.model_fn(params), self.targets, self.plan)
        self.history.append({"step": step, "results": results, "seconds": time.perf_counter() - start})
        self.log(f"step {step}: audit of {', '.join(results)} in {self.history[-1]['seconds']:.1f} s")
