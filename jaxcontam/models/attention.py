"""Attention over whole packed sequences with memory linear in their length, on each platform's fast path.

`hidden_states` scores rows of packed sequences: a query attends to keys of its own segment (segment 0 is
padding) at positions no later than its own, and within the layer's sliding window. Building that mask and
the scores for all T x T pairs at once costs memory quadratic in T (Llama-3.1-8B at 4 x 8192: 8.6 GiB of
temporaries per v5e chip). `packed_attention` picks one of three paths, each linear in T:

- "splash" (TPU): the Pallas splash-attention kernel (`jax.experimental.pallas.ops.tpu.splash_attention`, a
  Mosaic custom call; one per distinct window size, `lax.switch` picking the layer's) under `jax.shard_map`:
  rows over "data", heads over "model" when both the query and key/value heads divide it (each axis otherwise
  replicated). Causal mask or `LocalMask` sliding window, `SegmentIds` for packing, `attn_logits_soft_cap`
  (gemma2), grouped key/value heads natively; rows padded to a multiple of 128 (segment 0), q pre-scaled.
- "cudnn" (NVIDIA GPU): `jax.nn.dot_product_attention(implementation="cudnn")`, cuDNN's flash attention, for
  batches whose every row is one sequence followed by padding (causal + per-row length + sliding window). Its
  public API has no segment ids (only a dense [B, H, T, S] mask, quadratic) and no logit soft-capping, so a
  batch of packed rows runs the jnp path (a `lax.cond` on the segment ids), and so does every call of a
  soft-capped model (gemma2), float32 activations, and shapes cuDNN refuses when traced (head_dim, GPU).
- "jnp" (CPU, everything else): rows longer than one block go flash-style: queries in blocks of `CPU_BLOCK`
  tokens on CPU (`BLOCK` elsewhere), each walking the keys a block at a time with a running max, sum and
  weighted value sum (online softmax, float32), its mask built per key block from positions and segment ids; a
  key block that no query of the block may see (causal future, other segments, outside a window) is skipped by
  a `lax.cond`. Temporaries are a few [B, H, block, block] tiles, whatever T; rows of up to one block run as
  one dense block.

The path follows the platform of the current mesh's devices (`jax.set_mesh`; without one, the default
backend), so a program planned for a TPU topology on a CPU host gets the TPU path. `implementation=` or the
config's `attention` field ("jnp", "splash", "cudnn") forces one. That field is a parameter
(`load_model(..., attention=)`, `spec.from_hf_config(..., attention=)`, `MeshSettings.attention`): the choice
is made in Python before tracing and, the config being a static argument, is part of every jitted step's cache
key. Nothing below the command layer reads the environment: the `jaxcontam` commands read JAXCONTAM_ATTENTION
once (`commands.mesh_options.attention_from_environment`). "splash" off TPU runs the kernel in Pallas interpret
mode (slow; for tests).

Precondition of the splash and cuDNN paths. The jnp path masks by positions; the kernels mask by the index of a
token in its row: causal index order plus same segment, and the window on index distance. The two agree when
every segment occupies one contiguous run of its row with positions increasing by exactly 1 per token (from 0,
as `engine.packing` and `training.batches` build rows, or from any offset): then within a segment index
differences equal position differences, so "k_pos <= q_pos" is "k_index <= q_index" and "q_pos - k_pos < w" is
"q_index - k_index < w". Rows whose positions skip or repeat, or a segment id reused further along the row, get
different (index-based) masks on TPU: use implementation="jnp" for those. The cuDNN path checks its own case
(one contiguous sequence per row) at run time; the splash path does not check.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxcontam.errors import JaxcontamError
from jaxcontam.models import layers
from jaxcontam.models.config import DecoderConfig

BLOCK = 512
CPU_BLOCK = 128  # on CPU smaller tiles stay in cache (SmolLM2 scoring 16 x 512: 632 -> 766 tokens/s, 2026-11-25)
IMPLEMENTATIONS = ("auto", "jnp", "splash", "cudnn")
SPLASH_LANES = 128  # splash needs T a multiple of 128 and block sizes dividing T
SPLASH_BLOCKS = (512, 256, 128)  # the largest dividing the padded T is used for queries and keys


def allowed_keys(q_pos, q_seg, k_pos, k_seg, window) -> jax.Array:
    """[B, Tq, S] bool: same non-padding segment, key position <= query position, and inside the sliding
    window (q_pos - k_pos < window) when window > 0 (0 = a global layer)."""
    same = (q_seg[:, :, None] == k_seg[:, None, :]) & (q_seg[:, :, None] > 0)
    causal = k_pos[:, None, :] <= q_pos[:, :, None]
    inside = (q_pos[:, :, None] - k_pos[:, None, :]) < window
    return same & causal & ((window == 0) | inside)


def _blocks(x, block: int):
    """[B, T, ...] -> [T / block, B, block, ...], T padded with zeros (segment 0: padding) to a block multiple."""
    batch, length = x.shape[:2]
    count = -(-length // block)
    x = jnp.pad(x, [(0, 0), (0, count * block - length)] + [(0, 0)] * (x.ndim - 2))
    return jnp.moveaxis(x.reshape(batch, count, block, *x.shape[2:]), 1, 0)


def _heads_first(x, block: int):
    """[B, T, ..., Dh] -> [T / block, B, ..., block, Dh]: `_blocks` with each block's tokens moved next to the head
    dimension, so that both products of a tile contract without transposing it. The layout costs a transpose of
    q, k and v once per layer instead of one per tile: SmolLM2's attention of a 16 x 512 forward 4.3 -> 2.9 s on
    2 cores (experiments/perf/attention_vs_torch.py)."""
    return jnp.moveaxis(_blocks(x, block), 2, -2)


def _query_block(spec: DecoderConfig, q, q_pos, q_seg, key_blocks, window):
    """Online-softmax attention of one query block q [B, Hkv, G, bq, Dh] over every key block (k, v
    [B, Hkv, bs, Dh]); float32 [B, Hkv, G, bq, Dh]."""
    floor = jnp.finfo(jnp.float32).min

    def update(carry, keys, allowed):
        top, total, weighted = carry
        k, v = keys[:2]
        scores = jnp.einsum("bkgtd,bksd->bkgts", q, k, preferred_element_type=jnp.float32) * spec.attn_scale
        if spec.attn_logit_softcap is not None:
            scores = spec.attn_logit_softcap * jnp.tanh(scores / spec.attn_logit_softcap)
        allowed = allowed[:, None, None]
        scores = jnp.where(allowed, scores, floor)
        new_top = jnp.maximum(top, scores.max(axis=-1))
        probs = jnp.where(allowed, jnp.exp(scores - new_top[..., None]), 0.0)
        rescale = jnp.exp(top - new_top)
        total = total * rescale + probs.sum(axis=-1)
        weighted = weighted * rescale[..., None] + jnp.einsum(
            "bkgts,bksd->bkgtd", probs.astype(v.dtype), v, preferred_element_type=jnp.float32
        )
        return new_top, total, weighted

    def visit(carry, keys):
        # A key block no query of this block may see (a later block under the causal mask, another row's
        # segments, outside a sliding window) is skipped: about half the tiles of a long causal row.
        allowed = allowed_keys(q_pos, q_seg, keys[2], keys[3], window)
        return jax.lax.cond(allowed.any(), update, lambda carry, *_: carry, carry, keys, allowed), None

    stats = q.shape[:-1]
    start = (jnp.full(stats, floor), jnp.zeros(stats, jnp.float32), jnp.zeros(q.shape, jnp.float32))
    (_, total, weighted), _ = jax.lax.scan(visit, start, key_blocks)
    return weighted / jnp.maximum(total, jnp.finfo(jnp.float32).tiny)[..., None]  # padding queries: 0


def mesh_platform() -> str:
    """Platform ("tpu", "gpu", "cpu") of the current mesh's devices, else of the default backend."""
    mesh = jax.sharding.get_abstract_mesh()
    if not mesh.empty and mesh.abstract_device is not None:
        return mesh.abstract_device.platform
    return jax.default_backend()


