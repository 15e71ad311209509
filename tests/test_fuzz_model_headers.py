"""Fuzzing the model headers: real headers mutated by hypothesis, every outcome a clear ModelError or exactly what
the mutated file says, never another exception, a hang or a silent difference.

- safetensors: the bundled example model's header, its entries' fields replaced (dtype, shape, data_offsets, an
  entry dropped or given an extra key), its length field or its bytes overwritten. Whatever jaxcontam accepts,
  huggingface's own `safetensors` package (the format's reference reader) must accept too, with the same dtype,
  shape and bytes for every tensor.
- GGUF: the real SmolLM2 file's header (its bytes up to the data section, read once; the data section left a
  sparse hole of the file's size, so no weight is read), one structural field overwritten: the counts, a key's
  length or value type, an array's element type or count, a tensor's name length, dimension count, dimensions,
  type or offset, or general.alignment. Anything accepted must be the unmutated file's metadata, tensor table
  and config, with every tensor the config needs present in its shape.
- config.json: one field of the example's config set to a hostile value (a wrong type, out of range, non-finite,
  huge, or any integer), read with the weight files' headers as loading does before any weight is used. Accepted,
  the spec is the unmutated one, with the value itself where the field changes no tensor's shape.

Bounded: `max_examples` and a deadline per test; the whole file runs in about 40 s on one core (reported by the
lead's CI log, not asserted here).
"""

import dataclasses
import json
import math
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from experiments.hostile_models.files import EXAMPLE_MODEL, example_copy, read_safetensors, safetensors_bytes
from helpers import SMOLLM2_FOLDER, SMOLLM2_GGUF
from jaxcontam.errors import ModelError
from jaxcontam.models.checkpoint_map import checkpoint_entries
from jaxcontam.models.config import eos_field
from jaxcontam.models.gguf import hf_config, open_reader, read_spec, tensor_index
from jaxcontam.models.loading import _check_entries, _tensor_index, read_config, weight_files
from jaxcontam.models.safetensors_file import read_header
from jaxcontam.models.safetensors_header import DTYPE_BITS

FUZZ = settings(
    max_examples=60,
    deadline=30_000,  # generous: the shared CI machine's load, not the work, sets an example's time
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)
HEADER, DATA = read_safetensors(EXAMPLE_MODEL / "model.safetensors")
NAMES = sorted(name for name in HEADER if name != "__metadata__")

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, -1, 1, 2**62, 2**63, 2**64 - 1, len(DATA), len(DATA) + 1]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3), max_leaves=6)


def _offsets(name: str):
    begin, end = HEADER[name]["data_offsets"]
    near = st.sampled_from([begin, end, 0, len(DATA), begin - 1, end + 1, begin + 4, 2**64 - 1, -begin])
    return st.lists(st.one_of(near, st.integers(-(2**65), 2**65)), min_size=0, max_size=3)


@st.composite
def mutated_safetensors(draw) -> bytes:
    kind = draw(st.sampled_from(["dtype", "shape", "data_offsets", "drop", "extra", "length", "bytes"]))
    header = json.loads(json.dumps(HEADER))
    name = draw(st.sampled_from(NAMES))
    if kind == "dtype":
        header[name]["dtype"] = draw(st.one_of(st.sampled_from(sorted(DTYPE_BITS)), json_values))
    elif kind == "shape":
        shape = HEADER[name]["shape"]
        dims = st.one_of(st.sampled_from([*shape, 0, 1, 2 * shape[0], 2**62]), st.integers(-3, 2**66))
        header[name]["shape"] = draw(st.one_of(st.lists(dims, max_size=4), json_values))
    elif kind == "data_offsets":
        header[name]["data_offsets"] = draw(st.one_of(_offsets(name), json_values))
    elif kind == "drop":
        del header[name]
    elif kind == "extra":
        header[name][draw(st.sampled_from(["dtype ", "offsets", "x"]))] = draw(json_values)
    text = json.dumps(header).encode()
    if kind == "length":
        return struct.pack("<Q", draw(st.sampled_from([0, 1, len(text) - 1, len(text) + 1, 2**62, 2**64 - 1]))) + (
            text + DATA
        )
    if kind == "bytes":
        raw = bytearray(text)
        for _ in range(draw(st.integers(1, 3))):
            raw[draw(st.integers(0, len(raw) - 1))] = draw(st.integers(0, 255))
        text = bytes(raw)
    return safetensors_bytes(text.decode("latin-1") if kind == "bytes" else header, DATA, len(text))


