"""Numerics: the bundled model's float32 log-probs on the accelerator against the CPU (goal: within 1e-4), and
jaxcontam and torch against torch's float32 log-probs on the accelerator for the random-weight models (from the
scoring rows)."""

from __future__ import annotations

import numpy as np

TOLERANCE = {"float32": 1e-4, "bfloat16": 5e-2}  # max |log-prob difference|; bfloat16 is reported against a loose bound


def bundled_texts(count: int) -> list[str]:
    import json

    from jaxcontam.audit.config import EXAMPLE_CONFIG

    lines = (EXAMPLE_CONFIG.parent / "gsm8k_test_sample.jsonl").read_text().splitlines()[:count]
    return [f"Question: {row['question']}\nAnswer: {row['answer']}" for row in map(json.loads, lines)]


def accelerator_vs_cpu(count: int) -> dict:
    """Max |difference| of the bundled model's float32 log-probs, default device against the CPU."""
    import jax

    import jaxcontam
    from jaxcontam.audit.config import EXAMPLE_CONFIG
    from jaxcontam.engine.scoring import score_logprobs
    from jaxcontam.mesh import make_mesh

    folder = str(EXAMPLE_CONFIG.parent / "model")
    here = jaxcontam.load_model(folder)
    cpu = jaxcontam.load_model(folder, mesh=make_mesh(devices=jax.devices("cpu")[:1]))
    ids = [here.tokenizer.encode(text) for text in bundled_texts(count)]
    ours = score_logprobs(here, ids, rows_per_batch=count)
    base = score_logprobs(cpu, ids, rows_per_batch=count)
    diff = max(float(np.max(np.abs(a.logprobs - b.logprobs))) for a, b in zip(ours, base, strict=True))
    return {
        "platform": jax.devices()[0].platform,
        "texts": count,
        "tokens": sum(len(i) for i in ids),
        "max_abs_diff": diff,
        "tolerance": TOLERANCE["float32"],
        "ok": diff <= TOLERANCE["float32"],
    }


def against_torch(scoring_rows: list[dict]) -> list[dict]:
    """Each scoring row's log-probs against torch's float32 ones on the same weights and batch: in float32 within
    `TOLERANCE`; in bfloat16 no further from float32 than torch's own bfloat16 (or within `TOLERANCE`), since the
    two sides round differently and their difference alone cannot say which one is off."""
    checked = []
    for row in scoring_rows:
        if "max_abs_error_vs_float32" not in row:
            continue
        ours, torch_error = row["max_abs_error_vs_float32"], row["torch_max_abs_error_vs_float32"]
        bound = TOLERANCE[row["dtype"]] if row["dtype"] == "float32" else max(TOLERANCE[row["dtype"]], torch_error)
        checked.append(
            {
                "shape": row["shape"],
                "dtype": row["dtype"],
                "max_abs_error_vs_float32": ours,
                "torch_max_abs_error_vs_float32": torch_error,
                "max_abs_diff_to_torch": row["max_abs_logprob_diff"],
                "tolerance": bound,
                "ok": ours <= bound,
            }
        )
    return checked
