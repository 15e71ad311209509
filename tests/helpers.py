"""Helpers shared by the tests (fixtures live in conftest.py); no test module imports another.

- the error the `jaxcontam_cli` fixture (conftest.py) raises in place of model loading, and SmolLM2's file names;
- in-memory corpus doubles with the reader interface (`Doc`, `Shard`, `ListCorpus`) and n-gram references;
- a toy one-layer decoder implementing the engine's model interface (`ToySpec`, `toy_model`, `naive_logprobs`);
- collectives of optimized HLO text (`collective_shapes`, `largest_collective_elements`);
- float64 references of the vocabulary-blocked statistics (`naive_stats`);
- llama.cpp's GGUF names and q/k permutation, and SmolLM2 as a torch model built from its GGUF file;
- SmolLM2's file names and its tokenizer as jaxcontam builds it (lm-eval's requests for the shared benchmark files
  are in experiments/lm_eval_parity/requests.py, shared with that experiment);
- `free_port` (from experiments/object_stores.py, whose S3 and GCS servers the storage tests start).

Heavy optional imports (torch, transformers) happen inside the functions that need them.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import types
from collections import Counter
from pathlib import Path
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from experiments.lm_eval_parity.requests import SMOLLM2, SMOLLM2_FOLDER, SMOLLM2_GGUF  # noqa: F401  (re-exported)
from experiments.object_stores import free_port  # noqa: F401  (re-exported: the multi-process tests' coordinators)
from jaxcontam.ngram.table import ItemUnits, build_table

REPO_ROOT = Path(__file__).resolve().parents[1]
# the error `jaxcontam_cli` (conftest.py) raises in place of model loading
MODEL_LOAD_REACHED = "MODEL LOAD REACHED"


# --- in-memory corpus doubles with the reader interface (`shards`, `split`, `documents()`) ----------------------


@dataclasses.dataclass
class Doc:
    id: str
    text: str | None = None
    tokens: np.ndarray | None = None


@dataclasses.dataclass
class Shard:
    """A shard that counts its passes and can simulate an interruption after `fail_after` documents."""

    name: str
    docs: list
    reads: int = 0
    fail_after: int | None = None

    def documents(self):
        self.reads += 1
        for i, doc in enumerate(self.docs):
            if self.fail_after is not None and i >= self.fail_after:
                raise KeyboardInterrupt("simulated interruption")
            yield doc


@dataclasses.dataclass
class ListCorpus:
    shards: tuple

    def split(self, index, count):
        return ListCorpus(self.shards[index::count])


# --- n-gram references ------------------------------------------------------------------------------------------


def items_from_token_lists(token_lists):
    offsets = np.concatenate([[0], np.cumsum([len(t) for t in token_lists])]).astype(np.int64)
    tokens = np.concatenate([np.asarray(t, np.int32) for t in token_lists]) if token_lists else np.zeros(0, np.int32)
    return ItemUnits(tuple(map(str, range(len(token_lists)))), tokens, offsets, np.arange(len(token_lists) + 1))


def brute_counts(table, documents):
    counter = Counter(tuple(d[i : i + table.n]) for d in documents for i in range(len(d) - table.n + 1))
    return np.array([counter[tuple(r)] for r in table.ngrams.tolist()], np.int64)


FIXED_TABLE = build_table(
    items_from_token_lists([[0, 1, 2, 0, 1, 2, 0], [2, 2, 2, 2], [1, 0], [3, 1, 3, 1, 3, 3, 0, 2]]), 3
)


# --- a one-layer attention decoder implementing the engine's model interface ------------------------------------


# Engine tests use it to check packing, ordering, spans, compile counts and the decode loop independently of the
# real decoders (which are checked against torch transformers in their own tests and in test_engine_torch_parity).


@dataclasses.dataclass(frozen=True)
class ToySpec:
    vocab_size: int = 61
    hidden_size: int = 16
    max_position: int = 512
    final_logit_softcap: float | None = None
    eos_token_id: int | None = None
    packing: ClassVar[bool] = True  # masks by positions and segment ids

    def hidden_states(self, params, tokens, positions, segment_ids):
        return toy_hidden_states(params, self, tokens, positions, segment_ids)

    def output_projection(self, params):
        return params["out"], None

    def logits_from_hidden(self, params, hidden):
        return _toy_logits_from_hidden(params, self, hidden)

    def split_layers(self, params):
        return params  # one layer: nothing stacked

    def init_cache(self, batch, max_len, dtype):
        return {"x": jnp.zeros((batch, max_len, self.hidden_size), dtype), "pos": jnp.full((batch, max_len), -1)}

    def decode(self, params, tokens, positions, cache, cache_index):
        return _toy_decode(params, self, tokens, positions, cache, cache_index)


def toy_init_params(spec: ToySpec, seed: int = 0):
    rng = np.random.default_rng(seed)
    d, v = spec.hidden_size, spec.vocab_size
    shapes = {"embed": (v, d), "pos": (spec.max_position, d), "wq": (d, d), "wk": (d, d), "wv": (d, d), "out": (d, v)}
    return {k: jnp.asarray(rng.normal(scale=0.8, size=s), jnp.float32) for k, s in shapes.items()}


def _toy_attend(params, x, q_pos, keys_x, k_pos, allowed):
    q = x @ params["wq"]
    k = keys_x @ params["wk"]
    v = keys_x @ params["wv"]
    scores = jnp.einsum("btd,bsd->bts", q, k) / np.sqrt(x.shape[-1])
    scores = jnp.where(allowed, scores, -1e30)
    attn = jnp.where(allowed, jax.nn.softmax(scores, axis=-1), 0.0)
    return jnp.tanh(x + jnp.einsum("bts,bsd->btd", attn, v))


def _toy_embed(params, tokens, positions):
    return params["embed"][tokens] + params["pos"][jnp.maximum(positions, 0)]


def toy_hidden_states(params, spec, tokens, positions, segment_ids):
    x = _toy_embed(params, tokens, positions)
    same = segment_ids[:, :, None] == segment_ids[:, None, :]
    causal = positions[:, None, :] <= positions[:, :, None]
    allowed = same & causal & (segment_ids[:, :, None] > 0)
    return _toy_attend(params, x, positions, x, positions, allowed)


def _toy_logits_from_hidden(params, spec, hidden):
    z = (hidden @ params["out"]).astype(jnp.float32)
    if spec.final_logit_softcap is not None:
        z = spec.final_logit_softcap * jnp.tanh(z / spec.final_logit_softcap)
    return z


def _toy_write(cache, new, cache_index):
    """new [B, t, ...] into cache [B, S, ...] from slot cache_index (a scalar, or one per row)."""
    index = jnp.broadcast_to(jnp.asarray(cache_index, jnp.int32), cache.shape[:1])
    return jax.vmap(lambda c, n, i: jax.lax.dynamic_update_slice_in_dim(c, n, i, axis=0))(cache, new, index)


def _toy_decode(params, spec, tokens, positions, cache, cache_index):
    x = _toy_embed(params, tokens, positions)
    xs = _toy_write(cache["x"], x, cache_index)
    ps = _toy_write(cache["pos"], positions, cache_index)
    allowed = (ps[:, None, :] >= 0) & (ps[:, None, :] <= positions[:, :, None]) & (positions[:, :, None] >= 0)
    return _toy_attend(params, x, positions, xs, ps, allowed), {"x": xs, "pos": ps}


def toy_model(spec: ToySpec = ToySpec(), seed: int = 0, tokenizer=None, mesh=None):
    """A stand-in for `jaxcontam.models.Model` with the attributes the engine reads (weights replicated)."""
    mesh = mesh or jax.make_mesh((jax.device_count(), 1), ("data", "model"), (jax.sharding.AxisType.Auto,) * 2)
    replicated = jax.sharding.NamedSharding(mesh, jax.P())
    params = jax.tree.map(
        lambda x: jax.make_array_from_callback(x.shape, replicated, lambda i: np.asarray(x)[i]),
        toy_init_params(spec, seed),
    )
    return types.SimpleNamespace(config=spec, params=params, tokenizer=tokenizer, mesh=mesh)


def naive_log_softmax(model, seq):
    """Reference in float64 numpy: [n, V] next-token log-probs of the sequence alone."""
    p = {k: np.asarray(v, np.float64) for k, v in model.params.items()}
    n = len(seq)
    x = p["embed"][np.asarray(seq)] + p["pos"][:n]
    scores = (x @ p["wq"]) @ (x @ p["wk"]).T / np.sqrt(x.shape[-1])
    scores = np.where(np.tril(np.ones((n, n), bool)), scores, -np.inf)
    attn = np.exp(scores - scores.max(-1, keepdims=True))
    h = np.tanh(x + (attn / attn.sum(-1, keepdims=True)) @ (x @ p["wv"]))
    z = h @ p["out"]
    if model.config.final_logit_softcap is not None:
        z = model.config.final_logit_softcap * np.tanh(z / model.config.final_logit_softcap)
    logp = z - z.max(-1, keepdims=True)
    return logp - np.log(np.exp(logp).sum(-1, keepdims=True))


def naive_logprobs(model, seq):
    """Token t scored from tokens < t, for t = 1..n-1."""
    return naive_log_softmax(model, seq)[np.arange(len(seq) - 1), np.asarray(seq[1:])]


# --- collectives of optimized HLO text: which op, and the shapes of the arrays it produces ----------------------


_OPS = ("all-gather", "all-reduce", "collective-permute", "reduce-scatter", "all-to-all")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%\S+\s*=\s*(.*?)\s+([a-z-]+)\(")
_ARRAY = re.compile(r"\b[a-z]+\d*\[([\d,]*)\]")


def collective_shapes(hlo_text: str) -> list[tuple[str, list[tuple[int, ...]]]]:
    """(op, result array shapes) of every all-gather / all-reduce / ... in the text, sync or async (-start)."""
    found = []
    for line in hlo_text.splitlines():
        match = _INSTRUCTION.match(line)
        if match is None:
            continue
        op = match.group(2).removesuffix("-start")
        if op in _OPS:
            shapes = [tuple(int(d) for d in dims.split(",") if d) for dims in _ARRAY.findall(match.group(1))]
            found.append((op, shapes))
    return found


def largest_collective_elements(hlo_text: str) -> int:
    """Elements of the largest array any collective produces (0 without collectives)."""
    return max((math.prod(s) for _, shapes in collective_shapes(hlo_text) for s in shapes), default=0)


# --- vocabulary-blocked statistics ------------------------------------------------------------------------------


def naive_stats(hidden, weight, targets, bias=None, layout="vd", softcap=None):
    """float64 full logits, log-softmax, and the Min-K%++ moments straight from their definitions."""
    h = np.asarray(hidden, np.float64).reshape(-1, hidden.shape[-1])
    w = np.asarray(weight, np.float64)
    z = h @ (w.T if layout == "vd" else w)
    if bias is not None:
        z = z + np.asarray(bias, np.float64)
    if softcap is not None:
        z = softcap * np.tanh(z / softcap)
    logp = z - np.log(np.exp(z - z.max(-1, keepdims=True)).sum(-1, keepdims=True)) - z.max(-1, keepdims=True)
    p = np.exp(logp)
    mu = (p * logp).sum(-1)
    sigma = np.sqrt((p * (logp - mu[..., None]) ** 2).sum(-1))  # E[(x - mu)^2]: never negative by cancellation
    lp = np.take_along_axis(logp, np.asarray(targets).reshape(-1, 1), axis=1)[:, 0]
    shape = targets.shape
    return lp.reshape(shape), mu.reshape(shape), sigma.reshape(shape)


# --- a tiny llama config for training tests ---------------------------------------------------------------------


TINY_LLAMA_CONFIG = dict(
    model_type="llama",
    vocab_size=64,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
    rms_norm_eps=1e-5,
    hidden_act="silu",
    tie_word_embeddings=False,
    rope_theta=10000.0,
    bos_token_id=1,
    eos_token_id=2,
)


# --- GGUF: llama.cpp's names and q/k permutation; SmolLM2 as torch builds it from the file ----------------------


# HF module name inside model.layers.N -> llama.cpp tensor name (gguf-py's tensor_mapping / llama.cpp's names)
LAYER_NAMES = {
    "input_layernorm": "attn_norm",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "self_attn.q_norm": "attn_q_norm",
    "self_attn.k_norm": "attn_k_norm",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
    "post_attention_layernorm": "ffn_norm",
    "mlp.gate": "ffn_gate_inp",
}
GEMMA2_LAYER_NAMES = {
    **LAYER_NAMES,
    "post_attention_layernorm": "post_attention_norm",
    "pre_feedforward_layernorm": "ffn_norm",
    "post_feedforward_layernorm": "post_ffw_norm",
}
OLMO2_LAYER_NAMES = {
    **LAYER_NAMES,
    "post_attention_layernorm": "post_attention_norm",
    "post_feedforward_layernorm": "post_ffw_norm",
}
PHI3_LAYER_NAMES = {**LAYER_NAMES, "self_attn.qkv_proj": "attn_qkv", "mlp.gate_up_proj": "ffn_up"}
ARCH_LAYER_NAMES = {
    "gemma2": GEMMA2_LAYER_NAMES,
    "gemma3": GEMMA2_LAYER_NAMES,
    "olmo2": OLMO2_LAYER_NAMES,
    "phi3": PHI3_LAYER_NAMES,
}
TOP_NAMES = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
}


def llama_cpp_permute(weights: np.ndarray, n_head: int, n_head_kv: int) -> np.ndarray:
    """convert_hf_to_gguf.py's LlamaModel.permute: each head's rows viewed as [2, D/2] and transposed."""
    if n_head != n_head_kv:
        n_head = n_head_kv
    return (
        weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
        .swapaxes(1, 2)
        .reshape(weights.shape)
    )


def gguf_name(hf_name: str, arch: str) -> str:
    if hf_name in TOP_NAMES:
        return TOP_NAMES[hf_name]
    layer, module, kind = re.fullmatch(r"model\.layers\.(\d+)\.(.+)\.(weight|bias)", hf_name).groups()
    return f"blk.{layer}.{ARCH_LAYER_NAMES.get(arch, LAYER_NAMES)[module]}.{kind}"


# the architecture as the data folder's SOURCE.txt documents it
SMOLLM2_CONFIG = {
    "vocab_size": 49152,
    "hidden_size": 576,
    "intermediate_size": 1536,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "head_dim": 64,
    "rope_theta": 100000.0,
    "rms_norm_eps": 1e-5,
    "max_position_embeddings": 8192,
    "tie_word_embeddings": True,
    "bos_token_id": 1,
    "eos_token_id": 2,
}


def unpermute_llama_cpp(stored: np.ndarray, n_head: int, n_head_kv: int) -> np.ndarray:
    """Invert `llama_cpp_permute` by where it sends each row index: stored[i] = original[order[i]]."""
    order = llama_cpp_permute(np.arange(stored.shape[0]), n_head, n_head_kv)
    original = np.empty_like(stored)
    original[order] = stored
    return original


def torch_smollm2(path):
    """SmolLM2 as a torch LlamaForCausalLM built from the file by hand, independently of jaxcontam's loader.

    Tensors come through transformers' own GGUF reader and gguf's reference `dequantize`, names through this
    module's llama.cpp name table, q/k rows through the inverse of the converter's permutation. (transformers'
    `from_pretrained(gguf_file=...)` builds the same model, but parses the metadata twice with gguf.GGUFReader:
    about a minute of CI time on two cores.)
    """
    import gguf
    import torch
    import transformers as tf
    from transformers.integrations.gguf.reader import GgufHeader, load_gguf_state_dict

    stored = load_gguf_state_dict(GgufHeader.from_file(str(path)))
    config = tf.LlamaConfig(**SMOLLM2_CONFIG)
    with torch.device("meta"):
        model = tf.LlamaForCausalLM(config)
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    state = {}
    for name, param in model.state_dict().items():
        if name == "lm_head.weight":  # tied to the embedding
            continue
        tensor = stored[gguf_name(name, "llama")]
        kind = gguf.GGMLQuantizationType(tensor.ggml_type)
        raw = np.asarray(tensor.data).reshape(gguf.quants.quant_shape_to_byte_shape(tuple(param.shape), kind))
        weight = gguf.quants.dequantize(raw, kind).astype(np.float32)
        if ".q_proj." in name:
            weight = unpermute_llama_cpp(weight, heads, heads)
        elif ".k_proj." in name:
            weight = unpermute_llama_cpp(weight, heads, kv_heads)
        state[name] = torch.from_numpy(weight)
    assert model.load_state_dict(state, strict=False, assign=True).missing_keys == ["lm_head.weight"]
    model.tie_weights()
    model.model.rotary_emb = type(model.model.rotary_emb)(config=config)  # its buffers were left on "meta"
    return model.eval()


# --- SmolLM2's tokenizer -------------------------------------------------------------------------------------


def smollm2_tokenizer(data: Path):
    """SmolLM2's tokenizer as jaxcontam builds it from the GGUF metadata (torch-free)."""
    from jaxcontam.models.gguf import load_gguf_tokenizer, open_reader

    path = data / SMOLLM2[0] / SMOLLM2[1]
    return load_gguf_tokenizer(open_reader(path), path)


