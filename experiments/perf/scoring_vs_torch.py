"""Scoring throughput: jaxcontam vs torch transformers on the same Llama-style weights and text.

Default: SmolLM2-135M-Instruct (the shared GGUF dequantised to float32, see generation_vs_torch.py) on real text
(GSM8K test problems and solutions, 16 rows of 512 tokens), end to end as a user runs it: raw text in,
tokenized by each side, per-token log-probs out. `--shape 60m`: a random ~60M-parameter Llama checkpoint built
once under the git-ignored experiments/perf/cache/, on random tokens. The peer is torch transformers with the
attention its users get by default (sdpa); `--eager-too` adds a column for attn_implementation="eager". Both run
in this process, interleaved; prints tokens/s, peak memory, the ratio, the machine's measured f32 matmul FLOP/s
and jaxcontam's fraction of it.

  python -m experiments.perf.scoring_vs_torch                      # CPU: SmolLM2, real text, 16 x 512
  python -m experiments.perf.scoring_vs_torch --shape 60m          # CPU: ~60M params, random tokens
  python -m experiments.perf.scoring_vs_torch --vocab 256000 --memory-only   # memory vs vocabulary
  python -m experiments.perf.scoring_vs_torch --gpu                # 1B Llama shape, bf16, 2048 tokens, MFU
  python -m experiments.perf.scoring_vs_torch --detectors          # all likelihood detectors vs Min-K%++ alone

`--detectors` times jaxcontam alone in two configurations, interleaved in one process: the scores of Min-K%++
alone (today's audit before Gap-K% and DC-PDD), and every likelihood detector (mean log-prob, zlib, Min-K%,
Min-K%++, Gap-K%, DC-PDD) from the same one forward pass, raw text in and scores out; the goal is at most 10%
below Min-K%++ alone. DC-PDD reads a frequency table of the model's vocabulary size with random counts (its cost
does not depend on the counts).

FLOPs per scored token are counted as 2 * (matmul parameters incl. lm_head) +
4 * layers * seq * hidden (attention scores and values, full square), the usual
forward-pass convention.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import threading
import time

import numpy as np

CACHE = pathlib.Path(__file__).resolve().parent / "cache"
CPU_SHAPE = {"hidden": 512, "layers": 8, "heads": 8, "kv_heads": 8, "intermediate": 1536, "vocab": 32000}
GPU_SHAPE = {"hidden": 2048, "layers": 16, "heads": 32, "kv_heads": 8, "intermediate": 8192, "vocab": 128256}


def build_checkpoint(shape: dict, max_position: int) -> pathlib.Path:
    """A random LlamaForCausalLM saved as safetensors (reused when present)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    name = "llama-" + "-".join(f"{k}{v}" for k, v in shape.items()) + f"-pos{max_position}"
    path = CACHE / name
    if (path / "model.safetensors").exists() or (path / "model.safetensors.index.json").exists():
        return path
    config = LlamaConfig(
        hidden_size=shape["hidden"], num_hidden_layers=shape["layers"], num_attention_heads=shape["heads"],
        num_key_value_heads=shape["kv_heads"], intermediate_size=shape["intermediate"], vocab_size=shape["vocab"],
        max_position_embeddings=max_position, tie_word_embeddings=False, torch_dtype="float32",
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(path, safe_serialization=True)
    return path


def flops_per_token(shape: dict, seq: int) -> float:
    d, layers, v = shape["hidden"], shape["layers"], shape["vocab"]
    head_dim = d // shape["heads"]
    attn = d * head_dim * (2 * shape["heads"] + 2 * shape["kv_heads"])
    mlp = 3 * d * shape["intermediate"]
    return 2.0 * (layers * (attn + mlp) + v * d) + 4.0 * layers * seq * d


class PeakRss:
    """Peak resident memory above the starting level, sampled every 2 ms from /proc/self/statm."""

    def __enter__(self):
        self.page = os.sysconf("SC_PAGE_SIZE")
        self.base = self.peak = self._rss()
        self.running = True
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()
        return self

    def _rss(self) -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * self.page

    def _poll(self):
        while self.running:
            self.peak = max(self.peak, self._rss())
            time.sleep(0.002)

    def __exit__(self, *exc):
        self.running = False
        self.thread.join()
        self.peak = max(self.peak, self._rss())

    @property
    def delta_mib(self) -> float:
        return (self.peak - self.base) / 2**20


def best_time(fn, repeats: int, warm: bool = True) -> float:
    if warm:
        fn()  # warm-up (compilation, allocator)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def matmul_flops(n: int = 2048) -> float:
    """The machine's f32 matmul FLOP/s: the better of XLA and torch on an n x n x n product."""
    import jax
    import jax.numpy as jnp
    import torch

    a = jax.random.normal(jax.random.key(0), (n, n), jnp.float32)
    mm = jax.jit(jnp.dot)
    t_jax = best_time(lambda: mm(a, a).block_until_ready(), 5)
    ta = torch.randn(n, n)
    t_torch = best_time(lambda: torch.mm(ta, ta), 5)
    return 2.0 * n**3 / min(t_jax, t_torch)


def torch_score(path, tokens, dtype: str, device: str, attention: str | None = None):
    """A scoring run of torch transformers; `tokens`: an int array, or a callable giving it (tokenization timed)."""
    import torch
    from transformers import LlamaForCausalLM

    torch_dtype = torch.bfloat16 if dtype == "bfloat16" else torch.float32
    chosen = {"attn_implementation": attention} if attention else {}  # None: transformers' default (sdpa)
    model = LlamaForCausalLM.from_pretrained(path, dtype=torch_dtype, **chosen).to(device).eval()

    def run():
        ids = torch.as_tensor(tokens() if callable(tokens) else tokens, device=device)
        with torch.inference_mode():
            logits = model(ids).logits.float()
            out = torch.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:, None])[..., 0]
            if device == "cuda":
                torch.cuda.synchronize()
            return out

    return run, model.config._attn_implementation


