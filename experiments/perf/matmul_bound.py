"""How fast can a SmolLM2-135M forward be on this CPU? Its matrix products alone, in jax and in torch.

Scoring and decoding spend most of their time in the model's matrix products, which jax (XLA:CPU's YNNPACK, or
Eigen with --eigen-too) and torch (oneDNN/MKL) hand to their libraries. This script runs exactly the products
of one SmolLM2-135M-Instruct forward (30 layers: q, k, v, o, gate, up, down; the tied [49152, 576] head), on
random float32 weights of the real shapes, with the elementwise glue that keeps each product live but no
attention, for `rows` token rows at once: 8192 (scoring 16 x 512) and 16 or 64 (one decode step of 16 or 64
rows). Both sides run in this process, interleaved; the script prints each side's time per forward, its GFLOP/s,
and that rate as a fraction of the machine's f32 matmul peak (a 2048^3 product, measured here).

What it bounds: a scoring or decode step cannot take less than its products take. So, with `--torch-model` (the
float32 SmolLM2 checkpoint of generation_vs_torch.py, built on first use), the script also times torch
transformers' whole forward on the same rows (sdpa attention: 16 x 512 tokens for scoring; a decode step of R
rows over a 192-token KV cache, from `generate` with 33 and 1 new tokens) and prints the most jaxcontam could
be ahead of torch: torch's whole step over jax's products alone.

  python -m experiments.perf.matmul_bound
  python -m experiments.perf.matmul_bound --rows 8192 16 64 --eigen-too --torch-model
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import statistics
import time

import numpy as np

LAYERS, HIDDEN, KV, INNER, VOCAB = 30, 576, 192, 1536, 49152  # SmolLM2-135M
LAYER_SHAPES = [
    (HIDDEN, HIDDEN),
    (HIDDEN, KV),
    (HIDDEN, KV),
    (HIDDEN, HIDDEN),
    (HIDDEN, INNER),
    (HIDDEN, INNER),
    (INNER, HIDDEN),
]  # q, k, v, o, gate, up, down as [in, out]
EIGEN = {"xla_cpu_experimental_ynn_fusion_type": ""}  # XLA:CPU's dots through Eigen instead of YNNPACK


def forward_flops(rows: int) -> float:
    per_layer = sum(a * b for a, b in LAYER_SHAPES)
    return 2.0 * rows * (LAYERS * per_layer + VOCAB * HIDDEN)


def weights(seed: int = 0) -> tuple[list[list[np.ndarray]], np.ndarray]:
    rng = np.random.default_rng(seed)
    layers = [
        [(rng.standard_normal(s, np.float32) / np.sqrt(s[0])).astype(np.float32) for s in LAYER_SHAPES]
        for _ in range(LAYERS)
    ]
    return layers, (rng.standard_normal((VOCAB, HIDDEN), np.float32) * 0.05).astype(np.float32)


def jax_forward(options):
    import jax
    import jax.numpy as jnp

    def forward(layers, head, x):
        for wq, wk, wv, wo, wg, wu, wd in layers:
            q, k, v = x @ wq, x @ wk, x @ wv
            x = x + (q + jnp.tile(k * v, (1, 3))) @ wo
            x = x + (jax.nn.silu(x @ wg) * (x @ wu)) @ wd
            x = x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-5)
        return jax.nn.logsumexp(x @ head.T, axis=-1)

    return jax.jit(forward, compiler_options=options)


def torch_forward(layers, head, x):
    import torch

    for wq, wk, wv, wo, wg, wu, wd in layers:
        q, k, v = x @ wq, x @ wk, x @ wv
        x = x + (q + (k * v).repeat(1, 3)) @ wo
        x = x + (torch.nn.functional.silu(x @ wg) * (x @ wu)) @ wd
        x = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-5)
    return torch.logsumexp(x @ head.T, dim=-1)


def peak_gflops(repeats: int) -> float:
    import jax
    import jax.numpy as jnp

    a = jnp.asarray(np.random.default_rng(1).standard_normal((2048, 2048), np.float32))
    product = jax.jit(lambda a: a @ a)
    product(a).block_until_ready()
    best = min(timed(lambda: product(a).block_until_ready()) for _ in range(repeats))
    return 2 * 2048**3 / best / 1e9


def torch_model_step(rows: int):
    """A callable that runs torch transformers' real SmolLM2 (sdpa attention) and returns its seconds per step:
    for scoring rows (>= 512), one forward of rows / 512 x 512 tokens; for decode rows, a 33-token `generate`
    minus a 1-token one after 160-token prompts, over the 32 decode steps that differ."""
    import torch
    import transformers as tf

    from experiments.perf.generation_vs_torch import float_checkpoint

    model = tf.AutoModelForCausalLM.from_pretrained(float_checkpoint(), dtype=torch.float32).eval()
    model.generation_config.eos_token_id = None
    rng = np.random.default_rng(3)
    if rows >= 512:
        tokens = torch.from_numpy(rng.integers(0, VOCAB, (rows // 512, 512)))
        return lambda: timed(lambda: model(tokens).logits)
    prompt = torch.from_numpy(rng.integers(0, VOCAB, (rows, 160)))

    def decode_step_seconds():
        many = timed(
            lambda: model.generate(prompt, max_new_tokens=33, min_new_tokens=33, do_sample=False, pad_token_id=0)
        )
        one = timed(lambda: model.generate(prompt, max_new_tokens=1, do_sample=False, pad_token_id=0))
        return (many - one) / 32

    return decode_step_seconds


def run_jax(forward, layers, head, x):
    return forward(layers, head, x).block_until_ready()


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[8192, 16, 64])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--eigen-too", action="store_true", help="also jax with Eigen dots (EIGEN options)")
    parser.add_argument("--torch-model", action="store_true", help="also torch's whole SmolLM2 step (the bound)")
    args = parser.parse_args()

    import jax
    import jax.numpy as jnp
    import torch

    layers, head = weights()
    jax_layers, jax_head = [[jnp.asarray(w) for w in layer] for layer in layers], jnp.asarray(head)
    torch_layers, torch_head = [[torch.from_numpy(w) for w in layer] for layer in layers], torch.from_numpy(head)
    sides = {"jax (YNNPACK)": jax_forward(None)}
    if args.eigen_too:
        sides["jax (Eigen)"] = jax_forward(EIGEN)
    peak = peak_gflops(args.repeats)
    print(
        f"{os.cpu_count()} cores ({platform.processor() or platform.machine()}), jax {jax.__version__}, torch "
        f"{torch.__version__} ({torch.get_num_threads()} threads); f32 matmul peak (2048^3, jax): {peak:.0f} GFLOP/s"
    )
    for rows in args.rows:
        x = np.random.default_rng(2).standard_normal((rows, HIDDEN)).astype(np.float32)
        runs = {name: functools.partial(run_jax, f, jax_layers, jax_head, jnp.asarray(x)) for name, f in sides.items()}
        runs["torch"] = functools.partial(torch_forward, torch_layers, torch_head, torch.from_numpy(x))
        whole = torch_model_step(rows) if args.torch_model else None
        times = {name: [] for name in runs}
        whole_times = []
        with torch.inference_mode():
            for run in runs.values():
                run()  # compile / warm up
            if whole is not None:
                whole()
            for _ in range(args.repeats):
                for name, run in runs.items():
                    times[name].append(timed(run))
                if whole is not None:
                    whole_times.append(whole())
        flops = forward_flops(rows)
        print(f"\nrows {rows}: {flops / 1e9:.1f} GFLOP of products per forward")
        for name, ts in times.items():
            t = statistics.median(ts)
            rate = flops / t / 1e9
            print(f"  {name:14s} {t * 1e3:8.1f} ms  {rate:6.1f} GFLOP/s  {rate / peak:6.1%} of peak")
        if whole_times:
            step, products = statistics.median(whole_times), statistics.median(times["jax (YNNPACK)"])
            kind = "forward of 16 x 512 tokens" if rows >= 512 else f"decode step of {rows} rows"
            print(
                f"  torch's whole {kind} (sdpa): {step * 1e3:.1f} ms -> jaxcontam can be at most "
                f"{step / products:.2f}x torch (its products alone take {products * 1e3:.1f} ms)"
            )


if __name__ == "__main__":
    main()
