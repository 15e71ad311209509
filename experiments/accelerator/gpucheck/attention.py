"""Attention alone, causal, at the 1B shape's heads (32 query, 8 key/value, 64 wide), one sequence per row and the
same tokens per call at every length (rows = tokens / length): jaxcontam's `packed_attention` on the path it picks
("auto": cuDNN on a GPU for bf16) and on its own tiled path ("jnp"), against `jax.nn.dot_product_attention(
implementation="cudnn")` and torch's `scaled_dot_product_attention`. FLOPs count the half of the square the causal
mask keeps: 2 x 2 x T^2 / 2 x heads x head_dim per row."""

from __future__ import annotations

import numpy as np

from experiments.accelerator.gpucheck.device import median_time, synchronize
from experiments.accelerator.gpucheck.shapes import Shape


def inputs(shape: Shape, rows: int, length: int, dtype):
    import jax
    import jax.numpy as jnp

    keys = jax.random.split(jax.random.key(3), 3)
    q = jax.random.normal(keys[0], (rows, length, shape.heads, shape.head_dim), dtype)
    k, v = (jax.random.normal(key, (rows, length, shape.kv_heads, shape.head_dim), dtype) for key in keys[1:])
    positions = jnp.broadcast_to(jnp.arange(length, dtype=jnp.int32), (rows, length))
    return q, k, v, positions, jnp.ones((rows, length), jnp.int32)


def jaxcontam_call(shape: Shape, path: str):
    import jax

    from jaxcontam.models.attention import packed_attention
    from jaxcontam.models.spec import from_hf_config

    spec = from_hf_config(shape.config, attention=path)
    return jax.jit(lambda q, k, v, positions, segments: packed_attention(spec, q, k, v, positions, segments, 0))


def cudnn_call(shape: Shape):
    import jax

    scale = shape.head_dim**-0.5
    return jax.jit(
        lambda q, k, v, *_: jax.nn.dot_product_attention(q, k, v, scale=scale, is_causal=True, implementation="cudnn")
    )


def torch_call(q, k, v):
    """torch sdpa on [B, H, T, Dh] copies of the inputs, key/value heads repeated to the query heads beforehand
    (as transformers' llama does), so that its flash kernel takes them."""
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if str(q.dtype) == "bfloat16" else torch.float32
    tq, tk, tv = (
        torch.as_tensor(np.asarray(x, np.float32), device=device).to(dtype).transpose(1, 2) for x in (q, k, v)
    )
    groups = tq.shape[1] // tk.shape[1]
    tk, tv = tk.repeat_interleave(groups, dim=1), tv.repeat_interleave(groups, dim=1)

    def run():
        with torch.inference_mode():
            out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
        synchronize()
        return out

    return run


def measure(shape: Shape, lengths: tuple[int, ...], tokens: int, dtype: str, repeats: int, peaks) -> list[dict]:
    import jax
    import jax.numpy as jnp

    rows_out = []
    candidates = {
        "jaxcontam_auto": jaxcontam_call(shape, "auto"),
        "jaxcontam_jnp": jaxcontam_call(shape, "jnp"),
        "jax_cudnn": cudnn_call(shape),
    }
    for length in lengths:
        rows = max(1, tokens // length)
        args = inputs(shape, rows, length, jnp.dtype(dtype))
        flops = 2.0 * rows * length * length * shape.heads * shape.head_dim
        row: dict = {"length": length, "rows": rows, "dtype": dtype}
        reference = None
        for name, call in candidates.items():
            try:
                out = jax.block_until_ready(call(*args))
                seconds = median_time(lambda call=call, args=args: jax.block_until_ready(call(*args)), repeats)
            except Exception as error:  # cuDNN absent (CPU) or refusing this shape: recorded, not fatal
                row[name] = {"error": f"{type(error).__name__}: {str(error)[:200]}"}
                continue
            if reference is None:
                reference = np.asarray(out, np.float32)
            row[name] = {
                "ms": round(seconds * 1e3, 3),
                "tflops": round(flops / seconds / 1e12, 2),
                "max_abs_diff": float(np.max(np.abs(np.asarray(out, np.float32) - reference))),
            }
            if peaks:
                row[name]["share_of_bf16_peak"] = round(flops / seconds / 1e12 / peaks["bf16_tflops"], 4)
        run = torch_call(*args[:3])
        seconds = median_time(run, repeats)
        row["torch_sdpa"] = {"ms": round(seconds * 1e3, 3), "tflops": round(flops / seconds / 1e12, 2)}
        if reference is not None:
            out = run().float().transpose(1, 2).cpu().numpy()
            row["torch_sdpa"]["max_abs_diff"] = float(np.max(np.abs(out - reference)))
        ours = row["jaxcontam_auto"].get("ms")
        row["ratio_to_torch"] = round(seconds * 1e3 / ours, 3) if ours else None
        rows_out.append(row)
    return rows_out
