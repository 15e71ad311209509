"""Greedy generation: N prompts of P random tokens, exactly M new tokens each (no stop token on either side),
jaxcontam `generate` against torch transformers `generate` on the same weights; tokens/s, the share of the HBM
bandwidth limit, and how many generated tokens the two sides agree on.

The bandwidth limit of a decode step is the bytes it must read once: every weight of a matrix product and the KV
cache of every row (its mean length over the run: P + M / 2). tokens/s at the limit = rows x HBM bytes/s / those
bytes; the measured tokens/s include the prefill, which is small beside M steps.
"""

from __future__ import annotations

import numpy as np

from experiments.accelerator.gpucheck.device import median_time, synchronize
from experiments.accelerator.gpucheck.shapes import Shape


def prompts(shape: Shape, count: int, length: int) -> list[list[int]]:
    rng = np.random.default_rng(2)
    return rng.integers(0, shape.vocab, (count, length)).tolist()


def jax_generate(model, batch: list[list[int]], new_tokens: int) -> list[list[int]]:
    from jaxcontam.engine import generate

    done = generate(model, batch, max_new_tokens=new_tokens, stop_token_ids=[], rows_per_batch=len(batch))
    return [g.token_ids for g in done]


def torch_generate(module, batch: list[list[int]], new_tokens: int, device: str) -> list[list[int]]:
    import torch

    ids = torch.as_tensor(batch, device=device)
    with torch.inference_mode():
        out = module.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=new_tokens,
            min_new_tokens=new_tokens,
            do_sample=False,
            pad_token_id=0,
        )
    synchronize()
    return out[:, ids.shape[1] :].tolist()


def step_bytes(shape: Shape, itemsize: int, rows: int, context: float) -> float:
    """Bytes one decode step reads at least: the matmul weights once, and each row's KV cache."""
    return shape.matmul_params * itemsize + rows * context * shape.kv_bytes_per_token(itemsize)


def measure(shape: Shape, model, reference, dtype: str, count: int, length: int, new_tokens: int, repeats: int, peaks):
    """One row of the generation table; `model`: jaxcontam's, `reference`: the torch module, both in `dtype`."""
    device = str(next(reference.parameters()).device)
    batch = prompts(shape, count, length)
    ours = jax_generate(model, batch, new_tokens)  # compiles
    torch_generate(reference, batch, min(new_tokens, 8), device)  # warms torch up
    last: dict = {}

    def run_torch():
        last["tokens"] = torch_generate(reference, batch, new_tokens, device)

    jax_s = median_time(lambda: jax_generate(model, batch, new_tokens), repeats, warmups=0)
    torch_s = median_time(run_torch, repeats, warmups=0)
    theirs = last["tokens"]
    agree = np.mean([np.array_equal(a, b) for a, b in zip(ours, theirs, strict=True)])
    same_tokens = np.mean([np.mean(np.asarray(a) == np.asarray(b)) for a, b in zip(ours, theirs, strict=True)])
    generated = count * new_tokens
    itemsize = 4 if dtype == "float32" else 2
    row = {
        "shape": shape.name,
        "dtype": dtype,
        "prompts": count,
        "prompt_tokens": length,
        "new_tokens": new_tokens,
        "jaxcontam_tokens_per_s": round(generated / jax_s, 1),
        "torch_tokens_per_s": round(generated / torch_s, 1),
        "ratio_to_torch": round(torch_s / jax_s, 3),
        "identical_rows": float(agree),
        "same_tokens": round(float(same_tokens), 4),
        "step_bytes": step_bytes(shape, itemsize, count, length + new_tokens / 2),
    }
    if peaks:
        limit = count * peaks["hbm_tbps"] * 1e12 / row["step_bytes"]
        row["bandwidth_limit_tokens_per_s"] = round(limit, 1)
        row["bandwidth_share"] = round(row["jaxcontam_tokens_per_s"] / limit, 4)
        row["torch_bandwidth_share"] = round(row["torch_tokens_per_s"] / limit, 4)
    return row