def run_processes(arguments_of, count: int = 2, timeout: float = 120) -> list[str]:
    """Run `python *arguments_of(i)` for each process i < count at once, each on one CPU device with tests/
    importable (two local processes stand in for two hosts); every one must exit 0. Their logs, in order."""
    import os
    import subprocess
    import sys

    tests_dir = str(Path(__file__).parent)
    env = dict(
        os.environ,
        JAX_PLATFORMS="cpu",
        XLA_FLAGS="--xla_force_host_platform_device_count=1",
        PYTHONPATH=os.pathsep.join([tests_dir, os.environ.get("PYTHONPATH", ""), str(REPO_ROOT)]),  # + experiments/
    )
    processes = [
        subprocess.Popen(
            [sys.executable, *map(str, arguments_of(i))],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            text=True,
        )
        for i in range(count)
    ]
    logs = [p.communicate(timeout=timeout)[0] for p in processes]
    assert all(p.returncode == 0 for p in processes), "\n----\n".join(log[-2000:] for log in logs)
    return logs


def drawn_slices(draw, shape) -> tuple[slice, ...]:
    """A hypothesis-drawn non-empty slice per axis of `shape` (mostly step 1, sometimes 2): the part of a weight
    one device holds, for the partial-read tests."""
    from hypothesis import strategies as st

    out = []
    for size in shape:
        start = draw(st.integers(0, size - 1))
        stop = draw(st.integers(start + 1, size))
        out.append(slice(start, stop, draw(st.sampled_from([1, 1, 1, 2]))))
    return tuple(out)


