"""score_logprobs: packed, bucketed scoring equals scoring each sequence alone, in input order."""

import numpy as np
import pytest

from helpers import naive_logprobs, toy_model
from jaxcontam.engine.compile_guard import count_compilations
from jaxcontam.engine.scoring import score_logprobs
from jaxcontam.errors import JaxcontamError


@pytest.fixture
def model():
    return toy_model()


def random_sequences(n, rng, low=2, high=90, vocab=61):
    return [rng.integers(0, vocab, size=rng.integers(low, high)).tolist() for _ in range(n)]


def test_packed_scores_equal_unpacked_reference(model):
    seqs = random_sequences(23, np.random.default_rng(0))
    scores = score_logprobs(model, seqs, rows_per_batch=4, buckets=(32, 128), with_stats=True)
    for seq, s in zip(seqs, scores):
        np.testing.assert_allclose(s.logprobs, naive_logprobs(model, seq), rtol=1e-5, atol=1e-5)
        assert s.mean_logprobs.shape == s.std_logprobs.shape == (len(seq) - 1,)
        assert np.all(s.mean_logprobs < 0) and np.all(s.std_logprobs > 0)


def test_spans_select_scored_tokens(model):
    seqs = random_sequences(5, np.random.default_rng(1), low=10, high=30)
    spans = [(3, 7), None, (1, len(seqs[2])), (len(seqs[3]) - 1, len(seqs[3])), (5, 6)]
    scores = score_logprobs(model, seqs, spans)
    for seq, span, s in zip(seqs, spans, scores):
        start, end = span or (1, len(seq))
        np.testing.assert_allclose(s.logprobs, naive_logprobs(model, seq)[start - 1 : end - 1], rtol=1e-5, atol=1e-5)
        assert s.start == start


def test_compiles_once_per_bucket_not_per_batch(model):
    seqs = random_sequences(60, np.random.default_rng(2), low=2, high=120)
    with count_compilations() as counts:
        score_logprobs(model, seqs, rows_per_batch=2, buckets=(16, 64, 128), pack=False)
    steps = counts["jit(score_step)"]
    assert 1 <= steps <= 3, counts  # 60 rows in batches of 2: ~30 batches, at most 3 shapes
    assert sum(counts.values()) <= 6, counts


def test_bad_input_is_reported(model):
    with pytest.raises(JaxcontamError, match="sequence 1 has 1 token"):
        score_logprobs(model, [[1, 2], [3]])
    with pytest.raises(JaxcontamError, match="span .* of sequence 0"):
        score_logprobs(model, [[1, 2, 3]], [(0, 2)])
    with pytest.raises(JaxcontamError, match="max_position"):
        score_logprobs(model, [[1] * 600])


def test_real_model_packed_scores_equal_the_reference_path_in_f32_and_close_in_bf16(stories_dir, shared_data):
    import jaxcontam

    lines = (shared_data / "corpus_misc" / "tinyshakespeare" / "input.txt").read_text().splitlines()
    model = jaxcontam.load_model(str(stories_dir))
    seqs = [model.tokenizer.encode(line) for line in lines[:40] if len(line) > 3]
    reference = model.logprobs(seqs)
    packed = score_logprobs(model, seqs, rows_per_batch=4, vocab_block=128)
    for ref, s in zip(reference, packed):
        np.testing.assert_allclose(s.logprobs, ref, atol=1e-4)
    half = score_logprobs(jaxcontam.load_model(str(stories_dir), dtype="bfloat16"), seqs, rows_per_batch=4)
    for ref, s in zip(reference, half):
        assert s.logprobs.dtype == np.float32
        assert abs(float(s.logprobs.mean()) - float(ref.mean())) < 0.1  # bf16 weights, f32 softmax