@FUZZ
@given(mutated_safetensors())
def test_a_mutated_safetensors_header_is_refused_or_read_as_the_reference_reader_reads_it(tmp_path, raw):
    from safetensors import SafetensorError, safe_open

    path = tmp_path / "model.safetensors"
    path.write_bytes(raw)
    try:
        ours = read_header(path)
    except ModelError as error:
        assert str(path) in str(error)
        return
    try:
        reference = safe_open(str(path), "np")
    except (SafetensorError, OSError, ValueError) as error:
        pytest.fail(f"accepted a header the safetensors package refuses ({error})")
    assert sorted(ours) == sorted(reference.keys())
    content = path.read_bytes()
    for name, info in ours.items():
        piece = reference.get_slice(name)
        assert (info.dtype, list(info.shape)) == (piece.get_dtype(), piece.get_shape())
        if info.dtype in ("F32", "F16", "F64", "I64", "I32", "U8"):
            assert content[info.begin : info.end] == reference.get_tensor(name).tobytes()


# ---- GGUF: the real SmolLM2 header


# metadata whose value no valid change can take: it must agree with the tensors (or is not read)
_CHECKED_KEYS = {
    "general.alignment",
    "llama.block_count",
    "llama.embedding_length",
    "llama.feed_forward_length",
    "llama.attention.head_count",
    "llama.attention.head_count_kv",
    "llama.vocab_size",
}


@dataclasses.dataclass(frozen=True)
class _Field:
    """One structural field of the header: its byte position, its struct format, and what it is."""

    at: int
    fmt: str
    what: str


def _fields(header: bytes) -> list[_Field]:
    """The structural fields of a GGUF header (v3, little-endian), found by walking it as the format lays it out."""
    fields = [_Field(8, "Q", "tensor count"), _Field(16, "Q", "kv count")]
    tensor_count, kv_count = struct.unpack_from("<QQ", header, 8)
    pos = 24
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def string(what):
        nonlocal pos
        (length,) = struct.unpack_from("<Q", header, pos)
        fields.append(_Field(pos, "Q", what))
        pos += 8 + length
        return header[pos - length : pos].decode()

    for _ in range(kv_count):
        key = string("key length")
        (value_type,) = struct.unpack_from("<I", header, pos)
        fields.append(_Field(pos, "I", f"value type of {key}"))
        pos += 4
        if value_type == 9:
            element_type, count = struct.unpack_from("<IQ", header, pos)
            fields += [_Field(pos, "I", f"element type of {key}"), _Field(pos + 4, "Q", f"count of {key}")]
            pos += 12
            for _ in range(count):
                if element_type == 8:
                    (length,) = struct.unpack_from("<Q", header, pos)
                    pos += 8 + length
                else:
                    pos += sizes[element_type]
        elif value_type == 8:
            string(f"string length of {key}")
        else:
            if key in _CHECKED_KEYS:
                fields.append(_Field(pos, {4: "I", 5: "i", 6: "f", 10: "Q"}.get(value_type, "B"), key))
            pos += sizes[value_type]
    for _ in range(tensor_count):
        name = string("tensor name length")
        (dims,) = struct.unpack_from("<I", header, pos)
        fields.append(_Field(pos, "I", f"dimension count of {name}"))
        fields += [_Field(pos + 4 + 8 * i, "Q", f"dimension {i} of {name}") for i in range(dims)]
        pos += 4 + 8 * dims
        fields += [_Field(pos, "I", f"type of {name}"), _Field(pos + 4, "Q", f"offset of {name}")]
        pos += 12
    return fields


@pytest.fixture(scope="module")
def smollm2_header(shared_data, tmp_path_factory):
    """(header bytes, file size, its structural fields, the unmutated parse) of the real SmolLM2 file; the header
    is read up to where the data section starts, never beyond."""
    path = shared_data / SMOLLM2_FOLDER / SMOLLM2_GGUF
    data_start = min(tensor.offset for tensor in open_reader(path).tensors)
    with open(path, "rb") as handle:
        header = handle.read(data_start)
    size = path.stat().st_size
    copy = tmp_path_factory.mktemp("smollm2") / SMOLLM2_GGUF
    return header, size, _fields(header), _header_pipeline(_sparse(copy, header, size))


def _sparse(path, header: bytes, size: int):
    with open(path, "wb") as handle:
        handle.write(header)
        handle.truncate(size)  # the data section as a hole: nothing written, nothing read
    return path


def _header_pipeline(path):
    """Everything loading does with a GGUF file before any weight is read: the header, the config, the tensor
    index and the shape of every tensor the config needs."""
    reader = open_reader(path)
    spec = read_spec(reader, path)
    index = tensor_index(reader, spec, path)
    _check_entries(checkpoint_entries(spec), index, spec, path, "the GGUF metadata")
    table = [(t.name, t.tensor_type, t.shape, t.offset, t.data.nbytes) for t in reader.tensors]
    return reader.metadata, table, hf_config(reader, path), spec


@st.composite
def gguf_mutations(draw, fields: list[_Field]):
    field = draw(st.sampled_from(fields))
    width = struct.calcsize("<" + field.fmt)
    if field.fmt == "f":
        value = draw(st.one_of(st.sampled_from([0.0, -1.0, math.nan, math.inf]), st.floats(width=32)))
    else:
        top = 2 ** (8 * width) - (1 if field.fmt.isupper() else 2 ** (8 * width - 1) + 1)
        low = 0 if field.fmt.isupper() else -(2 ** (8 * width - 1))
        value = draw(st.one_of(st.sampled_from([low, 0, 1, 2, 3, 13, 31, 33, top]), st.integers(low, top)))
    return field, struct.pack("<" + field.fmt, value)


