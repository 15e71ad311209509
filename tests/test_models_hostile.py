"""Hostile and damaged model files are refused before any weight is used, with a ModelError naming the file, the
tensor or key and the fix; valid files (the bundled example, a tiny GGUF, the real SmolLM2 header) still load.

The rules are the formats' own: safetensors as huggingface/safetensors' `tensor.rs` validates a header (offsets
tiling the data section, byte counts from shape and dtype, the 100 MB header limit), GGUF as ggml's `gguf.cpp`
reads one (counts within the file, no repeated key or tensor, a UINT32 power-of-two alignment, each tensor at the
running aligned sum) and llama.cpp loads one (block_count and the tokens matching the tensors). The files are
written field by field by experiments/hostile_models/files.py; experiments/hostile_models/cases.py runs the same
cases against any checkout.
"""

import dataclasses
import json
import struct

import numpy as np
import pytest

import jaxcontam
from experiments.hostile_models.files import (
    EXAMPLE_MODEL,
    INT32,
    SEQUENCES,
    STRING,
    UINT32,
    GGUFTensorEntry,
    example_copy,
    model_cases,
    read_safetensors,
    safetensors_bytes,
    tiny_llama_gguf,
    with_offsets,
    write_gguf,
)
from helpers import SMOLLM2_FOLDER, SMOLLM2_GGUF
from jaxcontam.errors import ModelError
from jaxcontam.models.config_values import MAX_LAYERS
from jaxcontam.models.gguf import hf_config, open_reader, read_spec
from jaxcontam.models.llama2c import read_llama2c_model, read_llama2c_tokenizer
from jaxcontam.models.safetensors_file import read_header
from jaxcontam.models.spec import from_hf_config

