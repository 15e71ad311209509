"""Greedy generation on a real model: jaxcontam `generate` vs torch transformers `generate`, same prompts.

SmolLM2-135M-Instruct (the shared Q4_1 GGUF, dequantised to float32) answers the first --items GSM8K test (or
TruthfulQA) questions (the benchmark's own prompt), --batch prompts at a time, exactly --new-tokens greedy tokens
(no stop token on either side, so both do the same work and their texts can be compared). Both run end to end as
a user runs them: raw text in (tokenisation, left padding), decoded text out. Torch uses its default attention
(sdpa), jaxcontam its jitted KV-cache decode loop, compiled by one warm-up call. Runs interleave torch / jaxcontam
--repeats times in this process; the script prints tokens/s of each (median run), their ratio, token agreement,
settings and machine.

  python -m experiments.perf.generation_vs_torch                      # 16 items, batch 16, 64 new tokens
  python -m experiments.perf.generation_vs_torch --new-tokens 256 --items 32
  python -m experiments.perf.generation_vs_torch --benchmark truthfulqa --items 64 --batch 64 --new-tokens 96
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import statistics
import time

GGUF_FOLDER = pathlib.Path(__file__).resolve().parents[3] / "shared" / "data" / "smollm2_135m_instruct"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE = pathlib.Path(__file__).resolve().parent / "cache" / "smollm2_135m_instruct_f32"


def float_checkpoint() -> pathlib.Path:
    """The GGUF dequantised to a float32 safetensors checkpoint + tokenizer (built once, then reused)."""
    if not (CACHE / "config.json").exists():
        import torch
        import transformers as tf

        quantized = tf.AutoModelForCausalLM.from_pretrained(GGUF_FOLDER, gguf_file=GGUF_NAME, dtype=torch.float32)
        plain = tf.AutoModelForCausalLM.from_config(quantized.config, dtype=torch.float32)
        plain.load_state_dict(quantized.state_dict())  # a GGUF-loaded model refuses save_pretrained
        plain.config.quantization_config = None
        plain.save_pretrained(CACHE)
        tf.AutoTokenizer.from_pretrained(GGUF_FOLDER, gguf_file=GGUF_NAME).save_pretrained(CACHE)
    return CACHE


SPLITS = {"gsm8k": "test", "truthfulqa": "validation"}


def benchmark_prompts(name: str, count: int) -> list[str]:
    """The first `count` prompts of GSM8K test or TruthfulQA (the audit's own prompts of each)."""
    from jaxcontam.data import load_benchmark

    bench = load_benchmark(name, SPLITS[name], path=GGUF_FOLDER.parent, limit=count)
    return [bench.prompt(item) for item in bench.items]


def run_torch(model, tokenizer, texts: list[str], batch: int, new_tokens: int) -> list[str]:
    import torch

    outputs = []
    with torch.inference_mode():
        for start in range(0, len(texts), batch):
            enc = tokenizer(texts[start : start + batch], return_tensors="pt", padding=True)
            out = model.generate(**enc, max_new_tokens=new_tokens, do_sample=False, pad_token_id=tokenizer.pad_token_id)
            outputs += tokenizer.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
    return outputs


def run_jax(model, texts: list[str], batch: int, new_tokens: int) -> list[str]:
    from jaxcontam.engine import generate

    ids = [model.tokenizer.encode(t) for t in texts]
    return [g.text for g in generate(model, ids, max_new_tokens=new_tokens, stop_token_ids=[], rows_per_batch=batch)]


def timed(fn) -> tuple[float, list[str]]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=16)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--benchmark", choices=sorted(SPLITS), default="gsm8k", help="whose prompts")
    args = parser.parse_args()

    import jax
    import torch
    import transformers as tf

    import jaxcontam

    folder = float_checkpoint()
    tokenizer = tf.AutoTokenizer.from_pretrained(folder, padding_side="left")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    torch_model = tf.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    torch_model.generation_config.eos_token_id = None  # like stop_token_ids=[]: exactly --new-tokens argmax tokens
    model = jaxcontam.load_model(str(folder))
    texts = benchmark_prompts(args.benchmark, args.items)

    run_jax(model, texts, args.batch, args.new_tokens)  # compile every bucket once
    run_torch(torch_model, tokenizer, texts[: args.batch], args.batch, 4)  # warm torch's kernels
    t_torch, t_jax = [], []
    for _ in range(args.repeats):
        seconds, torch_texts = timed(lambda: run_torch(torch_model, tokenizer, texts, args.batch, args.new_tokens))
        t_torch.append(seconds)
        seconds, jax_texts = timed(lambda: run_jax(model, texts, args.batch, args.new_tokens))
        t_jax.append(seconds)
    same = sum(a == b for a, b in zip(torch_texts, jax_texts))
    tokens = args.items * args.new_tokens
    torch_rate, jax_rate = tokens / statistics.median(t_torch), tokens / statistics.median(t_jax)
    print(f"SmolLM2-135M-Instruct f32, {args.items} {args.benchmark} prompts, batch {args.batch}, "
          f"{args.new_tokens} new tokens, "
          f"greedy; torch {torch.__version__} attn={torch_model.config._attn_implementation}, jax {jax.__version__} "
          f"on {jax.devices()[0].platform}; {os.cpu_count()} cores ({platform.processor() or platform.machine()}), "
          f"torch threads {torch.get_num_threads()}")
    print(f"torch generate: {torch_rate:,.1f} tok/s ({', '.join(f'{t:.1f}' for t in t_torch)} s)   "
          f"jaxcontam generate: {jax_rate:,.1f} tok/s ({', '.join(f'{t:.1f}' for t in t_jax)} s)")
    print(f"ratio jaxcontam/torch = {jax_rate / torch_rate:.2f}x   identical texts: {same}/{args.items}")


if __name__ == "__main__":
    main()
