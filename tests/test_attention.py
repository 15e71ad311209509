"""Query-blocked attention over packed rows against attention written from its definition (float64 loops); the
platform paths (the TPU splash kernel in Pallas interpret mode, cuDNN lowered for CUDA) against the jnp path."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import transformers as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxcontam.errors import JaxcontamError
from jaxcontam.models.attention import packed_attention
from jaxcontam.models.spec import from_hf_config

HEADS, KV_HEADS, HEAD_DIM = 4, 2, 8


def spec_with(softcap):
    shape = {
        "vocab_size": 11,
        "hidden_size": 32,
        "intermediate_size": 8,
        "num_hidden_layers": 1,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "head_dim": HEAD_DIM,
        "max_position_embeddings": 64,
    }
    config = (
        tf.Gemma2Config(**shape, attn_logit_softcapping=softcap, query_pre_attn_scalar=HEAD_DIM)
        if softcap
        else tf.LlamaConfig(**shape)
    )
    return from_hf_config(config.to_dict())


def reference(q, k, v, positions, segments, window, scale, softcap):
    """out[b, t, h] = sum over allowed keys s of softmax_s(score) v[b, s, h // group]; None where nothing is allowed."""
    batch, length, heads, _ = q.shape
    group = heads // k.shape[2]
    out = np.full(q.shape, np.nan)
    for b in range(batch):
        for t in range(length):
            keys = [
                s
                for s in range(length)
                if segments[b, s] == segments[b, t] > 0
                and positions[b, s] <= positions[b, t]
                and (window == 0 or positions[b, t] - positions[b, s] < window)
            ]
            if not keys:
                continue
            for h in range(heads):
                scores = np.array([q[b, t, h] @ k[b, s, h // group] for s in keys]) * scale
                if softcap:
                    scores = softcap * np.tanh(scores / softcap)
                weights = np.exp(scores - scores.max())
                out[b, t, h] = (weights / weights.sum()) @ v[b, keys, h // group]
    return out


def packed_rows(lengths_per_row, width):
    positions = np.zeros((len(lengths_per_row), width), np.int32)
    segments = np.zeros((len(lengths_per_row), width), np.int32)
    for r, lengths in enumerate(lengths_per_row):
        offset = 0
        for seg, n in enumerate(lengths, start=1):
            n = min(n, width - offset)
            positions[r, offset : offset + n] = np.arange(n)
            segments[r, offset : offset + n] = seg
            offset += n
    return positions, segments


@settings(max_examples=25, deadline=None)
@given(
    rows=st.lists(st.lists(st.integers(1, 9), min_size=1, max_size=4), min_size=1, max_size=2),
    width=st.integers(5, 23),
    block=st.integers(2, 8),
    window=st.sampled_from([0, 3]),
    softcap=st.sampled_from([None, 2.0]),
    seed=st.integers(0, 99),
)
def test_blocked_attention_is_attention(rows, width, block, window, softcap, seed):
    spec = spec_with(softcap)
    rng = np.random.default_rng(seed)
    positions, segments = packed_rows(rows, width)
    q = rng.normal(size=(len(rows), width, HEADS, HEAD_DIM))
    k, v = (rng.normal(size=(len(rows), width, KV_HEADS, HEAD_DIM)) for _ in range(2))
    found = np.asarray(
        packed_attention(
            spec,
            *(jnp.asarray(x, jnp.float32) for x in (q, k, v)),
            jnp.asarray(positions),
            jnp.asarray(segments),
            jnp.int32(window),
            block=block,
        )
    )
    expected = reference(q, k, v, positions, segments, window, spec.attn_scale, spec.attn_logit_softcap)
    real = segments > 0
    np.testing.assert_allclose(found[real], expected[real], atol=2e-5)
    assert np.isfinite(found).all()


def test_blocked_attention_gradients_equal_the_dense_ones():
    """Skipped key blocks (a lax.cond) keep reverse mode exact: training through long rows sees the same grads."""
    spec = spec_with(None)
    q, k, v, positions, segments = random_inputs([[7, 5], [12]], 14, seed=3)

    def loss(block, q, k, v):
        out = packed_attention(spec, q, k, v, positions, segments, jnp.int32(0), block=block)
        return jnp.sum(jnp.where((segments > 0)[..., None, None], out, 0.0) ** 2)

    blocked = jax.grad(functools.partial(loss, 4), argnums=(0, 1, 2))(q, k, v)
    dense = jax.grad(functools.partial(loss, 16), argnums=(0, 1, 2))(q, k, v)
    for found, expected in zip(blocked, dense):
        np.testing.assert_allclose(np.asarray(found), np.asarray(expected), atol=2e-5)


# The platform paths: the splash kernel (TPU; here in Pallas interpret mode) and cuDNN (lowered for CUDA).


def random_inputs(rows, width, seed=0):
    rng = np.random.default_rng(seed)
    positions, segments = packed_rows(rows, width)
    q = rng.normal(size=(len(rows), width, HEADS, HEAD_DIM))
    k, v = (rng.normal(size=(len(rows), width, KV_HEADS, HEAD_DIM)) for _ in range(2))
    return [jnp.asarray(x, jnp.float32) for x in (q, k, v)] + [jnp.asarray(positions), jnp.asarray(segments)]


@pytest.mark.parametrize("window,softcap", [(0, None), (7, 2.0), (0, 2.0)])
def test_splash_kernel_equals_the_jnp_path(window, softcap):
    """Interpret mode (a few seconds): packed segments, padding inside and after the rows, T=200 padded to 256
    for the kernel, grouped key/value heads, a sliding window and gemma2's soft-capping; float32 within 1e-5."""
    spec = spec_with(softcap)
    q, k, v, positions, segments = random_inputs([[50, 30, 60], [100, 20], [3]], 200)
    splash = packed_attention(spec, q, k, v, positions, segments, jnp.int32(window), implementation="splash")
    portable = packed_attention(spec, q, k, v, positions, segments, jnp.int32(window), implementation="jnp")
    real = np.asarray(segments) > 0
    np.testing.assert_allclose(np.asarray(splash)[real], np.asarray(portable)[real], atol=1e-5, rtol=0)
    assert not np.asarray(splash)[~real].any()  # padding queries give 0


def random_params(spec, seed=0):
    from jaxcontam.models.checkpoint_map import checkpoint_entries

    rng = np.random.default_rng(seed)
    params: dict = {}
    for entry in checkpoint_entries(spec):
        node = params
        for key in entry.path[:-1]:
            node = node.setdefault(key, {})
        shape = (spec.num_layers, *entry.shape) if entry.per_layer else entry.shape
        node[entry.path[-1]] = jnp.asarray(rng.normal(0.0, 0.3, shape), jnp.float32)
    return params


def gemma2_layers_spec(attention: str = "auto"):
    config = tf.Gemma2Config(
        vocab_size=11,
        hidden_size=32,
        intermediate_size=8,
        num_hidden_layers=3,
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        head_dim=HEAD_DIM,
        sliding_window=6,
        attn_logit_softcapping=2.0,
        query_pre_attn_scalar=HEAD_DIM,
        max_position_embeddings=256,
    )
    return from_hf_config(config.to_dict(), attention=attention)


def test_decoder_forward_with_splash_equals_jnp():
    """gemma2-shaped layers (window 6, global, window 6; soft-capping): the layer scan passes the window traced,
    the splash path switches between one kernel per window. The spec's `attention` field picks the path, and
    being part of the static spec it gives one jitted function two programs."""
    from jaxcontam.models import decoder

    spec = gemma2_layers_spec()
    assert spec.layer_windows == (6, 0, 6)
    params = random_params(spec)
    positions, segments = packed_rows([[40, 30, 20], [120]], 130)
    tokens = jnp.asarray(np.random.default_rng(2).integers(0, 11, positions.shape), jnp.int32)
    forward = jax.jit(decoder.hidden_states, static_argnames="spec")
    found = {}
    for path in ("splash", "jnp"):
        args = (
            params,
            dataclasses.replace(spec, execution=dataclasses.replace(spec.execution, attention=path)),
            tokens,
            jnp.asarray(positions),
            jnp.asarray(segments),
        )
        assert ("pallas_call" in str(jax.make_jaxpr(forward, static_argnums=1)(*args))) == (path == "splash")
        found[path] = np.asarray(forward(*args))
    real = segments > 0
    np.testing.assert_allclose(found["splash"][real], found["jnp"][real], atol=1e-5, rtol=0)


def test_the_attention_parameter_takes_effect_in_an_already_compiled_step():
    """The attention path is a static field of the spec, set when the config is read (`from_hf_config(...,
    attention=)`), never while tracing: a model read with another path gets a new program of the engine's (cached)
    score step. (Read at trace time, the second model's equal spec hit the cached jnp program and the kernel never
    ran.)"""
    from jaxcontam.engine.scoring import score_logprobs
    from jaxcontam.mesh import make_mesh
    from jaxcontam.models import attention
    from jaxcontam.models.model import Model

    traced = []
    kernel = attention.splash_attention
    sequences = [np.random.default_rng(4).integers(0, 11, n).tolist() for n in (40, 90, 25)]
    scores = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(attention, "splash_attention", lambda *a, **k: traced.append(1) or kernel(*a, **k))
        for path in ("auto", "splash"):
            spec = gemma2_layers_spec(path)
            assert spec.execution.attention == path
            model = Model(config=spec, params=random_params(spec), tokenizer=None, mesh=make_mesh())
            scores[path] = score_logprobs(model, sequences, rows_per_batch=1, buckets=(128,))
            assert len(traced) == (path == "splash")
    for jnp_path, splash in zip(scores["auto"], scores["splash"]):
        np.testing.assert_allclose(splash.logprobs, jnp_path.logprobs, atol=1e-4, rtol=0)


def test_the_environment_is_read_by_the_commands_and_a_bad_value_is_named(monkeypatch):
    """JAXCONTAM_ATTENTION is read in the command layer alone (`attention_from_environment`, into the mesh
    settings every command loads its models with); reading a config never looks at it."""
    from jaxcontam.audit.config import AuditConfig, PacostConfig
    from jaxcontam.commands.audit_options import with_attention
    from jaxcontam.commands.mesh_options import attention_from_environment, mesh_layout
    from jaxcontam.mesh import MeshSettings

    monkeypatch.setenv("JAXCONTAM_ATTENTION", "splash")
    assert gemma2_layers_spec().execution.attention == "auto"
    assert attention_from_environment() == "splash"
    assert mesh_layout(None, None)[0].attention == "splash"
    audit = with_attention(AuditConfig(pacost=PacostConfig(rephrase_mesh=MeshSettings())), "jnp")
    assert (audit.mesh.attention, audit.pacost.rephrase_mesh.attention) == ("jnp", "jnp")
    monkeypatch.delenv("JAXCONTAM_ATTENTION")
    assert attention_from_environment() == "auto"
    monkeypatch.setenv("JAXCONTAM_ATTENTION", "flash")
    with pytest.raises(JaxcontamError, match="'flash' \\(from JAXCONTAM_ATTENTION\\) is not one of auto, jnp"):
        attention_from_environment()
    with pytest.raises(JaxcontamError, match="'flash' \\(from attention=\\) is not one of auto, jnp"):
        gemma2_layers_spec("flash")


def test_one_sequence_per_row_is_what_cudnn_takes():
    from jaxcontam.models.attention import one_sequence_per_row

    def check(rows, width):
        positions, segments = packed_rows(rows, width)
        return bool(one_sequence_per_row(jnp.asarray(positions), jnp.asarray(segments)))

    assert check([[5], [8], [0]], 8)  # one sequence each, trailing padding (and an empty row)
    assert not check([[5], [3, 4]], 8)  # a packed row
    positions, segments = packed_rows([[6]], 8)
    positions[0, 3] = 7
    assert not one_sequence_per_row(jnp.asarray(positions), jnp.asarray(segments))


def test_cudnn_path_lowers_to_the_cudnn_flash_kernel_for_cuda(monkeypatch):
    """No GPU or cuDNN here: jax asks cuDNN's version and the GPU's compute capability while tracing, so those two
    checks are stubbed (cuDNN 9.10, pre-Hopper), and the program is lowered (not compiled) for CUDA. The bf16,
    sliding-window model lowers to cuDNN's fused attention call inside a cond whose other branch is the jnp path
    (packed rows); a soft-capped model never reaches cuDNN."""
    from jax._src.cudnn import fused_attention_stablehlo as cudnn

    monkeypatch.setattr(cudnn, "check_cudnn_version", lambda: 91000)
    monkeypatch.setattr(cudnn, "check_compute_capability", lambda capability: False)
    monkeypatch.setattr(cudnn, "is_cuda_compute_capability_equal", lambda capability: False)
    q, k, v, positions, segments = (
        jax.ShapeDtypeStruct(x.shape, jnp.bfloat16 if x.ndim == 4 else x.dtype) for x in random_inputs([[9]], 16)
    )
    for softcap, fused in ((None, True), (2.0, False)):
        spec = spec_with(softcap)
        traced = jax.jit(lambda *a, spec=spec: packed_attention(spec, *a, 3, implementation="cudnn")).trace(
            q, k, v, positions, segments
        )
        text = traced.lower(lowering_platforms=("cuda",)).as_text()
        assert ("__cudnn$fmhaSoftmax" in text) == fused
        if fused:
            assert "stablehlo.if" in text or "stablehlo.case" in text  # cuDNN or, for packed rows, the jnp path


def test_the_path_follows_the_mesh_platform_not_the_environment(monkeypatch):
    """Without a forced path the choice is the platform's (a TPU mesh's: `test_tpu_compile`); the environment
    variable, read only when a config is built, plays no part here."""
    from jaxcontam.models.attention import choose_implementation

    monkeypatch.setenv("JAXCONTAM_ATTENTION", "cudnn")
    assert choose_implementation() == choose_implementation("auto") == "jnp"  # CPU
    assert choose_implementation("splash") == "splash"
    with pytest.raises(JaxcontamError, match="'flash' \\(from the argument\\)"):
        choose_implementation("flash")


def test_a_bf16_scoring_step_lowers_with_cudnn_attention_for_cuda(monkeypatch):
    """The whole engine step, not the attention alone: a bfloat16 llama's `score_step` (layer scan, rows of one
    sequence) lowered for CUDA holds cuDNN's fused attention in every layer, under the cond that sends packed rows
    to the jnp path. cuDNN's version and the compute capability are stubbed as above (no GPU here)."""
    from jax._src.cudnn import fused_attention_stablehlo as cudnn

    from jaxcontam.engine.scoring import score_step
    from jaxcontam.models.checkpoint_map import checkpoint_entries

    monkeypatch.setattr(cudnn, "check_cudnn_version", lambda: 91000)
    monkeypatch.setattr(cudnn, "check_compute_capability", lambda capability: False)
    monkeypatch.setattr(cudnn, "is_cuda_compute_capability_equal", lambda capability: False)
    config = tf.LlamaConfig(
        vocab_size=64,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
    ).to_dict()
    spec = from_hf_config(config, attention="cudnn")
    params: dict = {}
    for entry in checkpoint_entries(spec):
        node = params
        for key in entry.path[:-1]:
            node = node.setdefault(key, {})
        shape = (spec.num_layers, *entry.shape) if entry.per_layer else entry.shape
        node[entry.path[-1]] = jax.ShapeDtypeStruct(shape, jnp.bfloat16)
    rows = jax.ShapeDtypeStruct((2, 128), jnp.int32)
    traced = score_step.trace(params, spec, rows, rows, rows, rows, vocab_block=64, use_kernel=False)
    text = traced.lower(lowering_platforms=("cuda",)).as_text()
    assert "__cudnn$fmhaSoftmax" in text
    assert "stablehlo.if" in text or "stablehlo.case" in text
