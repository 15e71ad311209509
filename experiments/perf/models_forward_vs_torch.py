"""Decoder forward (final-normed hidden states): jaxcontam vs torch transformers, same weights and tokens.

Saves a random model of the chosen family to a temp dir, loads it into torch (its default attention, sdpa) and into
jaxcontam, runs the backbone on the same [batch, seq] tokens in this process, checks the hidden states agree,
and prints tokens/s of both and their ratio (median of --repeats timed runs after one warm-up).

  python -m experiments.perf.models_forward_vs_torch                     # llama, 16 x 256, hidden 512
  python -m experiments.perf.models_forward_vs_torch --family gemma2 --batch 4 --seq 512
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import numpy as np


def build(family: str, hidden: int, layers: int, seq: int):
    import torch
    import transformers as tf

    common = {"vocab_size": 32000, "hidden_size": hidden, "intermediate_size": hidden * 3,
              "num_hidden_layers": layers, "num_attention_heads": hidden // 64, "max_position_embeddings": seq}
    config = {
        "llama": lambda: tf.LlamaConfig(**common, num_key_value_heads=hidden // 128),
        "gemma2": lambda: tf.Gemma2Config(**common, num_key_value_heads=hidden // 128, head_dim=64,
                                          sliding_window=seq // 4, query_pre_attn_scalar=64),
        "gpt_neox": lambda: tf.GPTNeoXConfig(**common),
    }[family]()
    torch.manual_seed(0)
    return tf.AutoModelForCausalLM.from_config(config).eval()  # transformers' default attention


def timed(fn, repeats: int) -> float:
    fn()  # warm-up (compilation for jax)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", default="llama", choices=["llama", "gemma2", "gpt_neox"])
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import jax
    import torch

    import jaxcontam
    from jaxcontam import models

    torch_model = build(args.family, args.hidden, args.layers, args.seq)
    with tempfile.TemporaryDirectory() as tmp:
        torch_model.save_pretrained(tmp)
        model = jaxcontam.load_model(tmp)
    tokens = np.random.default_rng(0).integers(0, 32000, (args.batch, args.seq)).astype(np.int32)
    positions = np.broadcast_to(np.arange(args.seq, dtype=np.int32), tokens.shape)
    segments = np.ones_like(tokens)
    forward = jax.jit(models.hidden_states, static_argnums=1)
    backbone = torch_model.base_model

    def run_jax():
        return forward(model.params, model.config, tokens, positions, segments).block_until_ready()

    def run_torch():
        with torch.no_grad():
            return backbone(torch.from_numpy(tokens.astype(np.int64))).last_hidden_state

    deviation = float(np.abs(np.asarray(run_jax()) - run_torch().numpy()).max())
    t_jax, t_torch = timed(run_jax, args.repeats), timed(run_torch, args.repeats)
    n = args.batch * args.seq
    print(f"{args.family} hidden={args.hidden} layers={args.layers} batch={args.batch} seq={args.seq} "
          f"on {jax.devices()[0].platform}: max |hidden diff| = {deviation:.2e}")
    print(f"torch ({torch_model.config._attn_implementation}): {n / t_torch:,.0f} tok/s   jaxcontam: {n / t_jax:,.0f} tok/s   "
          f"ratio jaxcontam/torch = {t_torch / t_jax:.2f}x")


if __name__ == "__main__":
    main()