@pytest.mark.shared_data
def test_a_mutated_smollm2_header_is_refused_or_read_as_the_unmutated_file(smollm2_header, tmp_path_factory):
    header, size, fields, unmutated = smollm2_header
    folder = tmp_path_factory.mktemp("mutated")

    by_name = {field.what: field for field in fields}
    # one value type for another of the same width: the file still parses, the value's kind changes
    same_width = [
        ("value type of tokenizer.ggml.add_space_prefix", 0),  # BOOL as UINT8 (found by this test)
        ("value type of tokenizer.ggml.add_bos_token", 1),  # BOOL as INT8
        ("value type of general.file_type", 6),  # UINT32 as FLOAT32
        ("value type of llama.rope.freq_base", 4),  # FLOAT32 as UINT32
        ("element type of tokenizer.ggml.token_type", 6),  # INT32 array as FLOAT32
    ]

    @settings(FUZZ, max_examples=40)
    @given(gguf_mutations(fields))
    def check(mutation):
        field, packed = mutation
        raw = bytearray(header)
        raw[field.at : field.at + len(packed)] = packed
        path = _sparse(folder / SMOLLM2_GGUF, bytes(raw), size)
        try:
            result = _header_pipeline(path)
        except ModelError as error:
            assert str(path) in str(error)
            return
        if bytes(raw) != header:  # a value written over itself is no mutation
            assert _same(result, unmutated), f"{field.what} = {packed.hex()} was accepted and changed the parse"

    for what, value_type in same_width:
        check = example((by_name[what], struct.pack("<I", value_type)))(check)
    check()


def _same(a, b) -> bool:
    """Two parses equal (NaN equal to NaN: the file's own float metadata is compared as stored)."""
    return json.dumps(a[:3], default=str, sort_keys=True) == json.dumps(b[:3], default=str, sort_keys=True) and (
        a[3] == b[3]
    )


# ---- config.json

CONFIG = json.loads((EXAMPLE_MODEL / "config.json").read_text())
# config.json field -> the path of the spec field it sets (nested configs first)
FREE = {"max_position_embeddings": ("max_position",), "rms_norm_eps": ("norms", "eps"), "rope_theta": ("rope", "theta")}
# fields whose valid values are other models' (another activation or family): refused by name lists, not fuzzed
NAMED = {"hidden_act", "model_type"}
hostile_values = st.one_of(
    json_values,
    st.sampled_from([0, -1, 0.0, -0.0, -1e-5, math.nan, math.inf, -math.inf, 10**9, 10**30, 128.0, 127.5, "4"]),
    st.integers(-5, 5000),
    st.floats(),
    st.dictionaries(st.text(max_size=4), json_scalars, max_size=2),
).filter(lambda value: value is not None)  # null means unset: a default, another model


@pytest.fixture(scope="module")
def example_spec(tmp_path_factory):
    return _config_pipeline(example_copy(tmp_path_factory.mktemp("config") / "model"))


def _config_pipeline(folder):
    """What loading does with a model folder before any weight is read: the config, and every weight file's
    header checked against it."""
    spec = read_config(folder)
    _check_entries(checkpoint_entries(spec), _tensor_index(weight_files(folder), spec), spec, folder, "config.json")
    return spec


def _with(config, path: tuple[str, ...], value):
    """`config` with its (nested) field at `path` set to `value`, converted to that field's type."""
    name, *inner = path
    current = getattr(config, name)
    return dataclasses.replace(config, **{name: _with(current, tuple(inner), value) if inner else type(current)(value)})


def _as_written(spec, field: str, value):
    """`spec` with the field that changes no tensor's shape set to `value` as the config reads it."""
    if field in FREE:
        return _with(spec, FREE[field], value)
    if field in ("bos_token_id", "pad_token_id"):
        ids = value if isinstance(value, list) else [value]  # a list: its first id, or none
        return dataclasses.replace(spec, **{field: ids[0] if ids else None})
    if field == "eos_token_id":
        return dataclasses.replace(spec, eos_token_id=eos_field(value))
    return spec


@FUZZ
@given(field=st.sampled_from(sorted(set(CONFIG) - NAMED)), value=hostile_values)
def test_a_hostile_config_field_is_refused_or_read_as_written(tmp_path_factory, example_spec, field, value):
    folder = tmp_path_factory.mktemp("config") / "model"
    example_copy(folder)
    (folder / "config.json").write_text(json.dumps({**CONFIG, field: value}))
    try:
        spec = _config_pipeline(folder)
    except ModelError as error:
        assert str(folder) in str(error)
        return
    assert spec == _as_written(example_spec, field, value), f"{field} = {value!r} was accepted and gave another model"
    assert all(np.isfinite([spec.norms.eps, spec.rope.theta, spec.attn_scale]))