def checked(implementation: str, source: str) -> str:
    """`implementation` when it is one of `IMPLEMENTATIONS`, else an error naming where it came from."""
    if implementation not in IMPLEMENTATIONS:
        raise JaxcontamError(
            f"attention implementation {implementation!r} (from {source}) is not one of {', '.join(IMPLEMENTATIONS)}"
        )
    return implementation


def choose_implementation(implementation: str | None = None) -> str:
    """ "splash", "cudnn" or "jnp": `implementation` unless "auto" or None, else by `mesh_platform()`."""
    chosen = checked(implementation or "auto", "the argument")
    if chosen != "auto":
        return chosen
    platform = mesh_platform()
    return {"tpu": "splash", "gpu": "cudnn", "cuda": "cudnn"}.get(platform, "jnp")


def _windows(spec: DecoderConfig, window) -> tuple[tuple[int, ...], jax.Array | None]:
    """The static window sizes a layer may have and the index of this one among them (None: only one).

    The kernels take the window as a static mask; the decoder's layer scan passes it traced, so each distinct
    window of `spec.layer_windows` gets its own kernel and `lax.switch` picks the layer's (a traced window must
    be one of them)."""
    try:
        return (int(window),), None
    except (jax.errors.ConcretizationTypeError, TypeError):
        windows = tuple(sorted(set(spec.layer_windows)))
        if len(windows) == 1:
            return windows, None
        return windows, jnp.argmax(jnp.asarray(windows, jnp.int32) == window).astype(jnp.int32)


