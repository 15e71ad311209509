"""Weights are read by the part each device holds: a view of a stored tensor (re-laid by reshape, transpose and
slicing, as the checkpoint maps do) is read with positioned reads of exactly the bytes it covers.

References: numpy's own copy of the same view, and the bytes the view covers (its element count x item size).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.numpy import save_file

from helpers import drawn_slices
from jaxcontam.models.safetensors_file import TensorReader, read_header


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    path = tmp_path_factory.mktemp("st") / "w.safetensors"
    rng = np.random.default_rng(0)
    tensors = {
        "a": rng.standard_normal((24, 36)).astype(np.float32),
        "b": rng.standard_normal((6, 4, 10)).astype(np.float32),
    }
    save_file(tensors, str(path))
    return path, tensors


@st.composite
def views(draw):
    name = draw(st.sampled_from(["a", "b"]))
    layout = draw(st.sampled_from(["same", "transpose", "heads_in", "heads_out"]))
    return name, layout, draw(st.data())


def relaid(tensor: np.ndarray, layout: str) -> np.ndarray:
    """The checkpoint maps' re-layings (weight_entries): views of the stored tensor."""
    matrix = tensor.reshape(tensor.shape[0], -1)
    if layout == "transpose":
        return matrix.T
    if layout == "heads_in":  # [H*Dh, D] -> [D, H, Dh]
        return matrix.reshape(matrix.shape[0] // 2, 2, -1).transpose(2, 0, 1)
    if layout == "heads_out":  # [D, H*Dh] -> [H, Dh, D]
        return matrix.reshape(matrix.shape[0], -1, 2).transpose(1, 2, 0)
    return tensor


@settings(max_examples=200, deadline=None)
@given(case=views())
def test_a_part_is_read_from_exactly_its_bytes(stored, case):
    path, tensors = stored
    name, layout, data = case
    reader = TensorReader()
    view = relaid(reader.read(name, read_header(path)[name]), layout)
    chosen = drawn_slices(data.draw, view.shape)
    part = view[chosen]
    np.testing.assert_array_equal(reader.materialize(part), relaid(tensors[name], layout)[chosen])
    assert reader.bytes_read == part.size * part.itemsize


def test_a_whole_transposed_tensor_is_one_read(stored):
    path, tensors = stored
    reader = TensorReader()
    view = reader.read("a", read_header(path)["a"]).T
    np.testing.assert_array_equal(reader.materialize(view), tensors["a"].T)
    assert reader.bytes_read == tensors["a"].nbytes


def test_a_column_block_reads_only_its_columns(stored):
    path, tensors = stored
    reader = TensorReader()
    view = reader.read("a", read_header(path)["a"])[:, 9:18]
    np.testing.assert_array_equal(reader.materialize(view), tensors["a"][:, 9:18])
    assert reader.bytes_read == 24 * 9 * 4  # a quarter of the columns: a quarter of the bytes


def test_a_reversed_view_reads_the_span_it_covers(stored):
    path, tensors = stored
    reader = TensorReader()
    view = reader.read("a", read_header(path)["a"])[20:3:-2, ::-1]
    np.testing.assert_array_equal(reader.materialize(view), tensors["a"][20:3:-2, ::-1])
    assert reader.bytes_read == (20 - 4 + 1) * 36 * 4  # rows 4..20, whole


def test_an_array_not_from_a_file_is_copied():
    reader = TensorReader()
    array = np.arange(6.0).reshape(2, 3)
    assert np.array_equal(reader.materialize(array.T), array.T) and reader.bytes_read == 0
