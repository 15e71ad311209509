"""GradNorm against torch autograd on the same tiny Llama weights: per parameter tensor the p-norm of the gradient of
the mean token loss (mimir's statistic averages them), for untied and tied embeddings, and the gradient's dtype."""

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

import jaxcontam
from jaxcontam.detect.gradnorm import GradNormSettings, mean_tensor_norm
from jaxcontam.engine.gradients import loss_gradient_norms, tensor_names
from jaxcontam.errors import JaxcontamError

VOCAB = 96


def tiny_llama(path, tied: bool):
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        tie_word_embeddings=tied,
    )
    torch.manual_seed(3)
    reference = LlamaForCausalLM(config).eval()
    reference.save_pretrained(path)
    return reference


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict:
    """{tied: (our model, the torch model)} for untied and tied embeddings."""
    found = {}
    for tied in (False, True):
        path = tmp_path_factory.mktemp("gradnorm-llama")
        reference = tiny_llama(path, tied)
        found[tied] = (jaxcontam.load_model(str(path)), reference)
    return found


@pytest.fixture(scope="module")
def checkpoint(checkpoints):
    return checkpoints[False]


def torch_tensor_norms(reference, seq, p: float) -> list[float]:
    """torch's per-parameter p-norms of the gradient of -mean_t log p(x_t | x_<t), as mimir computes them."""
    reference.zero_grad()
    logits = reference(torch.tensor([seq])).logits[0, :-1].float()
    loss = -torch.log_softmax(logits, -1)[torch.arange(len(seq) - 1), torch.tensor(seq[1:])].mean()
    loss.backward()
    norms = [param.grad.detach().norm(p).item() for param in reference.parameters() if param.grad is not None]
    reference.zero_grad()
    return norms


SEQUENCES = [[5, 17, 3, 88, 41, 9, 12], [1, 2], list(range(10, 50)), [60, 61, 62, 63, 64, 65, 1, 7, 7, 7, 7]]


@pytest.mark.parametrize(("tied", "order"), [(False, 1.0), (False, 2.0), (False, math.inf), (True, math.inf)])
def test_every_tensors_gradient_norm_matches_torch_autograd(checkpoints, tied, order):
    """All four sequences in one call (different lengths, padding, one bucket), each against torch on its own."""
    model, reference = checkpoints[tied]
    ours = loss_gradient_norms(model, SEQUENCES, order=order, rows_per_batch=3)
    for seq, got in zip(SEQUENCES, ours):
        expected = torch_tensor_norms(reference, seq, order)
        assert len(got.names) == len(expected) == len(list(reference.parameters()))
        np.testing.assert_allclose(np.sort(got.norms), np.sort(expected), rtol=2e-4, atol=1e-7)
        assert mean_tensor_norm(got.norms) == pytest.approx(float(np.mean(expected)), rel=2e-4)


def test_tensor_names_count_each_layer_of_a_stacked_weight(checkpoint):
    model, _ = checkpoint
    names = tensor_names(model.params, model.config)
    assert "layers/wq[0]" in names and "layers/wq[1]" in names and "embed" in names
    assert len(names) == len(set(names))


def test_bfloat16_weights_take_the_gradient_in_float32_or_their_own_dtype(checkpoint):
    """Upcast: the same numbers as a float32 copy of the bfloat16 weights; in bfloat16: within bfloat16's rounding."""
    model, _ = checkpoint
    half = dataclasses.replace(model, params=jax.tree.map(lambda a: a.astype(jnp.bfloat16), model.params))
    widened = dataclasses.replace(model, params=jax.tree.map(lambda a: a.astype(jnp.float32), half.params))
    upcast = loss_gradient_norms(half, SEQUENCES[:2], order=2.0, rows_per_batch=3)
    exact = loss_gradient_norms(widened, SEQUENCES[:2], order=2.0, rows_per_batch=3)
    own = loss_gradient_norms(half, SEQUENCES[:2], order=2.0, upcast=False, rows_per_batch=3)
    for a, b, c in zip(upcast, exact, own):
        np.testing.assert_allclose(a.norms, b.norms, rtol=1e-5)
        np.testing.assert_allclose(c.norms, b.norms, rtol=0.05)
        assert not np.array_equal(c.norms, b.norms)  # really computed in bfloat16


def test_bad_orders_and_one_token_sequences_are_refused(checkpoint):
    model, _ = checkpoint
    with pytest.raises(JaxcontamError, match="use 1, 2 or inf"):
        loss_gradient_norms(model, SEQUENCES, order=3.0)
    with pytest.raises(JaxcontamError, match="at least two"):
        loss_gradient_norms(model, [[4]])
    with pytest.raises(JaxcontamError, match="norm"):
        GradNormSettings(norm="l3")  # type: ignore[arg-type]