def _select(windows: tuple[int, ...], index, run) -> jax.Array:
    """run(window) for the layer's window: directly when static, else `lax.switch` over the candidates."""
    if index is None:
        return run(windows[0])
    return jax.lax.switch(index, [functools.partial(run, w) for w in windows])


def _splash_kernel(window: int, heads: int, length: int, block: int, softcap, interpret: bool):
    from jax.experimental.pallas.ops.tpu import splash_attention as splash

    shape = (length, length)
    mask = splash.LocalMask(shape, (window - 1, 0), 0) if window else splash.CausalMask(shape)
    # q and k sequence-minor ([H, Dh, T] in memory): XLA then keeps the roped projections T-minor, as the jnp path
    # does; head-dim-minor q and k made it hold the rope's float32 halves padded to 128 lanes (Llama-3.2-1B at
    # 4 x 8192 on v5e: 465 MiB of temporaries instead of 137 MiB)
    sizes = splash.BlockSizes(
        block_q=block,
        block_kv=block,
        block_kv_compute=block,
        block_q_dkv=block,
        block_kv_dkv=block,
        block_kv_dkv_compute=block,
        block_q_dq=block,
        block_kv_dq=block,
        q_layout=splash.QKVLayout.SEQ_MINOR,
        k_layout=splash.QKVLayout.SEQ_MINOR,
    )
    return splash.make_splash_mha(
        splash.MultiHeadMask((mask,) * heads),
        block_sizes=sizes,
        head_shards=1,
        q_seq_shards=1,
        attn_logits_soft_cap=softcap,
        interpret=interpret,
    )


