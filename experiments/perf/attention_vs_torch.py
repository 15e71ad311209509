"""Attention alone: jaxcontam's CPU attention (`attention.jnp_attention`) vs torch's `scaled_dot_product_attention`.

The attention of a SmolLM2-135M scoring forward (30 layers; 9 query heads over 3 key/value heads, head dim 64) on
--batch rows of --seq tokens, causal, each row one sequence: random float32 q, k, v, the same on both sides.
jaxcontam runs its portable path (online softmax over key blocks of --block tokens, skipping blocks no query may
see) jitted over the 30 layers; torch runs sdpa with `enable_gqa`, its default CPU kernel (flash attention). Both
in this process, interleaved; prints seconds per forward's attention, useful (causal) GFLOP/s, the ratio and the
largest output difference.

  python -m experiments.perf.attention_vs_torch
  python -m experiments.perf.attention_vs_torch --batch 4 --seq 2048 --block 64 128 256
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import statistics
import time

import numpy as np

LAYERS, HEADS, KV_HEADS, HEAD_DIM = 30, 9, 3, 64


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--block", type=int, nargs="+", default=[128])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import jax
    import jax.numpy as jnp
    import torch

    from jaxcontam.models import attention
    from jaxcontam.models.spec import from_hf_config

    spec = from_hf_config({  # SmolLM2-135M's attention shape
        "model_type": "llama", "vocab_size": 8, "hidden_size": HEADS * HEAD_DIM, "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS, "intermediate_size": 8,
        "max_position_embeddings": args.seq, "hidden_act": "silu", "rms_norm_eps": 1e-5,
    })
    rng = np.random.default_rng(0)
    shape = (LAYERS, args.batch, args.seq)
    q = rng.standard_normal((*shape, HEADS, HEAD_DIM), np.float32)
    k, v = (rng.standard_normal((*shape, KV_HEADS, HEAD_DIM), np.float32) for _ in range(2))
    positions = jnp.tile(jnp.arange(args.seq, dtype=jnp.int32), (args.batch, 1))
    segments = jnp.ones((args.batch, args.seq), jnp.int32)

    def layers(block, q, k, v):
        def layer(carry, qkv):
            return carry, attention.jnp_attention(spec, *qkv, positions, segments, 0, block)

        return jax.lax.scan(layer, 0, (q, k, v))[1]

    jax_inputs = tuple(jnp.asarray(x) for x in (q, k, v))
    runs = {f"jaxcontam, block {b}": jax.jit(functools.partial(layers, b)) for b in args.block}
    heads_first = [torch.from_numpy(np.ascontiguousarray(np.swapaxes(x, 2, 3))) for x in (q, k, v)]

    def torch_layers():
        sdpa = torch.nn.functional.scaled_dot_product_attention
        return [sdpa(*(x[i] for x in heads_first), is_causal=True, enable_gqa=True) for i in range(LAYERS)]

    outputs = {name: np.asarray(run(*jax_inputs)) for name, run in runs.items()}
    with torch.inference_mode():
        reference = np.swapaxes(torch.stack(torch_layers()).numpy(), 2, 3)
        times = {name: [] for name in [*runs, "torch sdpa"]}
        for _ in range(args.repeats):
            for name, run in runs.items():
                times[name].append(timed(lambda run=run: jax.block_until_ready(run(*jax_inputs))))
            times["torch sdpa"].append(timed(torch_layers))
    flops = LAYERS * 4 * args.batch * args.seq * args.seq * HEADS * HEAD_DIM / 2  # causal half of QK^T and PV
    print(f"attention of {LAYERS} layers, {args.batch} x {args.seq} tokens, {HEADS} heads over {KV_HEADS}, head dim "
          f"{HEAD_DIM}, causal, float32; jax {jax.__version__}, torch {torch.__version__} ({torch.get_num_threads()} "
          f"threads); {os.cpu_count()} cores ({platform.processor() or platform.machine()})")
    torch_seconds = statistics.median(times["torch sdpa"])
    for name, ts in times.items():
        seconds = statistics.median(ts)
        diff = f", max |diff| vs torch {np.abs(outputs[name] - reference).max():.1e}" if name in outputs else ""
        print(f"  {name:22s} {seconds:6.2f} s  {flops / seconds / 1e9:5.0f} GFLOP/s  "
              f"torch/this {torch_seconds / seconds:.2f}x{diff}")


if __name__ == "__main__":
    main()
