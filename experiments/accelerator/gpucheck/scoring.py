"""Scoring: per-token log-probs of B x T random tokens, jaxcontam (`score_logprobs`) against torch transformers
(sdpa) on the same weights, in float32 and bfloat16; tokens/s, MFU and the log-prob difference between the two."""

from __future__ import annotations

import numpy as np

from experiments.accelerator.gpucheck.device import median_time, synchronize
from experiments.accelerator.gpucheck.shapes import Shape

TORCH_LOGITS_BYTES = 4 * 2**30  # torch scores in row groups whose float32 logits stay under this


def tokens(shape: Shape, rows: int, length: int) -> np.ndarray:
    return np.random.default_rng(1).integers(0, shape.vocab, (rows, length), dtype=np.int64)


def jax_logprobs(model, batch: np.ndarray) -> np.ndarray:
    from jaxcontam.engine.scoring import score_logprobs

    rows, length = batch.shape
    scores = score_logprobs(model, batch.tolist(), rows_per_batch=rows, buckets=(length,))
    return np.stack([s.logprobs for s in scores])


def torch_logprobs(module, batch: np.ndarray, device: str) -> np.ndarray:
    """log p(token t | tokens < t) of each row: logits in float32, log-softmax, gather; rows in groups so that
    the [rows, T, V] logits stay under `TORCH_LOGITS_BYTES`."""
    import torch

    rows, length = batch.shape
    group = max(1, min(rows, TORCH_LOGITS_BYTES // (length * module.config.vocab_size * 4)))
    ids = torch.as_tensor(batch, device=device)
    out = []
    with torch.inference_mode():
        for start in range(0, rows, group):
            part = ids[start : start + group]
            logits = module(part).logits.float()
            out.append(torch.log_softmax(logits[:, :-1], -1).gather(-1, part[:, 1:, None])[..., 0])
        synchronize()
    return torch.cat(out).cpu().numpy()


def measure(
    shape: Shape, model, reference, dtype: str, rows: int, length: int, repeats: int, peaks, device: str, truth
):
    """One row of the scoring table: both sides' tokens/s, MFU, their ratio, max |log-prob difference| between them,
    and each side's max |error| against `truth` (torch's float32 log-probs of the same batch; in bfloat16 the two
    sides round differently, so their difference alone cannot say which is off); `model`: jaxcontam's,
    `reference`: the torch module, both in `dtype`."""
    batch = tokens(shape, rows, length)
    ours = jax_logprobs(model, batch)  # compiles
    theirs = torch_logprobs(reference, batch, device)
    jax_s = median_time(lambda: jax_logprobs(model, batch), repeats, warmups=0)
    torch_s = median_time(lambda: torch_logprobs(reference, batch, device), repeats, warmups=0)
    scored = rows * length
    flops = shape.flops_per_token(length) * scored
    row = {
        "shape": shape.name,
        "dtype": dtype,
        "attention": model.config.execution.attention,
        "rows": rows,
        "length": length,
        "jaxcontam_tokens_per_s": round(scored / jax_s, 1),
        "torch_tokens_per_s": round(scored / torch_s, 1),
        "ratio_to_torch": round(torch_s / jax_s, 3),
        "jaxcontam_tflops": round(flops / jax_s / 1e12, 2),
        "max_abs_logprob_diff": float(np.max(np.abs(ours - theirs))),
        "max_abs_error_vs_float32": float(np.max(np.abs(ours - truth))),
        "torch_max_abs_error_vs_float32": float(np.max(np.abs(theirs - truth))),
    }
    if peaks:
        for key in ("bf16", "tf32", "fp32"):
            row[f"mfu_{key}"] = round(flops / jax_s / 1e12 / peaks[f"{key}_tflops"], 4)
            row[f"torch_mfu_{key}"] = round(flops / torch_s / 1e12 / peaks[f"{key}_tflops"], 4)
    return row