# what each case of issue 61 is refused for (the message names the file too: checked below)
EXPECTED = {
    "safetensors: overlapping tensors (q_proj at k_proj's offsets)": r"overlaps the tensor before it",
    "safetensors: negative offsets (q_proj starts inside the header)": r"data_offsets \[-64, .* not a list of two",
    "safetensors: dtype/bytes mismatch (F16 declared over F32 bytes)": r"of F16 is 16,384 elements, but its data_off",
    "safetensors: shape/bytes mismatch (reshape error)": r"shape \[128, 64\] of F32 is 8,192 elements, but its data",
    "safetensors: KeyError 'dtype' (entry without dtype)": r"exactly 'dtype', 'shape' and 'data_offsets'",
    "safetensors: offset 2^64-1": r"are not an ordered range inside the [\d,]+-byte data section",
    "safetensors: shape 2^62 x 2^62": r"is more elements than the file holds",
    "safetensors: header length 2^62": r"header length field says 4,611,686,018,427,387,904 bytes, more than the file",
    "safetensors: header length 2^63": r"header length field says 9,223,372,036,854,775,808 bytes",
    "config.json: rms_norm_eps = 0": r"'rms_norm_eps' = 0.0 is invalid: expected a finite number > 0",
    "config.json: rms_norm_eps = -1e-5": r"'rms_norm_eps' = -1e-05 is invalid",
    "config.json: rms_norm_eps = NaN": r"'rms_norm_eps' = nan is invalid",
    "config.json: rope_theta = 0": r"'rope_theta' = 0.0 is invalid",
    "config.json: num_attention_heads = 0": r"'num_attention_heads' = 0 is invalid: expected a positive integer",
    "config.json: hidden_size = 0": r"'hidden_size' = 0 is invalid",
    "config.json: num_hidden_layers = 10^9": rf"'num_hidden_layers' = 1000000000 .* from 1 to {MAX_LAYERS:,}",
    "config.json: num_hidden_layers = 2 (the weights hold 4)": r"hold layer 3, but config.json says num_hidden_lay",
    'config.json: hidden_size = "128" (a string)': r"'hidden_size' = '128' is invalid",
    "config.json: num_key_value_heads = [4] (a list)": r"'num_key_value_heads' = \[4\] is invalid",
    'config.json: tie_word_embeddings = "false" (a string)': r"'tie_word_embeddings' = 'false' .* true or false",
    "config.json: nested 100,000 deep": r"nested too deeply",
    "GGUF: overlapping tensors (attn_q at attn_k's offset)": r"'blk.0.attn_q.weight' is at data offset .* end at",
    "GGUF: unaligned offset (attn_q 4 bytes later)": r"'blk.0.attn_q.weight' is at data offset [\d,]+4, but",
    "GGUF: F32 declared over F16 data (reads into the next tensor)": r"'blk.0.attn_k.weight' is at data offset",
    "GGUF: general.alignment = -32 (INT32)": r"general.alignment is stored as value type 5; .* UINT32",
    "GGUF: general.alignment = 0": r"general.alignment = 0 is not a positive power of two",
    "GGUF: offset 2^64-1": r"'blk.0.attn_q.weight' is at data offset 18,446,744,073,709,551,615",
    "GGUF: shape 2^62 x 2^62": r"'blk.0.attn_q.weight' of shape .* is larger than the whole file",
    "GGUF: tensor count 2^62": r"tensor count: the file says 4,611,686,018,427,387,904, but",
    "GGUF: key/value count 2^62": r"key/value count: the file says 4,611,686,018,427,387,904",
    "GGUF: block_count = 10^6": r"llama.block_count = 1,000,000, but the file holds tensors for 2 blocks",
    "GGUF: head_count = 0": r"'llama.attention.head_count' = 0 is invalid",
    "GGUF: embedding_length = 0": r"'llama.embedding_length' = 0 is invalid",
    "GGUF: layer_norm_rms_epsilon = 0": r"'llama.attention.layer_norm_rms_epsilon' = 0.0 is invalid",
    "GGUF: layer_norm_rms_epsilon = NaN": r"'llama.attention.layer_norm_rms_epsilon' = nan is invalid",
    "GGUF: rope.freq_base = 0": r"'llama.rope.freq_base' = 0.0 is invalid",
    "GGUF: block_count as a string": r"'llama.block_count' is stored as a string \('2'\); "
    r"llama.cpp reads it as an integer",
    "GGUF: rope.freq_base as UINT32 (a FLOAT32's width)": r"'llama.rope.freq_base' is stored as an integer \(10000\); "
    r"llama.cpp reads it as a float",
    "GGUF: add_bos_token as UINT8 (a BOOL's width)": r"'tokenizer.ggml.add_bos_token' is stored as an integer \(1\); "
    r"llama.cpp reads it as a bool",
}
CASES = model_cases()


def test_every_case_has_its_expected_refusal():
    assert set(EXPECTED) == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_hostile_model_file_is_refused_by_name(name, tmp_path):
    path = CASES[name](tmp_path / "model")
    with pytest.raises(ModelError, match=EXPECTED[name]) as refused:
        jaxcontam.load_model(path)
    assert str(path) in str(refused.value)  # names the file (or a file in the folder)


def test_the_unmutated_files_of_the_cases_load_with_finite_log_probs(tmp_path):
    """The controls: the cases differ from these by their one mutation."""
    for path in (example_copy(tmp_path / "example"), write_gguf(tmp_path / "gguf", tiny_llama_gguf())):
        for values in jaxcontam.load_model(path).logprobs(SEQUENCES):
            assert np.isfinite(values).all()


# ---- safetensors rules beyond the cases


def _refused(tmp_path, header, data, match, length=None):
    path = tmp_path / "model.safetensors"
    path.write_bytes(safetensors_bytes(header, data, length))
    with pytest.raises(ModelError, match=match) as refused:
        read_header(path)
    assert str(path) in str(refused.value)


