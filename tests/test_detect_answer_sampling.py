"""Sampled answers (PaCoST's released code answers with do_sample=True): a draw is fixed by (seed, stream, item id),
whatever is answered beside it, and a multiple-choice draw follows the tempered nucleus of the choices."""

import pathlib

import numpy as np
import pytest
import scipy.stats

from jaxcontam.data.registry import load_benchmark
from jaxcontam.detect.answering import Sampling, answer_items
from jaxcontam.errors import JaxcontamError

TINY = pathlib.Path(__file__).resolve().parents[1] / "jaxcontam" / "examples" / "tiny_contaminated" / "model"


@pytest.fixture(scope="module")
def tiny_model():
    import jaxcontam

    return jaxcontam.load_model(str(TINY))


@pytest.mark.parametrize("name", ["gsm8k", "copa"])
def test_a_sampled_answer_is_the_same_however_the_items_are_split(tiny_model, shared_data, name):
    # enough items that two seeds cannot draw the same answers by chance (a two-choice item the tiny model is sure
    # of draws its favourite under any seed)
    count = 6 if name == "gsm8k" else 24
    items = list(load_benchmark(name, limit=count))
    benchmark = load_benchmark(name, limit=count)

    def texts(chunk, sampling):
        return [a.text for a in answer_items(tiny_model, benchmark, chunk, max_new_tokens=8, sampling=sampling)]

    drawn = Sampling(seed=5, stream="original")
    whole = texts(items, drawn)
    assert whole == texts(items[:2], drawn) + texts(items[2:], drawn)  # a resumed run's chunks draw the same
    others = [texts(items, Sampling(seed=6, stream="original")), texts(items, Sampling(seed=5, stream="rephrased"))]
    assert all(other != whole for other in others)


def test_a_multiple_choice_draw_follows_the_tempered_nucleus():
    logprobs = np.log([0.5, 0.3, 0.15, 0.05])
    sampling = Sampling(seed=0, temperature=0.7, top_p=0.8)
    tempered = np.exp(logprobs / 0.7) / np.exp(logprobs / 0.7).sum()
    # nucleus: the most likely choices until their mass reaches top_p (here the first two), renormalised
    assert tempered[0] < 0.8 <= tempered[:2].sum()
    expected = np.array([tempered[0], tempered[1], 0, 0]) / tempered[:2].sum()
    draws = np.bincount([sampling.draw(f"item-{i}", logprobs) for i in range(4000)], minlength=4)
    assert draws[2:].sum() == 0
    assert scipy.stats.chisquare(draws[:2], 4000 * expected[:2]).pvalue > 1e-3
    assert sampling.draw("item-7", logprobs) == sampling.draw("item-7", logprobs)


def test_sampling_settings_are_checked():
    with pytest.raises(JaxcontamError, match="temperature > 0"):
        Sampling(seed=0, temperature=0)
    with pytest.raises(JaxcontamError, match="seed"):
        Sampling(seed=-1)
