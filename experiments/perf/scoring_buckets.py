"""Scoring throughput of `score_logprobs` for the choices issue 63 made to compile fewer programs: one scoring
program that always computes the Min-K%++ statistics, and packed buckets from 256 tokens (were 64).

SmolLM2-135M-Instruct (the shared GGUF) scores Gutenberg text cut into texts of 512 and of 2048 tokens (the long
inputs, whose buckets the change leaves as they were) and a mix of short texts (16-300 tokens, the bundled audit's
kind), with and without `with_stats`, each after a warm-up call (compiles excluded): tokens/s of real tokens and
the programs compiled. Run it once per checkout, interleaved, and compare (the machine is shared):

    PYTHONPATH=<main's checkout>:. python -P -m experiments.perf.scoring_buckets --label before
    python -m experiments.perf.scoring_buckets --label after

First, what the statistics add to a step: the vocabulary head with and without them, alternated in one process
(fastest of 5), beside a whole 4 x 512 step (`--head-only`: that alone). Appends a dated JSON line per run to
scoring_buckets.jsonl beside this script.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import statistics
import subprocess
import time

HERE = pathlib.Path(__file__).resolve().parent
DATA = pathlib.Path(os.environ.get("JAXCONTAM_SHARED_DATA", HERE.parents[2] / "shared" / "data"))
CASES = {  # name: (texts, tokens each or None for the short mix, rows per batch)
    "512 tokens": (4, 512, 4),
    "2048 tokens": (1, 2048, 1),
    "short mix": (24, None, 16),
}


def texts(tokenizer, count: int, length: int | None, seed: int) -> list[list[int]]:
    import numpy as np

    books = sorted((DATA / "corpus_gutenberg" / "books").glob("*"))
    ids = tokenizer.encode(books[0].read_text(errors="replace")[:400_000])
    rng = np.random.default_rng(seed)
    lengths = [length] * count if length else rng.integers(16, 301, count).tolist()
    starts = rng.integers(0, len(ids) - max(lengths), count)
    return [ids[s : s + n] for s, n in zip(starts, lengths)]


def timed(model, token_ids, rows: int, with_stats: bool, repeats: int) -> tuple[float, int]:
    from jaxcontam.engine.compile_guard import count_compilations
    from jaxcontam.engine.scoring import score_logprobs

    with count_compilations() as counts:
        score_logprobs(model, token_ids, rows_per_batch=rows, with_stats=with_stats)
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        score_logprobs(model, token_ids, rows_per_batch=rows, with_stats=with_stats)
        seconds.append(time.perf_counter() - started)
    return sum(map(len, token_ids)) / statistics.median(seconds), counts["jit(score_step)"]


def head_cost(model, rows: int, length: int, repeats: int) -> dict:
    """What the statistics add to a scoring step: the vocabulary head (`token_logprob_stats`) on SmolLM2's
    [rows x length, D] hidden states with and without them, alternated, fastest of `repeats` each, beside a whole
    step (`score_logprobs` of rows x length tokens)."""
    import jax
    import numpy as np

    from jaxcontam.engine.scoring import score_logprobs
    from jaxcontam.kernels.vocab_blocks import token_logprob_stats

    weight = model.config.output_projection(model.params)[0]
    rng = np.random.default_rng(0)
    hidden = jax.device_put(rng.standard_normal((rows * length, weight.shape[1])).astype(np.float32))
    targets = jax.device_put(rng.integers(0, weight.shape[0], rows * length).astype(np.int32))
    heads = {s: jax.jit(lambda h, w, t, s=s: token_logprob_stats(h, w, t, with_stats=s)) for s in (False, True)}
    best = {False: float("inf"), True: float("inf")}
    for with_stats in (False, True):
        jax.block_until_ready(heads[with_stats](hidden, weight, targets))
    for _ in range(repeats):
        for with_stats in (False, True):
            started = time.perf_counter()
            jax.block_until_ready(heads[with_stats](hidden, weight, targets))
            best[with_stats] = min(best[with_stats], time.perf_counter() - started)
    ids = [rng.integers(0, weight.shape[0], length).tolist() for _ in range(rows)]
    score_logprobs(model, ids, rows_per_batch=rows, buckets=(length,))
    step = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        score_logprobs(model, ids, rows_per_batch=rows, buckets=(length,))
        step = min(step, time.perf_counter() - started)
    return {
        "shape": f"{rows} x {length}",
        "head_without_stats_s": round(best[False], 3),
        "head_with_stats_s": round(best[True], 3),
        "step_s": round(step, 3),
        "stats_share_of_step": round((best[True] - best[False]) / step, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--label", default="")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--head-only", action="store_true", help="only what the statistics add to a step")
    args = parser.parse_args()
    import jaxcontam

    model = jaxcontam.load_model(str(DATA / "smollm2_135m_instruct"))
    row: dict = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), "label": args.label}
    found = subprocess.run(
        ["git", "-C", str(pathlib.Path(jaxcontam.__file__).parent), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
    )
    row["commit"] = found.stdout.strip() or None  # the jaxcontam measured (a commit, not a machine path)
    row["load_average"] = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    row["statistics"] = head_cost(model, 4, 512, repeats=5)
    print(f"{args.label:>8} statistics: {row['statistics']}", flush=True)
    for index, (name, (count, length, rows)) in enumerate([] if args.head_only else CASES.items()):
        ids = texts(model.tokenizer, count, length, seed=index)
        for with_stats in (False, True):
            rate, programs = timed(model, ids, rows, with_stats, args.repeats)
            key = f"{name}, {'with' if with_stats else 'without'} stats"
            row[key] = {"tokens_per_s": round(rate, 1), "score_step_programs": programs}
            print(f"{args.label:>8} {key:<32} {rate:9.1f} tokens/s  ({programs} score_step programs)", flush=True)
    with (HERE / "scoring_buckets.jsonl").open("a") as results:
        results.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