def test_a_safetensors_header_in_any_order_with_offsets_that_tile_the_data_loads(tmp_path):
    """The format sorts by offset: a header listing its tensors in another order is valid."""
    header, data = read_safetensors(EXAMPLE_MODEL / "model.safetensors")
    path = tmp_path / "model.safetensors"
    path.write_bytes(safetensors_bytes(dict(reversed(list(header.items()))), data))

    def relative(file):  # dtype, shape and offsets in the data section
        start = file.stat().st_size - len(data)
        return {n: (i.dtype, i.shape, i.begin - start, i.end - start) for n, i in read_header(file).items()}

    assert relative(path) == relative(EXAMPLE_MODEL / "model.safetensors")


def test_a_hole_or_trailing_bytes_in_the_data_section_is_refused(tmp_path):
    t = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
    after = {"dtype": "F32", "shape": [2], "data_offsets": [12, 20]}
    _refused(tmp_path, {"a": t, "b": after}, bytes(20), r"'b' starts at data offset 12, which leaves a hole")
    _refused(tmp_path, {"a": t}, bytes(12), r"end at data offset 8 but the data section holds 12 bytes")
    _refused(tmp_path, {"a": t}, bytes(4), r"\[0, 8\] are not an ordered range inside the 4-byte data section")


@pytest.mark.parametrize(
    "text, match",
    [
        ('{"a": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}, "a": {}}', r"names 'a' twice"),
        ('{"__metadata__": {"format": 1}}', r"'__metadata__' must be an object of strings"),
        ("[1, 2]", r"JSON but not an object \(got list\)"),
        ('{"a": {"dtype": "F32", "shape": [true], "data_offsets": [0, 4]}}', r"shape \[True\] is not a list"),
        ('{"a": {"dtype": "F32", "shape": [1.0], "data_offsets": [0, 4]}}', r"shape \[1.0\] is not a list"),
        ('{"a": {"dtype": "Q4", "shape": [1], "data_offsets": [0, 4]}}', r"unknown dtype 'Q4'"),
        ('{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4], "x": 1}}', r"exactly 'dtype'"),
        ('{"a": {"dtype": "F4", "shape": [3], "data_offsets": [0, 4]}}', r"of F4 is 3 elements, but its data"),
        ("\xff\xfe", r"unreadable safetensors header"),
    ],
)
def test_a_malformed_safetensors_header_is_refused_by_what_is_wrong(tmp_path, text, match):
    raw = text.encode("latin-1") if text.startswith("\xff") else text.encode()
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(4))
    with pytest.raises(ModelError, match=match):
        read_header(path)