def splash_attention(spec: DecoderConfig, q, k, v, segment_ids, window, interpret: bool = False):
    """`packed_attention` by the splash kernel (see the module's precondition): rows padded to a multiple of
    128 with segment 0, q pre-multiplied by the scale, heads first; padding queries give 0."""
    from jax.experimental.pallas.ops.tpu import splash_attention as splash

    batch, length, heads, _ = q.shape
    kv_heads = k.shape[2]
    padded = -(-length // SPLASH_LANES) * SPLASH_LANES
    block = next(b for b in SPLASH_BLOCKS if padded % b == 0)
    pad = [(0, 0), (0, padded - length)]

    def heads_first(x):
        return jnp.swapaxes(jnp.pad(x, pad + [(0, 0), (0, 0)]), 1, 2)  # [B, H, Tp, Dh]

    q = heads_first(q * jnp.asarray(spec.attn_scale, q.dtype))
    k, v = heads_first(k), heads_first(v)
    segments = jnp.pad(segment_ids.astype(jnp.int32), pad)
    windows, index = _windows(spec, window)

    def local(q, k, v, segments, index):
        def run(w):
            kernel = _splash_kernel(w, q.shape[1], padded, block, spec.attn_logit_softcap, interpret)
            return jax.vmap(lambda q, k, v, s: kernel(q, k, v, splash.SegmentIds(s, s)))(q, k, v, segments)

        return _select(windows, index, run)

    index = jnp.int32(0) if index is None else index
    mesh = jax.sharding.get_abstract_mesh()
    if mesh.empty:
        out = local(q, k, v, segments, index)
    else:
        free = [a for a, t in zip(mesh.axis_names, mesh.axis_types, strict=True) if t != jax.sharding.AxisType.Manual]
        rows = "data" if "data" in free and batch % mesh.shape["data"] == 0 else None
        model = mesh.shape.get("model", 1)
        split = "model" if "model" in free and heads % model == 0 and kv_heads % model == 0 else None
        blocks, ids = jax.P(rows, split, None, None), jax.P(rows, None)
        # check_vma=False: the Pallas kernel's outputs carry no varying-axes type (as in kernels.vocab_blocks)
        out = jax.shard_map(
            local,
            mesh=mesh,
            in_specs=(blocks, blocks, blocks, ids, jax.P()),
            out_specs=blocks,
            axis_names=frozenset(free),
            check_vma=False,
        )(q, k, v, segments, index)
    out = jnp.swapaxes(out, 1, 2)[:, :length]
    return jnp.where(segment_ids[:, :, None, None] > 0, out, 0).astype(v.dtype)


def one_sequence_per_row(positions, segment_ids) -> jax.Array:
    """bool scalar: every row is one run of a single segment from index 0, positions rising by 1, then padding."""
    index = jnp.arange(positions.shape[1])
    inside = index[None, :] < (segment_ids > 0).sum(axis=1, keepdims=True)
    same = segment_ids == jnp.where(inside, segment_ids[:, :1], 0)
    counted = ~inside | (positions - positions[:, :1] == index[None, :])
    return jnp.all(same & counted)


def cudnn_attention(spec: DecoderConfig, q, k, v, segment_ids, window):
    """cuDNN flash attention of rows that are each one sequence then padding (`one_sequence_per_row`)."""
    lengths = (segment_ids > 0).sum(axis=1).astype(jnp.int32)
    windows, index = _windows(spec, window)

    def run(w):
        return jax.nn.dot_product_attention(
            q,
            k,
            v,
            scale=spec.attn_scale,
            is_causal=True,
            query_seq_lengths=lengths,
            key_value_seq_lengths=lengths,
            local_window_size=(w - 1, 0) if w else None,
            implementation="cudnn",
        )

    out = _select(windows, index, run)
    return jnp.where(segment_ids[:, :, None, None] > 0, out, 0).astype(v.dtype)


def jnp_attention(spec: DecoderConfig, q, k, v, positions, segment_ids, window, block: int | None = None):
    """The portable path: one dense block up to `block` tokens (default `CPU_BLOCK` on CPU, else `BLOCK`), else
    flash-style blocks."""
    block = block or (CPU_BLOCK if mesh_platform() == "cpu" else BLOCK)
    batch, length = positions.shape
    if length <= block:
        return layers.attend(spec, q, k, v, allowed_keys(positions, segment_ids, positions, segment_ids, window))
    position_blocks, segment_blocks = _blocks(positions, block), _blocks(segment_ids, block)
    key_blocks = (_heads_first(k, block), _heads_first(v, block), position_blocks, segment_blocks)

    def query_block(queries):
        q_block, q_pos, q_seg = queries
        return _query_block(spec, q_block, q_pos, q_seg, key_blocks, window).astype(q.dtype)

    grouped = q.reshape(batch, length, spec.num_kv_heads, spec.num_groups, q.shape[-1])
    queries = (_heads_first(grouped, block), position_blocks, segment_blocks)
    out = jax.lax.map(query_block, queries)  # [T / block, B, Hkv, G, block, Dh]
    return jnp.transpose(out, (1, 0, 4, 2, 3, 5)).reshape(batch, -1, *q.shape[2:])[:, :length]


def packed_attention(
    spec: DecoderConfig,
    q,
    k,
    v,
    positions,
    segment_ids,
    window,
    block: int | None = None,
    implementation: str | None = None,
):
    """Attention of q [B, T, H, Dh] over k, v [B, T, Hkv, Dh] of the same packed rows.

    `window`: the layer's sliding window (0 = global), a Python int or traced (then one of
    `spec.layer_windows`). `implementation`: None (the config's `attention` field), "auto" (by platform, see
    the module), "jnp", "splash" or "cudnn". `block` sizes the jnp path's query and key blocks (default:
    `CPU_BLOCK` on CPU, else `BLOCK`). The splash and cuDNN paths mask by index within the row: rows must meet
    the module's precondition (each segment one contiguous run with positions rising by 1), which packed
    batches do.
    """
    forced = implementation or spec.execution.attention
    chosen = choose_implementation(forced)
    if chosen == "splash":
        return splash_attention(spec, q, k, v, segment_ids, window, interpret=mesh_platform() != "tpu")
    portable = functools.partial(jnp_attention, spec, q, k, v, positions, segment_ids, window, block)
    if chosen == "cudnn" and spec.attn_logit_softcap is None and q.dtype in (jnp.bfloat16, jnp.float16):
        try:
            return jax.lax.cond(
                one_sequence_per_row(positions, segment_ids),
                lambda: cudnn_attention(spec, q, k, v, segment_ids, window),
                portable,
            )
        except (NotImplementedError, RuntimeError) as refused:  # no cuDNN here, or a shape it does not take
            if forced == "cudnn":
                raise JaxcontamError(f"cuDNN attention refused this call: {refused}") from refused
    return portable()
