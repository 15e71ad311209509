"""P(True): answer-token resolution and probabilities vs a numpy reference on the toy decoder."""

import engine_toy_model as toy
import numpy as np
import pytest

from jaxcontam.engine.ptrue import (
    KADAVATH,
    PACOST,
    JudgeTemplate,
    p_true,
    word_token_ids,
)
from jaxcontam.errors import JaxcontamError


WORD_TABLE = {"Yes": 60, " Yes": 59, "yes": 58, "YES": 57, "No": 56, " No": 55, " no": 54}


class WordTableTokenizer:
    """Whole strings from WORD_TABLE are one token; anything else is one token per character."""

    def encode(self, text, add_special_tokens=True):
        if text in WORD_TABLE:
            return [WORD_TABLE[text]]
        return ([1] if add_special_tokens else []) + [2 + ord(c) % 50 for c in text]


@pytest.fixture
def model(monkeypatch):
    toy.install(monkeypatch)
    return toy.toy_model(toy.ToySpec(final_logit_softcap=4.0), tokenizer=WordTableTokenizer())


def test_word_variants_are_resolved():
    tok = WordTableTokenizer()
    assert set(word_token_ids(tok, "Yes")) == {60, 59, 58, 57}
    assert set(word_token_ids(tok, "No")) == {56, 55, 54}
    assert word_token_ids(tok, "True") == (2 + ord("T") % 50,)  # no single-token spelling: first token


def test_p_true_matches_full_softmax_reference(model):
    questions = ["What is 2+2?", "Capital of France?", "Is water wet?"]
    answers = ["4", "Lyon", "yes"]
    got = p_true(model, questions, answers, template=PACOST, rows_per_batch=2)
    tok = model.tokenizer
    for i, (q, a) in enumerate(zip(questions, answers)):
        last = np.exp(toy.naive_log_softmax(model, tok.encode(PACOST.render(q, a)))[-1])
        pt, pf = last[[60, 59, 58, 57]].sum(), last[[56, 55, 54]].sum()
        assert got.p_true[i] == pytest.approx(pt, rel=1e-4)
        assert got.p_false[i] == pytest.approx(pf, rel=1e-4)
        assert got.normalised[i] == pytest.approx(pt / (pt + pf), rel=1e-4)


def test_templates_and_errors(model):
    assert "The proposed answer is:" in KADAVATH.render("q", "a")
    custom = JudgeTemplate("mine", "Q: {question} A: {answer} Right?", "Yes", "No")
    assert p_true(model, ["q"], ["a"], template=custom).normalised.shape == (1,)
    with pytest.raises(JaxcontamError, match="exactly"):
        JudgeTemplate("bad", "Q: {question}", "Yes", "No")
    with pytest.raises(JaxcontamError, match="unknown judge template"):
        p_true(model, ["q"], ["a"], template="nope")
    with pytest.raises(JaxcontamError, match="share tokens"):
        p_true(model, ["q"], ["a"], template=JudgeTemplate("same", "{question}{answer}", "Yes", "yes"))
