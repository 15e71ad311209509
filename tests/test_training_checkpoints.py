"""Orbax training checkpoints: an interrupted run resumes to exactly the weights of an uninterrupted one."""

import itertools

import numpy as np
import pytest

from helpers import TINY_LLAMA_CONFIG
from jaxcontam.training import init_hf_tensors, packed_batches, train
from jaxcontam.training.checkpoints import TrainCheckpoints


def _batches():
    rng = np.random.default_rng(0)
    docs = [rng.integers(3, 64, 30).tolist() for _ in range(40)]
    return packed_batches(docs, seq_len=32, batch_size=4, epochs=3, seed=0)


def test_an_interrupted_run_resumes_to_the_uninterrupted_weights(tmp_path):
    quiet = dict(log=lambda _: None, learning_rate=1e-2, warmup=2)
    whole = train(TINY_LLAMA_CONFIG, init_hf_tensors(TINY_LLAMA_CONFIG), _batches(), steps=6, **quiet)
    checkpoints = TrainCheckpoints(tmp_path / "ckpt", every=2)
    train(
        TINY_LLAMA_CONFIG,
        init_hf_tensors(TINY_LLAMA_CONFIG),
        itertools.islice(_batches(), 3),
        steps=6,
        checkpoints=checkpoints,
        **quiet,
    )
    assert checkpoints.latest_step() == 3  # the interrupted run saved where it stopped
    messages = []
    resumed = train(
        TINY_LLAMA_CONFIG,
        init_hf_tensors(TINY_LLAMA_CONFIG, seed=1),
        _batches(),
        steps=6,
        checkpoints=checkpoints,
        **(quiet | {"log": messages.append}),
    )
    assert "resumed from the checkpoint of step 3" in messages
    for name, value in whole.tensors.items():
        np.testing.assert_allclose(resumed.tensors[name], value, rtol=1e-5, atol=1e-6)
    restored = TrainCheckpoints(tmp_path / "ckpt", every=2).restore_weights()
    assert all(np.array_equal(restored[k], v) for k, v in resumed.tensors.items())


def test_weights_cannot_be_restored_before_any_save(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        TrainCheckpoints(tmp_path, every=1).restore_weights()
    with pytest.raises(ValueError, match="interval"):
        TrainCheckpoints(tmp_path, every=0)
