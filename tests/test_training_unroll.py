"""The training step's unrolled layers (the CPU default) compute the same step as the scan."""

import jax
import jax.numpy as jnp
import numpy as np

from helpers import TINY_LLAMA_CONFIG
from jaxcontam.models.spec import from_hf_config
from jaxcontam.training import init_hf_tensors, packed_batches
from jaxcontam.training.loop import fit, hf_params, training_spec

CONFIG = {**TINY_LLAMA_CONFIG, "num_hidden_layers": 3}


def _trained(unroll: bool) -> dict:
    rng = np.random.default_rng(0)
    docs = [rng.integers(3, 64, size=int(n)).tolist() for n in rng.integers(5, 30, size=24)]
    weights = {k: jnp.asarray(v) for k, v in init_hf_tensors(CONFIG, seed=0).items()}
    result = fit(
        from_hf_config(CONFIG),
        weights,
        packed_batches(docs, seq_len=32, batch_size=4, epochs=2),
        steps=5,
        to_params=hf_params,
        learning_rate=1e-2,
        warmup=1,
        log=lambda _: None,
        unroll_layers=unroll,
    )
    return jax.tree.map(np.asarray, result.weights)


def test_unrolled_and_scanned_layers_train_to_the_same_weights():
    scanned, unrolled = _trained(False), _trained(True)
    assert scanned.keys() == unrolled.keys()
    moved = 0
    for name in scanned:
        np.testing.assert_allclose(unrolled[name], scanned[name], rtol=1e-4, atol=1e-5, err_msg=name)
        moved += not np.allclose(scanned[name], init_hf_tensors(CONFIG, seed=0)[name])
    assert moved == len(scanned)  # every tensor trained: the comparison is not between untouched weights


def test_layers_unroll_by_default_on_cpu_only_for_the_decoder():
    spec = from_hf_config(CONFIG)
    assert training_spec(spec).execution.unroll_layers is (jax.default_backend() == "cpu")
    assert training_spec(spec, unroll_layers=False).execution.unroll_layers is False
    other = object()  # any other model (a `ModelInterface`) is traced as it is
    assert training_spec(other) is other