def without_timings(summary: dict) -> dict:
    """summary.json without its wall time per stage (the one part two runs of the same audit never share)."""
    return {key: value for key, value in summary.items() if key != "timings"}


EXCHANGEABILITY = "\n[exchangeability]\nchunks = 2\npermutations = 2\n"


def small_toml(folder, *, limit=8, chunk_size=4, out=None, extra="", exchangeability=True) -> str:
    """The bundled example's audit.toml cut to `limit` items per benchmark and short generations, with Oren et
    al.'s exchangeability test turned on (unless `exchangeability` is False) and `extra` appended."""
    from jaxcontam.audit.config import EXAMPLE_CONFIG

    example = EXAMPLE_CONFIG.parent
    text = EXAMPLE_CONFIG.read_text()
    for name in (
        "model",
        "gsm8k_test_sample.jsonl",
        "gsm8k_rephrasings.jsonl",
        "copa_test_sample.jsonl",
        "copa_rephrasings.jsonl",
        "ground_truth.jsonl",
        "corpus.jsonl.gz",
    ):
        text = text.replace(f'"{name}"', json.dumps(str(example / name)))
    text = text.replace('split = "test"', f'split = "test"\nlimit = {limit}')
    text = text.replace("max_new_tokens = 200", "max_new_tokens = 48")
    text = text.replace(
        'out = "jaxcontam-audit"', f"out = {json.dumps(str(out or folder / 'out'))}\nchunk_size = {chunk_size}"
    )
    path = folder / "audit.toml"
    path.write_text(text + (EXCHANGEABILITY if exchangeability else "") + extra)
    return str(path)


