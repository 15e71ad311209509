"""Programs compiled for a real TPU topology on this CPU machine (libtpu's compiler, abstract v5e devices).

`jax.experimental.topologies` gives the devices of a v5e:2x4 slice without the hardware; jit(...).lower(...)
.compile() on ShapeDtypeStructs placed on them runs XLA's TPU compiler, whose optimized HLO shows every
collective the program would run.
"""

import functools
import re

import jax
import jax.numpy as jnp
import pytest
from jax.experimental import topologies
from jax.sharding import NamedSharding

from helpers import collective_shapes, largest_collective_elements
from jaxcontam.kernels.vocab_blocks import token_logprob_stats
from jaxcontam.kernels.vocab_logprobs import fused_token_logprob_stats

BATCH, SEQ, HIDDEN, VOCAB = 8, 64, 256, 4000  # 1000 vocabulary rows per "model" shard: a ragged last block


@pytest.fixture(scope="module")
def tpu_mesh():
    """data=2 x model=4 over the 8 chips of a v5e:2x4 slice."""
    devices = topologies.get_topology_desc(platform="tpu", topology_name="v5e:2x4").devices
    return jax.make_mesh((2, 4), ("data", "model"), (jax.sharding.AxisType.Auto,) * 2, devices=devices)


def head_inputs(mesh, layout="vd", bias=False):
    """Hidden states over "data", the output matrix (and bias) over "model", as `models.sharding` places them."""

    def struct(shape, dtype, *spec):
        return jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(mesh, jax.P(*spec)))

    weight = (
        struct((VOCAB, HIDDEN), jnp.bfloat16, "model", None)
        if layout == "vd"
        else struct((HIDDEN, VOCAB), jnp.bfloat16, None, "model")
    )
    args = (
        struct((BATCH, SEQ, HIDDEN), jnp.bfloat16, "data", None, None),
        weight,
        struct((BATCH, SEQ), jnp.int32, "data", None),
    )
    return args, (struct((VOCAB,), jnp.float32, "model") if bias else None)


def test_the_collective_check_sees_a_gathered_output_matrix(tpu_mesh):
    """The check below is not vacuous: without a mesh context the head is not split by hand (shard_map), and
    XLA's own partitioning of the blockwise scan gathers the whole [V, D] matrix onto every chip."""
    args, _ = head_inputs(tpu_mesh)
    hlo = jax.jit(functools.partial(token_logprob_stats, vocab_block=512)).lower(*args).compile().as_text()
    assert ("all-gather", [(VOCAB, HIDDEN)]) in collective_shapes(hlo)


@pytest.mark.parametrize(
    "head,layout,bias,softcap",
    [
        (functools.partial(token_logprob_stats, vocab_block=512), "vd", False, None),
        (functools.partial(token_logprob_stats, vocab_block=512), "dv", True, 30.0),
        (functools.partial(fused_token_logprob_stats, vocab_block=256, row_block=64, d_block=128), "vd", False, 30.0),
        (functools.partial(fused_token_logprob_stats, vocab_block=256, row_block=64, d_block=128), "dv", True, None),
    ],
    ids=["jnp-vd", "jnp-dv-bias-softcap", "kernel-vd-softcap", "kernel-dv-bias"],
)
def test_vocab_head_keeps_the_vocabulary_sharded_on_tpu(tpu_mesh, head, layout, bias, softcap):
    """No collective moves more than one float per row: the [V, D] matrix and the logits stay on their shard."""
    args, bias_arg = head_inputs(tpu_mesh, layout, bias)

    def step(hidden, weight, targets, bias):
        return head(hidden, weight, targets, bias=bias, layout=layout, softcap=softcap, with_stats=True)

    with jax.set_mesh(tpu_mesh):
        hlo = jax.jit(step).lower(*args, bias_arg).compile().as_text()
    rows_per_device = BATCH * SEQ // tpu_mesh.shape["data"]
    assert 0 < largest_collective_elements(hlo) <= rows_per_device, collective_shapes(hlo)
    if head.func is fused_token_logprob_stats:
        assert 'custom_call_target="tpu_custom_call"' in hlo  # the Pallas kernel lowered through Mosaic


