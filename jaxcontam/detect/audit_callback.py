# pyright: standard
"""Contamination detectors run on a model's current weights inside the training process.

`AuditCallback` (also `jaxcontam.AuditCallback`) plugs into a training loop (`jaxcontam.training.train(...,
callback=..., callback_every=N)`, or any loop of the user's that calls it with its params): it makes the audited
model from the live params (no checkpoint written, no reload) and runs the shared audit core
(`jaxcontam.detect.audit_core`, the same one `jaxcontam audit` runs) on each benchmark: `pacost`, `likelihood` and
`exchangeability` (Oren et al.), with each signal against known labels. Each result records the seconds its
detectors took, so audit cost can be tracked alongside detection. For `jaxcontam.training.train`'s HF-named
weights, `jaxcontam.training.audit_callback.hf_weights_callback` makes the model from them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import jax

from jaxcontam.detect.audit_core import AuditSettings, AuditTarget, BenchmarkAudit, ReferenceModel, audit_benchmark

__all__ = ["AuditCallback", "AuditSettings", "AuditTarget", "ReferenceModel", "audit_model"]


def audit_model(
    model,
    targets: Sequence[AuditTarget],
    settings: AuditSettings = AuditSettings(),
    reference: ReferenceModel | None = None,
) -> dict[str, BenchmarkAudit]:
    """{benchmark name: its `BenchmarkAudit`} for every target; `reference`: a model believed clean, given to every
    detector (`StageInput.reference`)."""
    return {target.benchmark.name: audit_benchmark(model, target, settings, reference=reference) for target in targets}


class AuditCallback:
    """`callback(step, params)`: audits the live params of a training run; results pile up in `history`.

    `model_fn(params) -> model` makes the audited model (a `jaxcontam.Model` or any `LanguageModel`-backed one)
    from the params the loop passes, e.g. `lambda params: dataclasses.replace(model, params=params)` for a model
    wrapped once (`jaxcontam.flax_models`): its `LanguageModel` stays the same object, so every audit reuses the steps
    compiled by the first. `every`: audit only at steps that are multiples of it (so the loop may call the
    callback every step). `log`: where the one-line summary of each audit goes (print, or the user's logger).
    `history`: one {"step", "results" ({benchmark: BenchmarkAudit}), "seconds"} per audit. `reference`: a model
    believed clean (e.g. the base checkpoint the run started from), loaded once and given to every detector at every
    audit (`detect.stage.ReferenceModel`).
    """

    def __init__(
        self,
        model_fn: Callable[[Any], Any],
        targets: Sequence[AuditTarget],
        settings: AuditSettings = AuditSettings(),
        log: Callable[[str], None] = print,
        every: int = 1,
        reference: ReferenceModel | None = None,
    ):
        if every < 1:
            raise ValueError(f"every must be >= 1 (audit every N steps), got {every}")
        self.model_fn, self.targets, self.settings, self.log, self.every = model_fn, targets, settings, log, every
        self.reference = reference
        self.history: list[dict] = []

    def __call__(self, step: int, params) -> dict[str, BenchmarkAudit] | None:
        """The audit's results at steps that are multiples of `every`; None (nothing run) at the others."""
        if step % self.every:
            return None
        jax.block_until_ready(params)  # steps are dispatched asynchronously: time the audit, not the training
        start = time.perf_counter()
        results = audit_model(self.model_fn(params), self.targets, self.settings, self.reference)
        self.history.append({"step": step, "results": results, "seconds": time.perf_counter() - start})
        self.log(f"step {step}: audit of {', '.join(results)} in {self.history[-1]['seconds']:.1f} s")
        return results