def run_cli(args, capsys) -> tuple[int, str]:
    """`jaxcontam ARGS` run in this process: its exit code and what it printed (stdout and stderr)."""
    from jaxcontam.cli import main

    code = 0
    try:
        main([str(a) for a in args])
    except SystemExit as exit_info:
        code = exit_info.code
    captured = capsys.readouterr()
    return code, captured.out + captured.err


# --- the bundled example as a torch model, and a second model beside it (the reference-model detectors' tests) ----


TINY_MODEL = Path(__file__).resolve().parents[1] / "jaxcontam" / "examples" / "tiny_contaminated" / "model"


def torch_token_logprobs(model, ids) -> np.ndarray:
    """log p(ids[t] | ids[<t]) for t = 1..n-1 under a torch causal LM, in float64: a reference beside the engine."""
    import torch

    with torch.no_grad():
        logits = model(torch.tensor([list(ids)])).logits[0].double()
    logp = torch.log_softmax(logits, -1)
    return np.asarray([float(logp[t - 1, ids[t]]) for t in range(1, len(ids))])


def perturbed_copy(dest: Path, scale: float = 0.05, seed: int = 0) -> Path:
    """The bundled model's folder copied to `dest` with every weight moved by `scale` x its own std of Gaussian
    noise: a second model on the same tokenizer that agrees with the first on nothing exactly (a reference model)."""
    import shutil

    from safetensors.numpy import load_file, save_file

    shutil.copytree(TINY_MODEL, dest)
    rng = np.random.default_rng(seed)
    weights = load_file(TINY_MODEL / "model.safetensors")
    moved = {
        name: (w + scale * w.std() * rng.standard_normal(w.shape)).astype(w.dtype) if w.ndim > 1 else w
        for name, w in weights.items()
    }
    save_file(moved, dest / "model.safetensors", metadata={"format": "pt"})
    return dest


