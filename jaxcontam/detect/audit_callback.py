"""Contamination detectors run on a model's current weights inside the training process.

`AuditCallback` (also `jaxcontam.AuditCallback`) plugs into a training loop (`jaxcontam.training.train(...,
callback=..., callback_every=N)`, or any loop of the user's that calls it with its params): it makes the audited model from the live params (no checkpoint written, no reload) and
runs the shared audit core (`jaxcontam.detect.audit_core`, the same one `jaxcontam audit` runs) on each
benchmark: `pacost`, `likelihood` and `exchangeability` (Oren et al.), with each signal against known labels.
Each result records the seconds its detectors took, so audit cost can be tracked alongside detection.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp

from jaxcontam.detect.audit_core import AuditSettings, AuditTarget, BenchmarkAudit, audit_benchmark
from jaxcontam.mesh import make_mesh
from jaxcontam.models.model import Model
from jaxcontam.models.spec import from_hf_config
from jaxcontam.training.weights import params_from_hf

__all__ = ["AuditCallback", "AuditSettings", "AuditTarget", "audit_model", "model_from_weights"]


def model_from_weights(config: dict, tensors: dict, tokenizer, mesh=None) -> Model:
    """A `Model` over HF-named weights held in memory (e.g. the training loop's current parameters)."""
    spec = from_hf_config(config)
    params = params_from_hf({name: jnp.asarray(value) for name, value in tensors.items()}, spec)
    return Model(config=spec, params=params, tokenizer=tokenizer, mesh=mesh or make_mesh())


def audit_model(model, targets: Sequence[AuditTarget], settings: AuditSettings = AuditSettings()
                ) -> dict[str, BenchmarkAudit]:
    """{benchmark name: its `BenchmarkAudit`} for every target."""
    return {target.benchmark.name: audit_benchmark(model, target, settings) for target in targets}


class AuditCallback:
    """`callback(step, params)`: audits the live params of a training run; results pile up in `history`.

    `model_fn(params) -> Model` makes the audited model from the params the loop passes, e.g.
    `lambda params: dataclasses.replace(model, params=params)` for a model wrapped once (`jaxcontam.flax`):
    its `LanguageModel` stays the same object, so every audit reuses the steps compiled by the first.
    `every`: audit only at steps that are multiples of it (so the loop may call the callback every step).
    `log`: where the one-line summary of each audit goes (print, or the user's logger).
    `history`: one {"step", "results" ({benchmark: BenchmarkAudit}), "seconds"} per audit.
    """

    def __init__(self, model_fn: Callable[[object], Model], targets: Sequence[AuditTarget],
                 settings: AuditSettings = AuditSettings(), log: Callable[[str], None] = print, every: int = 1):
        if every < 1:
            raise ValueError(f"every must be >= 1 (audit every N steps), got {every}")
        self.model_fn, self.targets, self.settings, self.log, self.every = model_fn, targets, settings, log, every
        self.history: list[dict] = []

    @classmethod
    def for_hf_weights(cls, config: dict, tokenizer, targets: Sequence[AuditTarget],
                       settings: AuditSettings = AuditSettings(), log: Callable[[str], None] = print
                       ) -> AuditCallback:
        """For `training.train`, whose weights are HF-named tensors of `config`'s decoder."""
        mesh = make_mesh()
        return cls(lambda weights: model_from_weights(config, weights, tokenizer, mesh), targets, settings, log)

    def __call__(self, step: int, params) -> dict[str, BenchmarkAudit] | None:
        """The audit's results at steps that are multiples of `every`; None (nothing run) at the others."""
        if step % self.every:
            return None
        jax.block_until_ready(params)  # steps are dispatched asynchronously: time the audit, not the training
        start = time.perf_counter()
        results = audit_model(self.model_fn(params), self.targets, self.settings)
        self.history.append({"step": step, "results": results, "seconds": time.perf_counter() - start})
        self.log(f"step {step}: audit of {', '.join(results)} in {self.history[-1]['seconds']:.1f} s")
        return results
