"""Training speed of `jaxcontam contaminate`'s step: full fine-tuning of SmolLM2-135M in float32 on this machine.

Runs the same jitted AdamW step the command runs (`training.loop.fit`) on packed rows of real general text,
times the steps after the first (the compile), and puts the rate next to the machine's float32 matmul peak
measured in the same process (the best of 5 jitted 2048^3 products), with the model's FLOPs per token
(`model_flops_per_token`). Prints one JSON line with the load average and the process's CPU
seconds over the timed steps, since the cores may be shared: tokens per CPU-second times the core count bounds
what the quiet machine gives.

    python -m experiments.real_contamination.train_speed --batch 4 --seq 512 --steps 20
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
GGUF = ROOT.parent / "shared" / "data" / "smollm2_135m_instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf"
CORPUS = ROOT.parent / "shared" / "data" / "corpus_gutenberg" / "books"


def matmul_peak(n: int = 2048, repeats: int = 5) -> float:
    """FLOP/s of the best of `repeats` jitted float32 n x n x n products."""
    import jax
    import jax.numpy as jnp

    a = jax.random.normal(jax.random.key(0), (n, n), jnp.float32)
    product = jax.jit(jnp.dot)
    product(a, a).block_until_ready()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        product(a, a).block_until_ready()
        best = min(best, time.perf_counter() - start)
    return 2.0 * n**3 / best


def model_flops_per_token(params: dict, spec, seq: int) -> float:
    """Training FLOPs per token, 3 x the forward's: 2 per weight of every layer matrix and of the output
    projection, and the attention's QK^T and AV over a causal context of seq / 2 on average. (XLA's
    `cost_analysis` counts a scanned layer once, not once per layer, so it is not used.)"""
    matrices = sum(params["layers"][name].size for name in ("wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down")
                   if name in params["layers"])
    head = spec.vocab_size * spec.hidden_size
    attention = spec.num_layers * 2 * 2 * (seq / 2) * spec.num_heads * spec.head_dim
    return 3 * (2 * (matrices + head) + attention)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--steps", type=int, default=20,
                        help="steps timed after the first (compile) step; 0: print the step's FLOPs and the peak only")
    parser.add_argument("--model", default=str(GGUF))
    parser.add_argument("--layers", default="auto",
                        help="comma-separated runs, one JSON line each: auto (fit's default: unrolled on CPU), scan, "
                             "unrolled")
    args = parser.parse_args()

    import jaxcontam
    from jaxcontam.data.corpus import open_corpus
    from jaxcontam.training.batches import packed_batches
    from jaxcontam.training.contamination_mix import general_documents

    peak_before = matmul_peak()
    model = jaxcontam.load_model(args.model)
    steps = args.steps + 1
    _, ids = general_documents(open_corpus(CORPUS), model.tokenizer, steps * args.batch * args.seq)
    batches = list(packed_batches(ids, seq_len=args.seq, batch_size=args.batch, seed=0))[:steps]
    flops = model_flops_per_token(model.params, model.config, args.seq) * args.batch * args.seq
    if not args.steps:  # the step's FLOPs and the machine's peak only, e.g. for a rate measured elsewhere
        print(json.dumps({"batch": args.batch, "seq": args.seq, "step_flops": flops,
                          "flops_per_token": flops / (args.batch * args.seq),
                          "matmul_peak_gflops": round(max(peak_before, matmul_peak()) / 1e9, 1),
                          "load_average": os.getloadavg()}))
        return
    for layers in args.layers.split(","):
        unroll = {"auto": None, "scan": False, "unrolled": True}[layers]
        print(json.dumps({"layers": layers, **timed_fit(model, batches, steps, flops, args, peak_before, unroll)}))


def timed_fit(model, batches, steps, flops, args, peak_before, unroll) -> dict:
    """`fit` over `batches` from the loaded weights (a copy: the step donates its inputs); its rates."""
    import jax

    from jaxcontam.mesh import batch_sharding
    from jaxcontam.training.loop import fit

    marks = {}

    def log(line: str) -> None:  # CPU seconds of this process between the first and the last logged step
        marks.setdefault("first", (time.process_time(), time.perf_counter()))
        marks["last"] = (time.process_time(), time.perf_counter())
        print(line, flush=True)

    start = time.perf_counter()
    weights = jax.tree.map(lambda a: a.copy(), model.params)
    result = fit(model.config, weights, iter(batches), steps=steps, learning_rate=1e-4, warmup=1,
                 weight_decay=0.0, log_every=1, log=log, batch_sharding=batch_sharding(model.mesh),
                 unroll_layers=unroll)
    wall = time.perf_counter() - start
    cpu = marks["last"][0] - marks["first"][0]
    peak_after = matmul_peak()
    tokens_per_step = args.batch * args.seq
    rate = result.tokens_per_second
    achieved = rate / tokens_per_step * flops
    peak = max(peak_before, peak_after)
    return {
        "model": pathlib.Path(args.model).name, "batch": args.batch, "seq": args.seq, "timed_steps": args.steps,
        "tokens_per_second": round(rate, 1), "step_flops": flops, "gflops_per_second": round(achieved / 1e9, 1),
        "matmul_peak_gflops": round(peak / 1e9, 1), "peak_before_after": [round(peak_before / 1e9, 1),
                                                                         round(peak_after / 1e9, 1)],
        "fraction_of_peak": round(achieved / peak, 3), "wall_seconds": round(wall, 1),
        "cpu_seconds_timed_steps": round(cpu, 1),
        "tokens_per_cpu_second": round((steps - 1) * tokens_per_step / cpu, 1) if cpu else None,
        "loss_first_last": result.losses[:1] + result.losses[-1:], "load_average": os.getloadavg(),
        "devices": jax.device_count()}


if __name__ == "__main__":
    main()