def bundled_target(benchmark: str = "gsm8k", limit: int = 8):
    """(the bundled example's benchmark cut to `limit` items, its AuditTarget with each item's first rephrasing and
    the known labels)."""
    from jaxcontam.audit.config import EXAMPLE_CONFIG, load_config
    from jaxcontam.audit.inputs import load_audit_benchmark
    from jaxcontam.detect.stage import AuditTarget

    entry = next(b for b in load_config(EXAMPLE_CONFIG).benchmarks if b.name == benchmark)
    loaded = load_audit_benchmark(dataclasses.replace(entry, limit=limit), needs_rephrasings=True)
    items = list(loaded.benchmark)
    truth = loaded.truth or {}
    rephrasings = [item.paraphrases[0] if item.paraphrases else None for item in items]
    return loaded.benchmark, AuditTarget(loaded.benchmark, rephrasings, [truth.get(item.id) for item in items])


def gap_k_reference(lp, top, sigma, k, window):
    """From the paper: gap_t = (log p(x_t) - log p(top-1 token)) / sigma_t, averaged over every window of `window`
    consecutive tokens (fewer tokens than the window: no averaging), then the mean of the lowest K% of them."""
    gaps = [(lp[t] - top[t]) / math.sqrt(max(sigma[t] ** 2, 1e-8)) for t in range(len(lp))]
    if len(gaps) >= window:
        gaps = [sum(gaps[i : i + window]) / window for i in range(len(gaps) - window + 1)]
    count = max(1, int(len(gaps) * k))
    return sum(sorted(gaps)[:count]) / count


def dc_pdd_reference(lp, ids, frequencies, cap):
    """From the paper: alpha_t = p(x_t) * log(1 / f(x_t)) over the first occurrence of each token, each at most
    `a`, averaged."""
    seen, alphas = set(), []
    for logprob, token in zip(lp, ids):
        if token not in seen:
            seen.add(token)
            alphas.append(min(math.exp(logprob) * math.log(1.0 / frequencies[token]), cap))
    return sum(alphas) / len(alphas)


def audit_config_of(*args):
    """The `AuditConfig` that `jaxcontam audit ARGS` runs (its options parsed by click, nothing run)."""
    from jaxcontam.commands.audit import audit
    from jaxcontam.commands.audit_options import audit_config

    return audit_config(audit.make_context("audit", [str(arg) for arg in args]).params)
