"""The scoring head alone: blockwise log-softmax (jaxcontam) vs full logits + log_softmax (torch), same inputs.

Times log p(target) for N = batch x seq hidden states through a [V, D] output
matrix, both in this process, and prints tokens/s, their ratio, achieved GFLOP/s,
the machine's measured f32 matmul GFLOP/s, and the compiled temporary memory of
the jaxcontam head for a 32k and a 256k vocabulary (it depends on N x block,
not on V; full f32 logits would need N x V x 4 bytes).

  python -m experiments.perf.scoring_head_vs_torch [--batch 16 --seq 512 --hidden 512 --vocab 32000]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import time

import numpy as np


def best_time(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--vocab-block", type=int, default=2048)
    parser.add_argument("--with-stats", action="store_true", help="also the Min-K%%++ moments (jaxcontam only)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import jax
    import jax.numpy as jnp
    import torch

    from jaxcontam.kernels.vocab_blocks import token_logprob_stats

    torch.set_num_threads(os.cpu_count())
    n = args.batch * args.seq
    rng = np.random.default_rng(0)
    hidden = rng.normal(size=(n, args.hidden)).astype(np.float32)
    weight = (rng.normal(size=(args.vocab, args.hidden)) / np.sqrt(args.hidden)).astype(np.float32)
    targets = rng.integers(0, args.vocab, size=n)

    head = jax.jit(functools.partial(token_logprob_stats, vocab_block=args.vocab_block, with_stats=args.with_stats))
    h, w, t = jnp.asarray(hidden), jnp.asarray(weight), jnp.asarray(targets, jnp.int32)
    t_jax = best_time(lambda: head(h, w, t).logprob.block_until_ready(), args.repeats)

    th, tw, tt = torch.from_numpy(hidden), torch.from_numpy(weight), torch.from_numpy(targets)

    def torch_head():
        with torch.inference_mode():
            return torch.log_softmax(th @ tw.T, -1).gather(-1, tt[:, None])[:, 0]

    t_torch = best_time(torch_head, args.repeats)
    diff = float(np.max(np.abs(np.asarray(head(h, w, t).logprob) - torch_head().numpy())))

    a = jnp.asarray(rng.normal(size=(2048, 2048)), jnp.float32)
    mm = jax.jit(jnp.dot)
    ta = torch.from_numpy(np.array(a))
    t_mm = min(best_time(lambda: mm(a, a).block_until_ready(), 5), best_time(lambda: torch.mm(ta, ta), 5))
    flops = 2.0 * n * args.hidden * args.vocab

    memory = {}
    for vocab in (32000, 256000):
        lowered = jax.jit(functools.partial(token_logprob_stats, vocab_block=args.vocab_block, with_stats=True)).lower(
            jax.ShapeDtypeStruct((n, args.hidden), jnp.float32), jax.ShapeDtypeStruct((vocab, args.hidden), jnp.float32),
            jax.ShapeDtypeStruct((n,), jnp.int32))
        memory[vocab] = round(lowered.compile().memory_analysis().temp_size_in_bytes / 2**20, 1)

    print(json.dumps({
        "device": str(jax.devices()[0]), "cpu_threads": os.cpu_count(), "tokens": n, "hidden": args.hidden,
        "vocab": args.vocab, "vocab_block": args.vocab_block, "with_stats": args.with_stats,
        "jaxcontam_tokens_per_s": round(n / t_jax), "torch_tokens_per_s": round(n / t_torch),
        "speedup_vs_torch": round(t_torch / t_jax, 3), "max_abs_diff": diff,
        "jaxcontam_GFLOPs": round(flops / t_jax / 1e9, 1),
        "machine_f32_matmul_GFLOPs": round(2 * 2048**3 / t_mm / 1e9, 1),
        "fraction_of_matmul_flops": round(flops / t_jax / (2 * 2048**3 / t_mm), 3),
        "jaxcontam_temp_MiB_by_vocab": memory,
        "full_f32_logits_MiB_by_vocab": {v: round(n * v * 4 / 2**20, 1) for v in memory},
    }, indent=1))


if __name__ == "__main__":
    main()
