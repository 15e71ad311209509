"""Model files as an attacker or a damaged download makes them: safetensors and GGUF bytes written field by field
(so any count, offset, type or alignment can be set to anything), the bundled example model's real header to start
from, a tiny llama-architecture GGUF with every key and tensor llama.cpp writes, and the cases of issue 61.

Shared by experiments/hostile_models/cases.py (which runs every case against a checkout and prints what it does),
tests/test_models_hostile.py and tests/test_fuzz_model_headers.py; nothing here imports jaxcontam, so the same cases
run against any version of it.
"""

from __future__ import annotations

import json
import shutil
import struct
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_MODEL = REPO_ROOT / "jaxcontam" / "examples" / "tiny_contaminated" / "model"
SEQUENCES = [[5, 9, 3, 60, 2, 17, 33], [1, 2, 3]]

# ---- safetensors


def read_safetensors(path: Path) -> tuple[dict, bytes]:
    """(header as parsed JSON, data section bytes) of a .safetensors file."""
    raw = path.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8 : 8 + length]), raw[8 + length :]


def safetensors_bytes(header, data: bytes, length: int | None = None) -> bytes:
    """A .safetensors file: `header` as JSON (a str is written as is), `length` the header length field (its true
    length unless given)."""
    text = (header if isinstance(header, str) else json.dumps(header)).encode()
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def example_copy(folder: Path, header=None, data: bytes | None = None, length: int | None = None, **config) -> Path:
    """The bundled example model copied to `folder`, its safetensors header (and data, header length field,
    config.json fields: None deletes one) replaced where given."""
    shutil.copytree(EXAMPLE_MODEL, folder)
    original_header, original_data = read_safetensors(EXAMPLE_MODEL / "model.safetensors")
    if header is not None or data is not None or length is not None:
        (folder / "model.safetensors").write_bytes(
            safetensors_bytes(
                original_header if header is None else header,
                original_data if data is None else data,
                length,
            )
        )
    if config:
        values = json.loads((EXAMPLE_MODEL / "config.json").read_text())
        for key, value in config.items():
            if value is None:
                values.pop(key, None)
            else:
                values[key] = value
        (folder / "config.json").write_text(json.dumps(values))
    return folder


def example_header() -> dict:
    return read_safetensors(EXAMPLE_MODEL / "model.safetensors")[0]


# ---- GGUF

UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
_SCALAR_FORMATS = {
    UINT8: "B",
    INT8: "b",
    UINT16: "H",
    INT16: "h",
    UINT32: "I",
    INT32: "i",
    FLOAT32: "f",
    BOOL: "?",
    UINT64: "Q",
    INT64: "q",
    FLOAT64: "d",
}
F32, F16 = 0, 1


@dataclass
class GGUFTensorEntry:
    name: str
    dims: tuple[int, ...]  # ggml order: the row length first
    type_id: int
    offset: int
    data: bytes = field(repr=False)


@dataclass
class GGUFParts:
    """Everything a GGUF file holds, each field free to be set to anything before `to_bytes`."""

    metadata: list[tuple[str, int, object]]  # (key, value type, value); an array value is (element type, list)
    tensors: list[GGUFTensorEntry]
    alignment: int = 32
    version: int = 3
    tensor_count: int | None = None  # the header's counts: the true ones unless set
    kv_count: int | None = None

    def to_bytes(self) -> bytes:
        out = bytearray(b"GGUF" + struct.pack("<I", self.version))
        out += struct.pack(
            "<QQ",
            len(self.tensors) if self.tensor_count is None else self.tensor_count,
            len(self.metadata) if self.kv_count is None else self.kv_count,
        )
        for key, value_type, value in self.metadata:
            out += _string(key) + struct.pack("<I", value_type) + _value(value_type, value)
        for tensor in self.tensors:
            out += _string(tensor.name) + struct.pack("<I", len(tensor.dims))
            out += struct.pack(f"<{len(tensor.dims)}Q", *tensor.dims) + struct.pack(
                "<IQ", tensor.type_id, tensor.offset
            )
        step = self.alignment if self.alignment > 0 and not self.alignment & (self.alignment - 1) else 32
        out += bytes(-len(out) % step)
        start = len(out)
        for tensor in sorted(self.tensors, key=lambda t: t.offset):
            at = start + tensor.offset
            if at < (1 << 40):  # a hostile offset is written as a field only
                out += bytes(max(0, at - len(out)))
                out[at : at + len(tensor.data)] = tensor.data
        return bytes(out)

    def with_metadata(self, key: str, value_type: int, value) -> GGUFParts:
        """A copy with `key` set (added, or replaced in place)."""
        entries = [(k, t, v) for k, t, v in self.metadata if k != key]
        index = next((i for i, (k, _, _) in enumerate(self.metadata) if k == key), len(entries))
        entries.insert(index, (key, value_type, value))
        return replace(self, metadata=entries)

    def tensor(self, name: str) -> GGUFTensorEntry:
        return next(t for t in self.tensors if t.name == name)


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def _value(value_type: int, value) -> bytes:
    if value is None:  # a type the format does not define: no value bytes
        return b""
    if value_type in _SCALAR_FORMATS:
        return struct.pack("<" + _SCALAR_FORMATS[value_type], value)
    if value_type == STRING:
        return _string(value)
    element_type, items = value
    return struct.pack("<IQ", element_type, len(items)) + b"".join(_value(element_type, v) for v in items)


