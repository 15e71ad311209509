"""Training small decoders: packing, a loss that falls, and a saved model that jaxcontam and torch both read."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import TINY_LLAMA_CONFIG
from jaxcontam.training import init_hf_tensors, packed_batches, save_hf_model, train


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(2, 40), min_size=1, max_size=30), st.integers(8, 24), st.integers(1, 3))
def test_packing_keeps_every_piece_once_with_its_own_positions(lengths, seq_len, batch_size):
    docs = [list(range(100 * i, 100 * i + n)) for i, n in enumerate(lengths)]
    seen = []
    for batch in packed_batches(docs, seq_len=seq_len, batch_size=batch_size, seed=1):
        assert batch["tokens"].shape == (batch_size, seq_len)
        for tokens, positions, segments in zip(batch["tokens"], batch["positions"], batch["segment_ids"]):
            for segment in set(segments[segments > 0].tolist()):
                where = np.flatnonzero(segments == segment)
                assert (np.diff(where) == 1).all() and (positions[where] == np.arange(len(where))).all()
                seen.append(tuple(tokens[where]))
    expected = [
        tuple(d[i : i + seq_len]) for d in docs for i in range(0, len(d), seq_len) if len(d[i : i + seq_len]) > 1
    ]
    assert len(seen) == len(set(seen)) and set(seen) <= set(expected)  # only the last partial batch may be dropped


def test_training_lowers_the_loss_and_the_saved_model_matches_torch(tmp_path):
    import torch
    import transformers

    import jaxcontam

    rng = np.random.default_rng(0)
    docs = [rng.integers(3, 64, 40).tolist()] * 64  # one sequence, memorisable
    tensors = init_hf_tensors(TINY_LLAMA_CONFIG, seed=0)
    result = train(
        TINY_LLAMA_CONFIG,
        tensors,
        packed_batches(docs, seq_len=48, batch_size=8, epochs=10),
        steps=60,
        learning_rate=1e-2,
        warmup=5,
        log_every=20,
        log=lambda _: None,
    )
    assert result.losses[-1] < 0.5 * result.losses[0]
    save_hf_model(tmp_path, TINY_LLAMA_CONFIG, result.tensors)
    ids = docs[0][:30]
    ours = jaxcontam.load_model(str(tmp_path)).logprobs([ids])[0]
    reference = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path)).eval()
    with torch.no_grad():
        logits = reference(torch.tensor([ids])).logits[0, :-1]
    expected = torch.log_softmax(logits, -1).gather(1, torch.tensor(ids[1:])[:, None])[:, 0].numpy()
    np.testing.assert_allclose(ours, expected, atol=1e-4)


def test_callback_sees_the_current_weights_during_training():
    calls = []
    docs = [list(range(3, 40))] * 16
    train(
        TINY_LLAMA_CONFIG,
        init_hf_tensors(TINY_LLAMA_CONFIG),
        packed_batches(docs, seq_len=32, batch_size=4, epochs=4),
        steps=6,
        log=lambda _: None,
        callback=lambda step, weights: calls.append((step, len(weights))),
        callback_every=3,
    )
    assert calls == [(3, len(init_hf_tensors(TINY_LLAMA_CONFIG))), (6, len(init_hf_tensors(TINY_LLAMA_CONFIG)))]


def test_a_corpus_without_trainable_documents_is_an_error():
    with pytest.raises(ValueError, match="nothing to train on"):
        next(packed_batches([[5]], seq_len=8, batch_size=1))
