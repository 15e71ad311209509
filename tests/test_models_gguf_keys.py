"""The standard GGUF keys' kinds (jaxcontam/models/gguf_keys.py): a value of another kind is refused, whatever its
width; integers of any width and sign, per-layer arrays and gemma3's per-layer sliding flags are admitted; keys of
another architecture or outside the table are not checked."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxcontam.models.gguf_keys import check_kinds

ARCH = {"general.architecture": "llama"}
SCALARS = {
    bool: st.booleans(),
    int: st.integers(-(2**63), 2**64 - 1),
    float: st.floats(width=32),
    str: st.text(max_size=4),
}
KEYS = {
    "tokenizer.ggml.add_space_prefix": bool,
    "tokenizer.ggml.bos_token_id": int,
    "general.file_type": int,
    "llama.rope.freq_base": float,
    "llama.attention.causal": bool,
    "llama.rope.scaling.type": str,
}


@given(st.sampled_from(sorted(KEYS)), st.sampled_from([bool, int, float, str]), st.data())
def test_a_scalar_key_admits_its_own_kind_and_refuses_every_other(key, stored, data):
    value = data.draw(SCALARS[stored])
    metadata = {**ARCH, key: value}
    if stored is KEYS[key]:
        check_kinds(metadata)
    else:
        with pytest.raises(ValueError, match=rf"metadata '{key}' is stored as .*; llama.cpp reads it as"):
            check_kinds(metadata)


def test_the_refusal_names_the_stored_and_the_expected_kind():
    with pytest.raises(ValueError, match=r"'tokenizer.ggml.add_bos_token' is stored as an integer \(1\); .* a bool$"):
        check_kinds({"tokenizer.ggml.add_bos_token": 1})
    with pytest.raises(ValueError, match=r"stored as an array of 2 starting 0.5; .* reads it as an array of integers"):
        check_kinds({"tokenizer.ggml.token_type": [0.5, 1.0]})


@pytest.mark.parametrize(
    ("key", "value", "admitted"),
    [
        ("llama.attention.head_count", 9, True),
        ("llama.attention.head_count", [9, 9, 3], True),  # one per layer
        ("llama.attention.head_count", [9.0], False),
        ("llama.attention.head_count", [True], False),
        ("llama.feed_forward_length", [], True),  # empty: refused later by the typed read, with its own message
        ("tokenizer.ggml.tokens", ["a", "b"], True),
        ("tokenizer.ggml.tokens", "a", False),  # an array key stored as one value
        ("tokenizer.ggml.scores", [0.0, -1.5], True),
        ("tokenizer.ggml.scores", [0, 1], False),
        ("llama.attention.sliding_window_pattern", 6, True),
        ("llama.attention.sliding_window_pattern", [True, False], True),  # gemma3: a flag per layer
        ("llama.attention.sliding_window_pattern", [1, 0], False),
        ("llama.block_count", "2", False),
    ],
)
def test_arrays_and_per_layer_values(key, value, admitted):
    metadata = {**ARCH, key: value}
    if admitted:
        check_kinds(metadata)
    else:
        with pytest.raises(ValueError, match=key):
            check_kinds(metadata)


def test_keys_of_another_architecture_or_outside_the_table_are_not_checked():
    check_kinds({**ARCH, "qwen2.rope.freq_base": 1, "llama.unknown.flag": 1.5, "general.author": 3})
    check_kinds({"llama.rope.freq_base": 1})  # no architecture: the loader refuses that file by name