TINY_LLAMA = {"layers": 2, "hidden": 32, "heads": 4, "kv_heads": 4, "ffn": 48, "vocab": 64, "context": 64}


def tiny_llama_gguf(seed: int = 0) -> GGUFParts:
    """A random tiny llama as llama.cpp writes one (its keys and tensor names; F32, offsets the running aligned
    sum), which jaxcontam loads as a llama model."""
    sizes, rng = TINY_LLAMA, np.random.default_rng(seed)
    d, f, v, dh = sizes["hidden"], sizes["ffn"], sizes["vocab"], sizes["hidden"] // sizes["heads"]
    metadata = [
        ("general.architecture", STRING, "llama"),
        ("general.alignment", UINT32, 32),
        ("llama.block_count", UINT32, sizes["layers"]),
        ("llama.context_length", UINT32, sizes["context"]),
        ("llama.embedding_length", UINT32, d),
        ("llama.feed_forward_length", UINT32, f),
        ("llama.attention.head_count", UINT32, sizes["heads"]),
        ("llama.attention.head_count_kv", UINT32, sizes["kv_heads"]),
        ("llama.attention.layer_norm_rms_epsilon", FLOAT32, 1e-5),
        ("llama.rope.freq_base", FLOAT32, 10000.0),
        ("tokenizer.ggml.bos_token_id", UINT32, 1),
        ("tokenizer.ggml.eos_token_id", UINT32, 2),
    ]
    shapes = {"token_embd.weight": (v, d), "output_norm.weight": (d,), "output.weight": (v, d)}
    for i in range(sizes["layers"]):
        shapes.update(
            {
                f"blk.{i}.attn_norm.weight": (d,),
                f"blk.{i}.attn_q.weight": (d, d),
                f"blk.{i}.attn_k.weight": (sizes["kv_heads"] * dh, d),
                f"blk.{i}.attn_v.weight": (sizes["kv_heads"] * dh, d),
                f"blk.{i}.attn_output.weight": (d, d),
                f"blk.{i}.ffn_norm.weight": (d,),
                f"blk.{i}.ffn_gate.weight": (f, d),
                f"blk.{i}.ffn_up.weight": (f, d),
                f"blk.{i}.ffn_down.weight": (d, f),
            }
        )
    tensors, offset = [], 0
    for name, shape in shapes.items():
        values = rng.normal(1.0 if name.endswith("norm.weight") else 0.0, 0.2, shape).astype("<f4")
        tensors.append(GGUFTensorEntry(name, tuple(reversed(shape)), F32, offset, values.tobytes()))
        offset += -(-values.nbytes // 32) * 32
    return GGUFParts(metadata, tensors)


def with_offsets(parts: GGUFParts) -> GGUFParts:
    """`parts` with every tensor at the running aligned sum again (after a change of type or size)."""
    offset, tensors = 0, []
    for tensor in parts.tensors:
        tensors.append(replace(tensor, offset=offset))
        offset += -(-len(tensor.data) // parts.alignment) * parts.alignment
    return replace(parts, tensors=tensors)


def write_gguf(folder: Path, parts: GGUFParts) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model.gguf"
    path.write_bytes(parts.to_bytes())
    return path


# ---- the model cases of issue 61: name -> builder(folder) -> the path to load


def _moved(header: dict, name: str, **entry) -> dict:
    return {**header, name: {**header[name], **entry}}


Q, K = "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight"


def _safetensors_cases() -> dict:
    h = example_header()
    q, k = h[Q]["data_offsets"], h[K]["data_offsets"]
    return {
        "safetensors: overlapping tensors (q_proj at k_proj's offsets)": lambda d: example_copy(
            d, _moved(h, Q, data_offsets=k)
        ),
        "safetensors: negative offsets (q_proj starts inside the header)": lambda d: example_copy(
            d, _moved(h, Q, data_offsets=[-64, q[1] - q[0] - 64])
        ),
        "safetensors: dtype/bytes mismatch (F16 declared over F32 bytes)": lambda d: example_copy(
            d, _moved(h, Q, dtype="F16")
        ),
        "safetensors: shape/bytes mismatch (reshape error)": lambda d: example_copy(d, _moved(h, Q, shape=[128, 64])),
        "safetensors: KeyError 'dtype' (entry without dtype)": lambda d: example_copy(
            d, {**h, Q: {"shape": h[Q]["shape"], "data_offsets": q}}
        ),
        "safetensors: offset 2^64-1": lambda d: example_copy(d, _moved(h, Q, data_offsets=[q[0], 2**64 - 1])),
        "safetensors: shape 2^62 x 2^62": lambda d: example_copy(d, _moved(h, Q, shape=[2**62, 2**62])),
        "safetensors: header length 2^62": lambda d: example_copy(d, length=2**62),
        "safetensors: header length 2^63": lambda d: example_copy(d, length=2**63),
        "config.json: rms_norm_eps = 0": lambda d: example_copy(d, rms_norm_eps=0.0),
        "config.json: rms_norm_eps = -1e-5": lambda d: example_copy(d, rms_norm_eps=-1e-5),
        "config.json: rms_norm_eps = NaN": lambda d: example_copy(d, rms_norm_eps=float("nan")),
        "config.json: rope_theta = 0": lambda d: example_copy(d, rope_theta=0.0),
        "config.json: num_attention_heads = 0": lambda d: example_copy(d, num_attention_heads=0),
        "config.json: hidden_size = 0": lambda d: example_copy(d, hidden_size=0),
        "config.json: num_hidden_layers = 10^9": lambda d: example_copy(d, num_hidden_layers=10**9),
        "config.json: num_hidden_layers = 2 (the weights hold 4)": lambda d: example_copy(d, num_hidden_layers=2),
        'config.json: hidden_size = "128" (a string)': lambda d: example_copy(d, hidden_size="128"),
        "config.json: num_key_value_heads = [4] (a list)": lambda d: example_copy(d, num_key_value_heads=[4]),
        'config.json: tie_word_embeddings = "false" (a string)': lambda d: example_copy(d, tie_word_embeddings="false"),
        "config.json: nested 100,000 deep": lambda d: _nested_config(example_copy(d)),
    }


def _nested_config(folder: Path) -> Path:
    (folder / "config.json").write_text('{"model_type": "llama", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    return folder


def _gguf_cases() -> dict:
    base = tiny_llama_gguf()
    q, k = base.tensor("blk.0.attn_q.weight"), base.tensor("blk.0.attn_k.weight")

    def retyped(parts: GGUFParts, name: str, **changes) -> GGUFParts:
        return replace(parts, tensors=[replace(t, **changes) if t.name == name else t for t in parts.tensors])

    def save(parts):
        return lambda d: write_gguf(d, parts)

    half = with_offsets(retyped(base, q.name, type_id=F16, data=np.frombuffer(q.data, "<f4").astype("<f2").tobytes()))
    return {
        "GGUF: overlapping tensors (attn_q at attn_k's offset)": save(retyped(base, q.name, offset=k.offset, data=b"")),
        "GGUF: unaligned offset (attn_q 4 bytes later)": save(retyped(base, q.name, offset=q.offset + 4)),
        "GGUF: F32 declared over F16 data (reads into the next tensor)": save(retyped(half, q.name, type_id=F32)),
        "GGUF: general.alignment = -32 (INT32)": save(base.with_metadata("general.alignment", INT32, -32)),
        "GGUF: general.alignment = 0": save(base.with_metadata("general.alignment", UINT32, 0)),
        "GGUF: offset 2^64-1": save(retyped(base, q.name, offset=2**64 - 1)),
        "GGUF: shape 2^62 x 2^62": save(retyped(base, q.name, dims=(2**62, 2**62))),
        "GGUF: tensor count 2^62": save(replace(base, tensor_count=2**62)),
        "GGUF: key/value count 2^62": save(replace(base, kv_count=2**62)),
        "GGUF: block_count = 10^6": save(base.with_metadata("llama.block_count", UINT32, 10**6)),
        "GGUF: head_count = 0": save(base.with_metadata("llama.attention.head_count", UINT32, 0)),
        "GGUF: embedding_length = 0": save(base.with_metadata("llama.embedding_length", UINT32, 0)),
        "GGUF: layer_norm_rms_epsilon = 0": save(
            base.with_metadata("llama.attention.layer_norm_rms_epsilon", FLOAT32, 0.0)
        ),
        "GGUF: layer_norm_rms_epsilon = NaN": save(
            base.with_metadata("llama.attention.layer_norm_rms_epsilon", FLOAT32, float("nan"))
        ),
        "GGUF: rope.freq_base = 0": save(base.with_metadata("llama.rope.freq_base", FLOAT32, 0.0)),
        "GGUF: block_count as a string": save(base.with_metadata("llama.block_count", STRING, "2")),
        "GGUF: rope.freq_base as UINT32 (a FLOAT32's width)": save(
            base.with_metadata("llama.rope.freq_base", UINT32, 10000)
        ),
        "GGUF: add_bos_token as UINT8 (a BOOL's width)": save(
            base.with_metadata("tokenizer.ggml.add_bos_token", UINT8, 1)
        ),
    }


def model_cases() -> dict:
    """Issue 61's model cases (and a few of their kind): name -> builder(empty folder) -> path to load."""
    return {**_safetensors_cases(), **_gguf_cases()}


def reference_path(name: str, folder: Path) -> Path:
    """The unmutated file a case starts from, written to `folder`."""
    return write_gguf(folder, tiny_llama_gguf()) if name.startswith("GGUF") else example_copy(folder)