# Attention: the splash kernel (Pallas, Mosaic) on TPU meshes.


def gemma2_shaped_forward(mesh, seq, implementation="auto", grad=False):
    """Optimized HLO and per-device temporaries of a gemma2-shaped model's forward (soft-capped logits, a 256-token
    sliding window then a global layer, 8 query / 4 key-value heads) over 4 packed rows of `seq` tokens; with
    `grad`, of the gradient of its sum with respect to the weights."""
    import transformers as tf

    from jaxcontam.models import decoder
    from jaxcontam.models.spec import from_hf_config
    from jaxcontam.planning import plan as planning

    config = tf.Gemma2Config(
        vocab_size=512,
        hidden_size=HIDDEN,
        intermediate_size=384,
        num_hidden_layers=2,
        num_attention_heads=8,
        num_key_value_heads=4,
        head_dim=128,
        sliding_window=256,
        attn_logit_softcapping=50.0,
        query_pre_attn_scalar=128,
        max_position_embeddings=8192,
    )
    spec = from_hf_config(config.to_dict(), attention=implementation)
    assert spec.layer_windows == (256, 0) and spec.attn_logit_softcap == 50.0
    params = planning.abstract_params(spec, jnp.bfloat16, mesh)
    rows = [planning.rows(mesh, (4, seq)) for _ in range(3)]

    def forward(params, tokens, positions, segments):
        hidden = decoder.hidden_states(params, spec, tokens, positions, segments)
        return hidden.astype(jnp.float32).sum() if grad else hidden

    with jax.set_mesh(mesh):
        compiled = jax.jit(jax.grad(forward) if grad else forward).lower(params, *rows).compile()
    return compiled.as_text(), compiled.memory_analysis().temp_size_in_bytes


def score_tiles(hlo: str) -> list[str]:
    """Result shapes of dots with a query and a key dimension (two of >= 512): attention scores in XLA's HLO."""
    shapes = re.findall(r"=\s*[a-z0-9]+\[([\d,]*)\]\S*\s+(?:dot|convolution)\(", hlo)
    return [s for s in shapes if sum(int(d) >= 512 for d in s.split(",") if d) >= 2]


def test_the_score_check_sees_the_jnp_attention(tpu_mesh):
    """The check below is not vacuous: the portable path's [512, 512] score tiles are dots in XLA's HLO."""
    hlo, _ = gemma2_shaped_forward(tpu_mesh, 1024, implementation="jnp")
    assert score_tiles(hlo) and 'custom_call_target="tpu_custom_call"' not in hlo


def test_attention_is_the_splash_kernel_on_tpu(tpu_mesh):
    """On a TPU mesh the forward's attention is one Mosaic call per window size (causal + segment ids + sliding
    window + soft-capping, switched by the layer scan), no score tile is left in XLA's HLO, the kernel's
    shard_map (rows over "data", heads over "model") moves nothing (the only collectives are the tensor-parallel
    sums of the attention and MLP outputs), and the per-device temporaries grow at most linearly with the
    context."""
    temps = {}
    for seq in (1024, 2048):
        hlo, temps[seq] = gemma2_shaped_forward(tpu_mesh, seq)
        assert hlo.count('custom_call_target="tpu_custom_call"') == 2, seq
        assert not score_tiles(hlo), score_tiles(hlo)
        layer_output = (4 // tpu_mesh.shape["data"], seq, HIDDEN)
        assert {(op, tuple(shapes)) for op, shapes in collective_shapes(hlo)} == {("all-reduce", (layer_output,))}
    assert 0 < temps[2048] < 2.3 * temps[1024], temps


def test_splash_backward_compiles_on_tpu(tpu_mesh):
    """Training differentiates the same forward: the kernel's forward, dq and dkv calls for each window size."""
    hlo, _ = gemma2_shaped_forward(tpu_mesh, 1024, grad=True)
    assert hlo.count('custom_call_target="tpu_custom_call"') == 6
    assert not score_tiles(hlo)
