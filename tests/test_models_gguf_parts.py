"""A part of a GGUF tensor is dequantised from just the rows and blocks it covers.

The reader hands out untouched views of each tensor in the Hugging Face layout; the checkpoint maps re-lay and
slice them; `materialize` must give what the `gguf` package's own `dequantize` of the whole tensor gives for the
same view (llama's q rows back in the Hugging Face order), after reading only the quantisation blocks of the rows
the view touches.
"""

import gguf
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import SMOLLM2_FOLDER, SMOLLM2_GGUF, TINY_LLAMA_CONFIG, drawn_slices, llama_cpp_permute
from jaxcontam.models.families.llama import unpermute_rotary_rows
from jaxcontam.models.gguf import tensor_index
from jaxcontam.models.gguf_file import read_gguf
from jaxcontam.models.gguf_parts import GGUFTensorReader
from jaxcontam.models.spec import from_hf_config

Q = gguf.GGMLQuantizationType
CONFIG = {**TINY_LLAMA_CONFIG, "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4}
SPEC = from_hf_config(CONFIG, source="test")
# GGUF name -> (HF shape, quantisation)
TENSORS = {
    "blk.0.attn_q.weight": ((64, 64), Q.Q8_0),
    "blk.0.ffn_down.weight": ((64, 128), Q.Q4_1),
    "blk.0.ffn_up.weight": ((128, 64), Q.F16),
    "blk.0.attn_q.bias": ((64,), Q.F32),
}


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A GGUF file of the TENSORS and, per name, the whole tensor in the Hugging Face layout as `gguf`
    dequantises it."""
    path = tmp_path_factory.mktemp("gguf") / "parts.gguf"
    rng = np.random.default_rng(0)
    writer = gguf.GGUFWriter(str(path), "llama")
    expected = {}
    for name, (shape, qtype) in TENSORS.items():
        weight = rng.standard_normal(shape).astype(np.float32)
        if ".attn_q." in name:  # stored in llama.cpp's rotary row order
            weight = llama_cpp_permute(weight, CONFIG["num_attention_heads"], CONFIG["num_attention_heads"])
        raw = (
            gguf.quants.quantize(weight, qtype)
            if qtype not in (Q.F32, Q.F16)
            else weight.astype(np.float16 if qtype == Q.F16 else np.float32)
        )
        writer.add_tensor(name, raw, raw_dtype=qtype if qtype not in (Q.F32, Q.F16) else None)
        whole = np.asarray(gguf.quants.dequantize(raw, qtype), np.float32).reshape(shape)
        expected[name] = unpermute_rotary_rows(whole, CONFIG["num_attention_heads"]) if ".attn_q." in name else whole
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path, expected


def stored_info(path, name):
    from jaxcontam.models.gguf import GGUFTensorInfo

    tensor = {t.name: t for t in read_gguf(path).tensors}[name]
    return GGUFTensorInfo(path, tensor.shape, tensor)


def relaid(tensor: np.ndarray, layout: str) -> np.ndarray:
    """The checkpoint maps' re-layings (weight_entries): views of the stored tensor."""
    if tensor.ndim == 1 or layout == "same":
        return tensor
    if layout == "transpose":
        return tensor.T
    if layout == "heads_in":  # [H*Dh, D] -> [D, H, Dh]
        return tensor.reshape(4, tensor.shape[0] // 4, -1).transpose(2, 0, 1)
    return tensor.reshape(tensor.shape[0], 4, -1).transpose(1, 2, 0)  # heads_out: [D, H*Dh] -> [H, Dh, D]


@settings(max_examples=150, deadline=None)
@given(
    name=st.sampled_from(sorted(TENSORS)),
    layout=st.sampled_from(["same", "transpose", "heads_in", "heads_out"]),
    data=st.data(),
)
def test_a_part_equals_the_same_part_of_the_whole_dequantised_tensor(stored, name, layout, data):
    path, expected = stored
    reader = GGUFTensorReader(SPEC)
    view = relaid(reader.read(name, stored_info(path, name)), layout)
    chosen = drawn_slices(data.draw, view.shape)
    np.testing.assert_array_equal(reader.materialize(view[chosen]), relaid(expected[name], layout)[chosen])


@pytest.mark.parametrize("name", sorted(TENSORS))
def test_a_half_of_the_rows_reads_half_of_the_bytes(stored, name):
    path, expected = stored
    info = stored_info(path, name)
    reader = GGUFTensorReader(SPEC)
    view = reader.read(name, info)
    rows = view.shape[0] // 2
    np.testing.assert_array_equal(reader.materialize(view[rows:]), expected[name][rows:])
    if view.ndim == 1:  # a vector is read whole
        assert reader.bytes_read == info.tensor.data.nbytes
    else:
        assert reader.bytes_read == info.tensor.data.nbytes // 2


def test_a_column_block_reads_only_the_blocks_covering_it(stored):
    path, expected = stored
    name = "blk.0.ffn_down.weight"  # Q4_1: blocks of 32 columns in 20 bytes
    reader = GGUFTensorReader(SPEC)
    view = reader.read(name, stored_info(path, name))
    np.testing.assert_array_equal(reader.materialize(view[:, 64:96]), expected[name][:, 64:96])
    assert reader.bytes_read == 64 * 20  # one block per row
    np.testing.assert_array_equal(reader.materialize(view[:, 40:70]), expected[name][:, 40:70])
    assert reader.bytes_read == 64 * 20 + 64 * 2 * 20  # blocks 1 and 2 of every row


def test_the_views_own_no_memory_and_are_not_readable_by_accident(stored):
    path, _ = stored
    reader = GGUFTensorReader(SPEC)
    view = reader.read("blk.0.ffn_up.weight", stored_info(path, "blk.0.ffn_up.weight"))
    assert not view.flags.writeable and not view.flags.owndata


def test_tensor_index_views_of_a_real_file_dequantise_like_gguf(shared_data):
    """The embedding, final norm and layer 0 of the real SmolLM2 file, read in two row halves, equal gguf's
    dequantisation (q/k rows unpermuted)."""
    from jaxcontam.models.gguf import read_spec

    path = shared_data / SMOLLM2_FOLDER / SMOLLM2_GGUF
    file = read_gguf(path)
    spec = read_spec(file, path)
    reader = GGUFTensorReader(spec)
    chosen = [
        (name, info)
        for name, info in tensor_index(file, spec, path).values()
        if name.startswith(("blk.0.", "token_embd", "output_norm"))
    ]
    assert len(chosen) == 11
    for name, info in chosen:
        whole = np.asarray(gguf.quants.dequantize(info.tensor.data, info.tensor.tensor_type), np.float32)
        whole = whole.reshape(info.shape)
        if ".attn_q." in name or ".attn_k." in name:
            heads = spec.num_heads if ".attn_q." in name else spec.num_kv_heads
            whole = unpermute_rotary_rows(whole, heads)
        view = reader.read(name, info)
        half = view.shape[0] // 2
        got = np.concatenate([reader.materialize(view[:half]), reader.materialize(view[half:])])
        np.testing.assert_array_equal(got, whole)
