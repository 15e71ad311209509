"""Numerics: the bundled model's float32 log-probs on the accelerator against the CPU (goal: within 1e-4), and
jaxcontam against torch on the accelerator for the random-weight models (from the scoring rows)."""

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
    """The scoring rows' jaxcontam-vs-torch log-prob differences against `TOLERANCE`."""
    return [
        {
            "shape": row["shape"],
            "dtype": row["dtype"],
            "max_abs_diff": row["max_abs_logprob_diff"],
            "tolerance": TOLERANCE[row["dtype"]],
            "ok": row["max_abs_logprob_diff"] <= TOLERANCE[row["dtype"]],
        }
        for row in scoring_rows
        if "max_abs_logprob_diff" in row
    ]