def jax_score(path, tokens, dtype: str, vocab_block: int, rows: int, width: int):
    """A scoring run of jaxcontam; `tokens`: an int array, or a callable giving it (tokenization timed)."""
    import jaxcontam
    from jaxcontam.engine.scoring import score_logprobs

    model = jaxcontam.load_model(str(path), dtype=dtype)

    def run():
        seqs = [list(map(int, row)) for row in (tokens() if callable(tokens) else tokens)]
        return score_logprobs(model, seqs, rows_per_batch=rows, buckets=(width,), vocab_block=vocab_block)

    return run, model


def real_text_tokens(batch: int, seq: int):
    """(checkpoint, tokenize) for SmolLM2 on GSM8K test text: `tokenize()` encodes `batch` raw texts with the
    model's tokenizer and cuts each to `seq` tokens, as a user's scoring run starts."""
    import json as json_lib

    from transformers import AutoTokenizer

    from experiments.perf.generation_vs_torch import GGUF_FOLDER, float_checkpoint

    folder = float_checkpoint()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    lines = (GGUF_FOLDER.parent / "gsm8k" / "test.jsonl").read_text(encoding="utf-8").splitlines()
    problems = [f"Question: {r['question']}\nAnswer: {r['answer']}" for r in map(json_lib.loads, lines)]
    per = max(8, seq // 48)  # ~8 problems > 512 tokens
    texts = ["\n\n".join(problems[i * per : (i + 1) * per]) for i in range(batch)]

    def tokenize():
        ids = tokenizer(texts).input_ids
        assert min(map(len, ids)) >= seq, "a text is shorter than --seq: join more problems"
        return np.asarray([row[:seq] for row in ids], np.int64)

    return folder, tokenize


def detector_configurations(args) -> dict:
    """Tokens/s of scoring with Min-K%++ alone and with every likelihood detector, interleaved, best of `repeats`."""
    import jax

    import jaxcontam
    from jaxcontam.detect.likelihood import LikelihoodSettings, detector_scores, min_k_plus_plus
    from jaxcontam.engine.scoring import score_logprobs

    if args.shape == "smollm2" and not args.gpu:
        path, tokenize = real_text_tokens(args.batch, args.seq)
    else:
        shape = dict(GPU_SHAPE if args.gpu else CPU_SHAPE) | ({"vocab": args.vocab} if args.vocab else {})
        path = build_checkpoint(shape, max(args.seq, 2048))
        rows = np.random.default_rng(0).integers(0, shape["vocab"], size=(args.batch, args.seq))
        tokenize = lambda: rows  # noqa: E731
    model = jaxcontam.load_model(str(path), dtype="bfloat16" if args.gpu else "float32")
    decode = model.tokenizer.decode if model.tokenizer is not None else (lambda row: " ".join(map(str, row)))
    texts = [decode(list(map(int, row))) for row in tokenize()]  # zlib's text: what the scored tokens spell
    counts = np.random.default_rng(1).integers(0, 1000, size=model.config.vocab_size)
    reference = (counts + 1.0) / (counts.sum() + len(counts))
    settings = LikelihoodSettings()

    def scored(with_max: bool):
        seqs = [list(map(int, row)) for row in tokenize()]
        scores = score_logprobs(model, seqs, with_stats=True, with_max=with_max, rows_per_batch=args.batch,
                                buckets=(args.seq,), vocab_block=args.vocab_block)
        return seqs, scores

    def min_k_plus_plus_alone():
        _, scores = scored(with_max=False)
        return [min_k_plus_plus(s.logprobs, s.mean_logprobs, s.std_logprobs, settings.k) for s in scores]

    def every_detector():
        seqs, scores = scored(with_max=True)
        return [detector_scores(s, text, settings, seq[s.start:], reference)
                for s, text, seq in zip(scores, texts, seqs)]

    runs = {"min_k_plus_plus_alone": min_k_plus_plus_alone, "every_likelihood_detector": every_detector}
    for run in runs.values():
        run()  # compile + first run
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(args.repeats):  # interleaved: both see the same background load (the machine is shared)
        for name, run in runs.items():
            best[name] = min(best[name], best_time(run, 1, warm=False))
    n_tokens = args.batch * (args.seq - 1)
    return {
        "device": str(jax.devices()[0]),
        "model": "SmolLM2-135M-Instruct f32, GSM8K text" if args.shape == "smollm2" and not args.gpu else "random",
        "batch": args.batch, "seq": args.seq, "repeats": args.repeats,
        **{f"{name}_tokens_per_s": round(n_tokens / t, 1) for name, t in best.items()},
        "every_detector_speed_vs_min_k_plus_plus": round(
            best["min_k_plus_plus_alone"] / best["every_likelihood_detector"], 3
        ),
        "detectors": sorted(every_detector()[0]),
    }


def memory_by_vocab(args):
    """Compiled temporaries of one scoring step for a small and a huge vocabulary (weights excluded)."""
    import jax
    import jax.numpy as jnp

    import jaxcontam
    from jaxcontam.engine.scoring import score_step

    for vocab in (32000, args.vocab):
        shape = dict(CPU_SHAPE, vocab=vocab, layers=2, hidden=256, heads=4, kv_heads=4, intermediate=768)
        path = build_checkpoint(shape, args.seq)
        model = jaxcontam.load_model(str(path), dtype="float32")
        tok = jnp.zeros((args.batch, args.seq), jnp.int32)
        seg = jnp.ones_like(tok)
        pos = jnp.broadcast_to(jnp.arange(args.seq, dtype=jnp.int32), tok.shape)
        compiled = score_step.lower(model.params, model.config, tok, pos, seg, tok,
                                    vocab_block=args.vocab_block, use_kernel=False).compile()
        mem = compiled.memory_analysis()
        full_logits = args.batch * args.seq * vocab * 4
        print(json.dumps({
            "vocab": vocab, "batch": args.batch, "seq": args.seq, "hidden": shape["hidden"],
            "temp_MiB": round(mem.temp_size_in_bytes / 2**20, 1),
            "weights_MiB": round(mem.argument_size_in_bytes / 2**20, 1),
            "full_f32_logits_would_be_MiB": round(full_logits / 2**20, 1),
        }))
        del model, compiled
        jax.clear_caches()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--vocab", type=int, default=None)
    parser.add_argument("--vocab-block", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--memory-only", action="store_true", help="only the vocabulary-vs-memory comparison")
    parser.add_argument("--gpu", action="store_true", help="1B Llama shape in bfloat16 on the GPU")
    parser.add_argument("--shape", choices=("smollm2", "60m"), default="smollm2",
                        help="smollm2: the real model on real text (CPU default); 60m: a random Llama shape")
    parser.add_argument("--eager-too", action="store_true", help="also time torch with eager attention")
    parser.add_argument("--detectors", action="store_true",
                        help="jaxcontam alone: every likelihood detector vs Min-K%%++ alone, interleaved")
    args = parser.parse_args()
    if args.detectors:
        if not args.gpu:
            import torch

            torch.set_num_threads(os.cpu_count())
        print(json.dumps(detector_configurations(args), indent=1))
        return
    if args.memory_only:
        args.vocab = args.vocab or 256000
        memory_by_vocab(args)
        return
    import jax
    import torch

    if args.gpu:
        args.seq = 2048 if args.seq == 512 else args.seq
        args.batch = 8 if args.batch == 16 else args.batch
    dtype = "bfloat16" if args.gpu else "float32"
    device = "cuda" if args.gpu else "cpu"
    if not args.gpu:
        torch.set_num_threads(os.cpu_count())
    if args.shape == "smollm2" and not args.gpu:
        path, tokens = real_text_tokens(args.batch, args.seq)
        config = json.loads((path / "config.json").read_text())
        shape = {"hidden": config["hidden_size"], "layers": config["num_hidden_layers"],
                 "heads": config["num_attention_heads"], "kv_heads": config["num_key_value_heads"],
                 "intermediate": config["intermediate_size"], "vocab": config["vocab_size"]}
    else:
        shape = dict(GPU_SHAPE if args.gpu else CPU_SHAPE)
        if args.vocab:
            shape["vocab"] = args.vocab
        path = build_checkpoint(shape, max(args.seq, 2048))
        tokens = np.random.default_rng(0).integers(0, shape["vocab"], size=(args.batch, args.seq)).astype(np.int64)
    n_tokens = args.batch * (args.seq - 1)
    flops = flops_per_token(shape, args.seq) * args.batch * args.seq

    jax_run, model = jax_score(path, tokens, dtype, args.vocab_block, args.batch, args.seq)
    peers = {"torch": torch_score(path, tokens, dtype, device)}
    if args.eager_too:
        peers["torch_eager"] = torch_score(path, tokens, dtype, device, "eager")
    with PeakRss() as jax_mem:
        jax_run()  # compile + first run
    with PeakRss() as torch_mem:
        peers["torch"][0]()
    # Interleaved, best of `repeats` each: every side sees the same background load (the CPU is shared).
    t_jax, t_peer = float("inf"), dict.fromkeys(peers, float("inf"))
    for _ in range(args.repeats):
        t_jax = min(t_jax, best_time(jax_run, 1, warm=False))
        for name, (run, _) in peers.items():
            t_peer[name] = min(t_peer[name], best_time(run, 1, warm=False))

    ours = jax_run()
    theirs = peers["torch"][0]().float().cpu().numpy()
    max_diff = float(np.max(np.abs(np.stack([s.logprobs for s in ours]) - theirs)))

    report = {
        "device": str(jax.devices()[0]),
        "shape": shape, "batch": args.batch, "seq": args.seq, "dtype": dtype,
        "params_M": round(sum(x.size for x in jax.tree.leaves(model.params)) / 1e6, 1),
        "model": "SmolLM2-135M-Instruct f32, GSM8K text" if args.shape == "smollm2" and not args.gpu else "random",
        "torch_attention": peers["torch"][1],
        "jaxcontam_tokens_per_s": round(n_tokens / t_jax, 1),
        **{f"{name}_tokens_per_s": round(n_tokens / t, 1) for name, t in t_peer.items()},
        **{f"speedup_vs_{name}": round(t / t_jax, 3) for name, t in t_peer.items()},
        "max_abs_logprob_diff": max_diff,
        "jaxcontam_achieved_GFLOPs": round(flops / t_jax / 1e9, 1),
    }
    if args.gpu:
        peak = {"H100": 989e12, "H200": 989e12}
        name = torch.cuda.get_device_name()
        report["gpu"] = name
        report["mfu"] = round(flops / t_jax / next((v for k, v in peak.items() if k in name), 989e12), 3)
    else:
        machine = matmul_flops()
        report["machine_f32_matmul_GFLOPs"] = round(machine / 1e9, 1)
        report["fraction_of_matmul_flops"] = round(flops / t_jax / machine, 3)
        report["jaxcontam_peak_rss_delta_MiB (incl. compile)"] = round(jax_mem.delta_mib, 1)
        report["torch_peak_rss_delta_MiB"] = round(torch_mem.delta_mib, 1)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
