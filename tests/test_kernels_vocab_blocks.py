"""Blockwise and vocabulary-parallel log-softmax statistics vs a naive full-logits numpy reference."""

import json
import os
import subprocess
import sys

import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings

from helpers import collective_shapes, largest_collective_elements, naive_stats
from jaxcontam.kernels.vocab_blocks import blockwise_sums, finish, fold_block, merge_over_axis, token_logprob_stats


@pytest.mark.parametrize(
    "vocab,block,layout,softcap,use_bias",
    [
        (97, 16, "vd", None, False),  # V not a multiple of the block: overlapping last block
        (64, 64, "dv", None, True),  # one block
        (130, 32, "vd", 5.0, False),  # gemma2-style final softcap inside the blocks
        (50, 128, "dv", 30.0, True),  # block larger than V
    ],
)
def test_matches_full_logits(vocab, block, layout, softcap, use_bias):
    rng = np.random.default_rng(vocab + block)
    hidden = rng.normal(size=(3, 5, 24)).astype(np.float32)
    weight = rng.normal(scale=0.7, size=(vocab, 24) if layout == "vd" else (24, vocab)).astype(np.float32)
    bias = rng.normal(size=vocab).astype(np.float32) if use_bias else None
    targets = rng.integers(0, vocab, size=(3, 5))
    got = token_logprob_stats(
        jnp.asarray(hidden),
        jnp.asarray(weight),
        jnp.asarray(targets),
        bias=None if bias is None else jnp.asarray(bias),
        layout=layout,
        softcap=softcap,
        vocab_block=block,
        with_stats=True,
    )
    lp, mu, sigma = naive_stats(hidden, weight, targets, bias, layout, softcap)
    np.testing.assert_allclose(got.logprob, lp, rtol=1e-5, atol=2e-5)
    np.testing.assert_allclose(got.mean_logprob, mu, rtol=1e-5, atol=2e-5)
    np.testing.assert_allclose(got.std_logprob, sigma, rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(got.entropy, -mu, rtol=1e-5, atol=2e-5)


def test_peaked_distribution_is_stable():
    """Logits in the hundreds (a very confident model) must not overflow or lose the variance."""
    rng = np.random.default_rng(0)
    hidden = (rng.normal(size=(4, 16)) * 40).astype(np.float32)
    weight = rng.normal(size=(300, 16)).astype(np.float32)
    targets = rng.integers(0, 300, size=4)
    got = token_logprob_stats(
        jnp.asarray(hidden), jnp.asarray(weight), jnp.asarray(targets), vocab_block=64, with_stats=True
    )
    lp, mu, sigma = naive_stats(hidden, weight, targets)
    assert np.all(np.isfinite(np.asarray(got.std_logprob)))
    np.testing.assert_allclose(got.logprob, lp, rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(got.mean_logprob, mu, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(got.std_logprob, sigma, rtol=1e-3, atol=1e-3)


def test_bfloat16_weights_give_float32_results():
    rng = np.random.default_rng(1)
    hidden = rng.normal(size=(2, 3, 32)).astype(np.float32)
    weight = rng.normal(size=(80, 32)).astype(np.float32)
    targets = rng.integers(0, 80, size=(2, 3))
    got = token_logprob_stats(
        jnp.asarray(hidden, jnp.bfloat16), jnp.asarray(weight, jnp.bfloat16), jnp.asarray(targets), vocab_block=32
    )
    assert got.logprob.dtype == jnp.float32
    h16 = np.asarray(jnp.asarray(hidden, jnp.bfloat16).astype(jnp.float32))
    w16 = np.asarray(jnp.asarray(weight, jnp.bfloat16).astype(jnp.float32))
    lp, _, _ = naive_stats(h16, w16, targets)
    np.testing.assert_allclose(got.logprob, lp, rtol=1e-4, atol=1e-3)


@settings(max_examples=12, deadline=None)
@given(
    shards=st.sampled_from([1, 2, 3, 5]),
    per_shard=st.sampled_from([1, 7, 32]),
    block=st.sampled_from([1, 5, 16, 64]),
    scale=st.sampled_from([0.1, 1.0, 30.0]),
    softcap=st.sampled_from([None, 3.0]),
    seed=st.integers(0, 2**16),
)
def test_merged_vocabulary_shards_match_full_logits(shards, per_shard, block, scale, softcap, seed):
    """Sums of disjoint vocabulary shards merged with pmax / psum (vmap stands in for the mesh) = the full softmax."""
    rng = np.random.default_rng(seed)
    vocab, d, n = shards * per_shard, 8, 6
    hidden = (rng.normal(size=(n, d)) * scale).astype(np.float32)
    weight = rng.normal(size=(vocab, d)).astype(np.float32)
    targets = rng.integers(0, vocab, size=n)

    def shard_sums(w):
        sums = blockwise_sums(
            jnp.asarray(hidden), w, None, layout="vd", softcap=softcap, vocab_block=block, with_moments=True
        )
        return merge_over_axis(sums, "shard")

    merged = jax.jit(jax.vmap(shard_sums, axis_name="shard"))(jnp.asarray(weight).reshape(shards, per_shard, d))
    z_target = np.einsum("nd,nd->n", hidden.astype(np.float64), weight[targets].astype(np.float64))
    t = z_target if softcap is None else softcap * np.tanh(z_target / softcap)
    got = finish(*(x[0] for x in merged), jnp.asarray(t, jnp.float32), with_stats=True)
    for shard in range(1, shards):  # every shard ends with the same merged sums
        np.testing.assert_array_equal(merged[1][shard], merged[1][0])
    lp, mu, sigma = naive_stats(hidden, weight, targets, softcap=softcap)
    tol = 1e-4 * max(1.0, scale)
    np.testing.assert_allclose(got.logprob, lp, rtol=1e-4, atol=tol)
    np.testing.assert_allclose(got.mean_logprob, mu, rtol=1e-4, atol=tol)
    np.testing.assert_allclose(got.std_logprob, sigma, rtol=1e-3, atol=tol)


def test_masked_columns_are_ignored_even_when_nan():
    """A ragged last block holds unspecified values past the vocabulary on TPU: they must not leak into the sums."""
    z = jnp.array([[1.0, 2.0, jnp.nan, jnp.inf], [0.5, -1.0, -jnp.inf, jnp.nan]])
    valid = jnp.array([[True, True, False, False]])
    zeros = jnp.zeros((2, 1))
    m, s, a, b = fold_block((jnp.full((2, 1), -jnp.inf), zeros, zeros, zeros), z, valid)
    stats = finish(m[:, 0], s[:, 0], a[:, 0], b[:, 0], jnp.array([1.0, 0.5]), with_stats=True)
    lp, mu, sigma = naive_stats(np.eye(2), np.array([[1.0, 0.5], [2.0, -1.0]]), np.array([0, 0]))
    np.testing.assert_allclose(stats.logprob, lp, rtol=1e-6)
    np.testing.assert_allclose(stats.mean_logprob, mu, rtol=1e-6)
    np.testing.assert_allclose(stats.std_logprob, sigma, rtol=1e-5)


MESH_SCRIPT = r"""
import functools, json, sys
import jax, numpy as np
from jaxcontam.kernels.vocab_blocks import token_logprob_stats
from jaxcontam.kernels.vocab_logprobs import fused_token_logprob_stats

heads = {"jnp": functools.partial(token_logprob_stats, vocab_block=64),
         "kernel": functools.partial(fused_token_logprob_stats, vocab_block=128, row_block=8, interpret=True)}
out = []
for case, path in zip(json.loads(sys.argv[1]), sys.argv[2:]):
    arrays = np.load(path)
    mesh = jax.make_mesh(tuple(case["mesh"]), ("data", "model"), (jax.sharding.AxisType.Auto,) * 2)
    put = lambda x, *spec: jax.device_put(x, jax.sharding.NamedSharding(mesh, jax.P(*spec)))
    split = "model" if case["vocab"] % mesh.shape["model"] == 0 else None  # as models.sharding places it
    vocab_sharded = (split, None) if case["layout"] == "vd" else (None, split)
    runs = {}
    with jax.set_mesh(mesh):
        args = (put(arrays["hidden"], "data"), put(arrays["weight"], *vocab_sharded),
                put(arrays["targets"], "data"))
        bias = put(arrays["bias"], split) if "bias" in arrays else None
        for name, head in heads.items():
            step = jax.jit(functools.partial(head, bias=bias, layout=case["layout"], softcap=case["softcap"],
                                             with_stats=True))
            stats = step(*args)
            runs[name] = {"stats": [np.asarray(getattr(stats, f)).tolist()
                                    for f in ("logprob", "mean_logprob", "std_logprob")],
                          "hlo": step.lower(*args).compile().as_text()}
    out.append(runs)
print(json.dumps(out))
"""

MESH_CASES = [
    {"mesh": (2, 4), "vocab": 1000, "layout": "vd", "softcap": 5.0, "bias": False},  # gemma2 softcap, ragged blocks
    {"mesh": (1, 8), "vocab": 1024, "layout": "dv", "softcap": None, "bias": True},  # [D, V] with a split bias
    {"mesh": (2, 4), "vocab": 998, "layout": "vd", "softcap": None, "bias": False},  # V % model != 0: replicated
]


def test_vocab_parallel_on_eight_cpu_devices(tmp_path):
    """On 8 forced CPU devices: full-softmax numerics, and no collective moves more than one value per row."""
    d, paths, inputs = 48, [], []
    for i, case in enumerate(MESH_CASES):
        rng = np.random.default_rng(i)
        vocab = case["vocab"]
        arrays = {
            "hidden": rng.normal(size=(4, 6, d)).astype(np.float32),
            "weight": rng.normal(scale=0.5, size=(vocab, d) if case["layout"] == "vd" else (d, vocab)).astype(
                np.float32
            ),
            "targets": rng.integers(0, vocab, size=(4, 6)).astype(np.int32),
        }
        if case["bias"]:
            arrays["bias"] = rng.normal(size=vocab).astype(np.float32)
        paths.append(str(tmp_path / f"case{i}.npz"))
        np.savez(paths[-1], **arrays)
        inputs.append(arrays)
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(
        [sys.executable, "-c", MESH_SCRIPT, json.dumps(MESH_CASES), *paths],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    for case, arrays, runs in zip(MESH_CASES, inputs, results, strict=True):
        want = naive_stats(
            arrays["hidden"], arrays["weight"], arrays["targets"], arrays.get("bias"), case["layout"], case["softcap"]
        )
        rows_per_device = arrays["targets"].size // case["mesh"][0]
        for name, run in runs.items():
            label = f"{name} on {case}"
            for field, got, reference in zip(("logprob", "mean", "std"), run["stats"], want):
                np.testing.assert_allclose(got, reference, rtol=1e-4, atol=1e-4, err_msg=f"{field}, {label}")
            if case["vocab"] % case["mesh"][1] == 0:
                largest = largest_collective_elements(run["hlo"])
                assert 0 < largest <= rows_per_device, (label, collective_shapes(run["hlo"]))