def test_a_header_longer_than_the_formats_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    import jaxcontam.models.safetensors_header as module

    monkeypatch.setattr(module, "MAX_HEADER_BYTES", 100)
    header = {"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "__metadata__": {"x": "y" * 200}}
    _refused(tmp_path, header, bytes(4), r"more than the format's limit of 100 bytes")


def test_a_shard_index_naming_a_file_outside_the_folder_or_no_map_is_refused(tmp_path):
    for weight_map in ({"model.embed_tokens.weight": "../model.safetensors"}, ["model.safetensors"]):
        folder = example_copy(tmp_path / f"model{len(list(tmp_path.iterdir()))}")
        (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
        with pytest.raises(ModelError, match=r"expected a 'weight_map' object of tensor name -> file name"):
            jaxcontam.load_model(folder)


def test_a_tensor_stored_in_two_shards_is_refused(tmp_path):
    folder = example_copy(tmp_path / "model")
    header, data = read_safetensors(folder / "model.safetensors")
    name = "model.norm.weight"
    begin, end = header[name]["data_offsets"]
    (folder / "extra.safetensors").write_bytes(
        safetensors_bytes({name: {**header[name], "data_offsets": [0, end - begin]}}, data[begin:end])
    )
    with pytest.raises(ModelError, match=rf"model.safetensors: tensor '{name}' is also stored as '{name}' in .*extra"):
        jaxcontam.load_model(folder)


# ---- GGUF rules beyond the cases


def _gguf_refused(tmp_path, parts, match):
    path = write_gguf(tmp_path, parts)
    with pytest.raises(ModelError, match=match) as refused:
        jaxcontam.load_model(path)
    assert str(path) in str(refused.value)


def test_a_gguf_with_another_power_of_two_alignment_loads_the_same_model(tmp_path):
    base = tiny_llama_gguf()
    wide = with_offsets(dataclasses.replace(base.with_metadata("general.alignment", UINT32, 64), alignment=64))
    reference = jaxcontam.load_model(write_gguf(tmp_path / "a", base)).logprobs(SEQUENCES)
    for a, b in zip(reference, jaxcontam.load_model(write_gguf(tmp_path / "b", wide)).logprobs(SEQUENCES)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda p: p.with_metadata("general.alignment", UINT32, 48), r"general.alignment = 48 is not a positive pow"),
        (lambda p: dataclasses.replace(p, metadata=[*p.metadata, p.metadata[0]]), r"'general.architecture' appears"),
        (lambda p: dataclasses.replace(p, tensors=[*p.tensors, p.tensors[0]]), r"'token_embd.weight' appears twice"),
        (lambda p: p.with_metadata("x", 9, (9, [])), r"metadata array 'x' has elements of type 9"),
        (lambda p: p.with_metadata("x", 13, None), r"metadata 'x' has unknown value type 13"),
        (lambda p: p.with_metadata("x", 9, (8, ["a"] * 3)), None),  # a valid array of strings: loads
        (lambda p: dataclasses.replace(p, version=1), r"GGUF version 1"),
    ],
)
def test_a_malformed_gguf_header_is_refused_by_what_is_wrong(tmp_path, change, match):
    parts = change(tiny_llama_gguf())
    if match is None:
        assert jaxcontam.load_model(write_gguf(tmp_path, parts)).config.num_layers == 2
    else:
        _gguf_refused(tmp_path, parts, match)


def test_a_gguf_tensor_of_unknown_type_or_partial_blocks_or_five_dims_is_refused(tmp_path):
    base = tiny_llama_gguf()
    norm = base.tensor("output_norm.weight")

    def with_tensor(entry: GGUFTensorEntry):
        return dataclasses.replace(base, tensors=[entry if t.name == norm.name else t for t in base.tensors])

    _gguf_refused(tmp_path / "a", with_tensor(dataclasses.replace(norm, type_id=4)), r"has ggml type 4, which the")
    q8 = dataclasses.replace(norm, type_id=8)  # Q8_0: blocks of 32; the 32-wide norm as 33 columns
    _gguf_refused(tmp_path / "b", with_tensor(dataclasses.replace(q8, dims=(33,))), r"rows of 33 elements are not")
    _gguf_refused(tmp_path / "c", with_tensor(dataclasses.replace(norm, dims=(1,) * 5)), r"has 5 dimensions")


def test_a_gguf_string_longer_than_the_file_is_refused_before_it_is_read(tmp_path):
    raw = bytearray(tiny_llama_gguf().to_bytes())
    raw[24:32] = struct.pack("<Q", 2**62)  # the first key's length
    path = tmp_path / "model.gguf"
    path.write_bytes(bytes(raw))
    with pytest.raises(ModelError, match=r"length of a metadata key: the file says 4,611,686,018,427,387,904"):
        open_reader(path)


