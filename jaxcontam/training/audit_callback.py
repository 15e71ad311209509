"""The in-training audit over `jaxcontam.training.train`'s HF-named weights. The callback itself lives beside the
audit core (`jaxcontam.detect.audit_callback`, also `jaxcontam.AuditCallback`); it is re-exported here, its
import path in earlier releases."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax.numpy as jnp

from jaxcontam.detect.audit_callback import AuditCallback, AuditSettings, AuditTarget, audit_model
from jaxcontam.mesh import make_mesh
from jaxcontam.models.model import Model
from jaxcontam.models.spec import from_hf_config
from jaxcontam.training.weights import params_from_hf

__all__ = ["AuditCallback", "AuditSettings", "AuditTarget", "audit_model", "hf_weights_callback", "model_from_weights"]


def model_from_weights(config: dict, tensors: dict, tokenizer, mesh=None) -> Model:
    """A `Model` over HF-named weights held in memory (e.g. the training loop's current parameters)."""
    spec = from_hf_config(config)
    params = params_from_hf({name: jnp.asarray(value) for name, value in tensors.items()}, spec)
    return Model(config=spec, params=params, tokenizer=tokenizer, mesh=mesh or make_mesh())


def hf_weights_callback(
    config: dict,
    tokenizer,
    targets: Sequence[AuditTarget],
    settings: AuditSettings = AuditSettings(),
    log: Callable[[str], None] = print,
) -> AuditCallback:
    """An `AuditCallback` for `training.train`, whose weights are HF-named tensors of `config`'s decoder."""
    mesh = make_mesh()
    return AuditCallback(lambda weights: model_from_weights(config, weights, tokenizer, mesh), targets, settings, log)