def test_a_gguf_tokenizer_that_does_not_match_the_embedding_is_refused(tmp_path):
    vocab = tiny_llama_gguf().tensor("token_embd.weight").dims[1]
    base = tiny_llama_gguf().with_metadata("tokenizer.ggml.model", STRING, "gpt2")
    tokens = [f"t{i}" for i in range(vocab)]
    short = base.with_metadata("tokenizer.ggml.tokens", 9, (STRING, tokens[:-1]))
    _gguf_refused(tmp_path / "a", short, rf"has {vocab - 1} tokens but token_embd.weight has {vocab} rows")
    beyond = base.with_metadata("tokenizer.ggml.tokens", 9, (STRING, tokens))
    beyond = beyond.with_metadata("tokenizer.ggml.bos_token_id", UINT32, vocab)
    _gguf_refused(tmp_path / "b", beyond, rf"bos_token_id = {vocab} is not one of the {vocab} tokens")
    negative = base.with_metadata("tokenizer.ggml.tokens", 9, (STRING, tokens))
    negative = negative.with_metadata("tokenizer.ggml.eos_token_id", INT32, -1)
    _gguf_refused(tmp_path / "c", negative, r"'tokenizer.ggml.eos_token_id' = -1 is invalid")


def test_a_gguf_with_fewer_blocks_than_block_count_or_more_is_refused(tmp_path):
    base = tiny_llama_gguf()
    _gguf_refused(tmp_path / "a", base.with_metadata("llama.block_count", UINT32, 1), r"block_count = 1, but the")
    stray = dataclasses.replace(base.tensor("blk.1.attn_norm.weight"), name="blk.7.attn_norm.weight")
    extra = with_offsets(dataclasses.replace(base, tensors=[*base.tensors, stray]))
    _gguf_refused(tmp_path / "b", extra, r"block_count = 2, but the file holds tensors for 8 blocks")


def test_the_real_smollm2_header_passes_every_check(shared_data):
    """Header and metadata only: the real file's weights are never loaded here."""
    path = shared_data / SMOLLM2_FOLDER / SMOLLM2_GGUF
    reader = open_reader(path)
    assert len(reader.tensors) == 272 and hf_config(reader, path)["num_hidden_layers"] == 30
    assert read_spec(reader, path).vocab_size == len(reader.metadata["tokenizer.ggml.tokens"]) == 49152


# ---- config fields


SMALL = json.loads((EXAMPLE_MODEL / "config.json").read_text())


@pytest.mark.parametrize(
    "fields, match",
    [
        ({"num_key_value_heads": 3}, r"'num_key_value_heads' = 3 is invalid: expected a divisor of num_attention"),
        ({"num_attention_heads": 256}, r"more heads than the hidden size \(128\) leaves no head_dim"),
        ({"partial_rotary_factor": 1.5}, r"'partial_rotary_factor' = 1.5 is not supported"),
        ({"rope_theta": float("inf")}, r"'rope_theta' = inf is invalid"),
        ({"rope_theta": 10**400}, r"'rope_theta' = .* is invalid: expected a finite number"),
        ({"hidden_size": 127.5}, r"'hidden_size' = 127.5 is invalid: expected a positive integer"),
        ({"vocab_size": True}, r"'vocab_size' = True is invalid"),
        ({"bos_token_id": "1"}, r"'bos_token_id' = '1' is invalid: expected an integer"),
        ({"eos_token_id": [2, None]}, r"'eos_token_id' = None is invalid"),
        ({"hidden_act": ["silu"]}, r"'hidden_act' = \['silu'\] is not supported"),
        ({"rope_scaling": "linear"}, r"'rope_scaling' = 'linear' is not supported: expected an object"),
        ({"model_type": ["llama"]}, r"'model_type' = \['llama'\] is not supported"),
        (
            {
                "rope_scaling": {
                    "rope_type": "llama3",
                    "factor": 8.0,
                    "low_freq_factor": 4.0,
                    "high_freq_factor": 4.0,
                    "original_max_position_embeddings": 64,
                }
            },
            r"'rope_parameters.high_freq_factor' = 4.0 .* above low_freq_factor",
        ),
        ({"rope_scaling": {"rope_type": "linear", "factor": -2.0}}, r"'rope_parameters.factor' = -2.0 is invalid"),
    ],
)
def test_a_config_field_of_the_wrong_type_or_range_is_refused_by_name(fields, match):
    with pytest.raises(ModelError, match=match):
        from_hf_config({**SMALL, **fields}, "config.json")


@pytest.mark.parametrize(
    "model_type, fields, match",
    [
        ("gemma2", {"query_pre_attn_scalar": 0}, r"'query_pre_attn_scalar' = 0 is invalid"),
        ("gemma2", {"final_logit_softcapping": 0.0}, r"'final_logit_softcapping' = 0.0 is invalid"),
        ("gemma3_text", {"sliding_window_pattern": 0}, r"'sliding_window_pattern' = 0 is invalid"),
        ("gemma3_text", {"layer_types": "sliding"}, r"'layer_types' = 'sliding' is not supported: expected a list"),
        ("granite", {"logits_scaling": 0.0}, r"'logits_scaling' = 0.0 is invalid"),
        ("gpt2", {"n_head": 5}, r"'n_head' = 5 is not supported: GPT-2 needs the heads to divide n_embd"),
        ("mixtral", {"num_experts_per_tok": 0}, r"'num_experts_per_tok' = 0 is invalid"),
    ],
)
def test_family_fields_of_the_wrong_range_are_refused_by_name(model_type, fields, match):
    import transformers as tf

    config = tf.AutoConfig.for_model(model_type).to_dict()
    with pytest.raises(ModelError, match=match):
        from_hf_config({**config, **fields}, "config.json")


def test_an_oversized_or_non_object_config_json_is_refused(tmp_path, monkeypatch):
    import jaxcontam.models.config_values as module

    folder = example_copy(tmp_path / "model")
    (folder / "config.json").write_text("[1]")
    with pytest.raises(ModelError, match=r"config.json: expected a JSON object, got list"):
        jaxcontam.load_model(folder)
    monkeypatch.setattr(module, "MAX_JSON_BYTES", 10)
    (folder / "config.json").write_text(json.dumps(SMALL))
    with pytest.raises(ModelError, match=r"too large for a model's JSON file \(limit 10\)"):
        jaxcontam.load_model(folder)


def test_a_generation_config_with_wrong_typed_eos_ids_is_refused(tmp_path):
    folder = example_copy(tmp_path / "model")
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": ["2"]}))
    with pytest.raises(ModelError, match=r"generation_config.json: field 'eos_token_id' = '2' is invalid"):
        jaxcontam.load_model(folder)


# ---- llama2c


def _llama2c(path, header, floats):
    path.write_bytes(struct.pack("<7i", *header) + np.zeros(floats, "<f4").tobytes())
    return path


def test_a_llama2c_header_of_odd_head_size_or_huge_sizes_is_refused(tmp_path):
    with pytest.raises(ModelError, match=r"heads of an even size"):
        read_llama2c_model(_llama2c(tmp_path / "odd.bin", (6, 8, 1, 2, 2, 4, 4), 10))
    big = (2**30, 2**30, 2**30, 2, 2, 2**30, 2)  # its float count overflows int64: the size is exact
    with pytest.raises(ModelError, match=rf"implies {28 + 4 * _llama2c_floats(big)} for"):
        read_llama2c_model(_llama2c(tmp_path / "big.bin", big, 10))


def _llama2c_floats(h) -> int:
    dim, hidden, layers, heads, kv, vocab, seq = h
    head = dim // heads
    return vocab * dim + layers * (2 * dim + 2 * dim * dim + 2 * kv * head * dim + 3 * hidden * dim) + dim + seq * head


def test_a_llama2c_tokenizer_with_a_negative_or_overlong_token_is_refused(tmp_path):
    for length in (-8, 1000):
        path = tmp_path / f"tok{length}.bin"
        path.write_bytes(struct.pack("<i", 4) + struct.pack("<fi", 0.0, length) + b"ab")
        with pytest.raises(ModelError, match=rf"token 0 says it is {length} bytes long"):
            read_llama2c_tokenizer(path, 1)
