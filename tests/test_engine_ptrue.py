"""P(True): the judge's option tokens on real tokenizers, and probabilities against independent references
(a float64 numpy toy decoder, and torch transformers on the bundled tiny llama)."""

import pathlib
import string

import numpy as np
import pytest

from helpers import SMOLLM2_FOLDER, SMOLLM2_GGUF, ToySpec, naive_log_softmax, toy_model
from jaxcontam.engine.ptrue import KADAVATH, JudgeTemplate, option_token_ids, p_true
from jaxcontam.errors import JaxcontamError

REPO = pathlib.Path(__file__).resolve().parents[1]
TINY = REPO / "jaxcontam" / "examples" / "tiny_contaminated" / "model"

WORD_TABLE = {"Yes": 60, " Yes": 59, "yes": 58, " No": 55, "no": 54}


class WordTableTokenizer:
    """Greedy longest match against WORD_TABLE, one token per other character; BOS = 1."""

    unk_token_id = None

    def encode(self, text, add_special_tokens=True):
        ids, at = [1] if add_special_tokens else [], 0
        while at < len(text):
            word = max((w for w in WORD_TABLE if text.startswith(w, at)), key=len, default=None)
            ids.append(WORD_TABLE[word] if word else 2 + ord(text[at]) % 50)
            at += len(word) if word else 1
        return ids


@pytest.fixture
def model():
    return toy_model(ToySpec(final_logit_softcap=4.0), tokenizer=WordTableTokenizer())


def continuation_probability(model, prompt: str, option: str) -> float:
    """p(the tokens `option` adds after `prompt`) from the float64 reference decoder: product over those tokens."""
    tok = model.tokenizer
    prompt_ids, full = tok.encode(prompt), tok.encode(prompt + option)
    assert full[: len(prompt_ids)] == prompt_ids
    logp = naive_log_softmax(model, full)
    return float(np.exp(sum(logp[t - 1, full[t]] for t in range(len(prompt_ids), len(full)))))


def test_single_token_options_are_summed_from_the_full_softmax(model):
    judge = JudgeTemplate("words", "Q: {question}\nA: {answer}\nRight?", ("Yes", " Yes", "yes"), (" No", "no"))
    questions, answers = ["What is 2+2?", "Capital of France?", "Is water wet?"], ["4", "Lyon", "yes"]
    got = p_true(model, questions, answers, template=judge, rows_per_batch=2)
    for i, (q, a) in enumerate(zip(questions, answers)):
        last = np.exp(naive_log_softmax(model, model.tokenizer.encode(judge.render(q, a)))[-1])
        pt, pf = last[[60, 59, 58]].sum(), last[[55, 54]].sum()
        assert got.p_true[i] == pytest.approx(pt, rel=1e-4)
        assert got.p_false[i] == pytest.approx(pf, rel=1e-4)
        assert got.normalised[i] == pytest.approx(pt / (pt + pf), rel=1e-4)


def test_multi_token_options_are_scored_as_whole_continuations(model):
    judge = JudgeTemplate("spelled", "Q: {question}\nA: {answer}\nVerdict:", (" right", " Yes"), (" wrong",))
    questions, answers = ["What is 2+2?", "Capital of France?"], ["4", "Lyon"]
    got = p_true(model, questions, answers, template=judge)
    for i, (q, a) in enumerate(zip(questions, answers)):
        prompt = judge.render(q, a)
        pt = continuation_probability(model, prompt, " right") + continuation_probability(model, prompt, " Yes")
        pf = continuation_probability(model, prompt, " wrong")
        assert got.p_true[i] == pytest.approx(pt, rel=1e-4)
        assert got.normalised[i] == pytest.approx(pt / (pt + pf), rel=1e-4)


def test_templates_and_errors(model):
    assert KADAVATH.render("q", "a").endswith("Is the proposed answer True or False?\nThe proposed answer is:")
    with pytest.raises(JaxcontamError, match="exactly"):
        JudgeTemplate("bad", "Q: {question}", "Yes", "No")
    with pytest.raises(JaxcontamError, match="ends with a field"):
        JudgeTemplate("bad", "Q: {question} A: {answer}", "Yes", "No")
    with pytest.raises(JaxcontamError, match="unknown judge template"):
        p_true(model, ["q"], ["a"], template="nope")
    with pytest.raises(JaxcontamError, match="tokenize apart"):
        p_true(model, ["q"], ["a"], template=JudgeTemplate("same", "{question}{answer}:", " Yes", " Yes"))
    with pytest.raises(JaxcontamError, match="tokenize apart"):  # " Yo" spells the start of " Yoo"
        p_true(model, ["q"], ["a"], template=JudgeTemplate("prefix", "{question}{answer}:", " Yo", " Yoo"))


@pytest.fixture(scope="module")
def tiny_model():
    import jaxcontam

    return jaxcontam.load_model(str(TINY))


@pytest.fixture(scope="module")
def smollm2_tokenizer(shared_data):
    from jaxcontam.models.gguf_file import read_gguf
    from jaxcontam.models.gguf_tokenizer import gguf_tokenizer

    path = shared_data / SMOLLM2_FOLDER / SMOLLM2_GGUF
    return gguf_tokenizer(read_gguf(path).metadata, path)  # equal to transformers' own: test_models_gguf_tokenizer


def assert_verdict_words_are_not_option_letters(tok):
    """The judge's verdict tokens are the words True / False, never what an option letter (A-Z, bare or after a
    space, as an MMLU-style item shown in the question writes them) adds after the same prompt."""
    prompt = KADAVATH.render("What is 2 + 2?\nA. 3\nB. 4\nC. 5\nD. 6", "4")
    base = tok.encode(prompt, add_special_tokens=False)
    letters = {
        tuple(tok.encode(prompt + spelled, add_special_tokens=False)[len(base) :])
        for letter in string.ascii_uppercase
        for spelled in (letter, " " + letter)
    }
    (true,), (false,) = option_token_ids(tok, KADAVATH)
    assert tok.decode(list(true)) == " True" and tok.decode(list(false)) == " False"
    assert true not in letters and false not in letters
    return true, false


def test_judge_options_on_the_smollm2_bpe_tokenizer(smollm2_tokenizer):
    tok = smollm2_tokenizer
    assert assert_verdict_words_are_not_option_letters(tok) == (
        (tok.convert_tokens_to_ids("ĠTrue"),),
        (tok.convert_tokens_to_ids("ĠFalse"),),
    )


def test_judge_options_on_the_bundled_tokenizer(tiny_model):
    assert_verdict_words_are_not_option_letters(tiny_model.tokenizer)


def test_p_true_on_the_bundled_model_matches_torch(tiny_model):
    torch = pytest.importorskip("torch")
    from transformers import LlamaForCausalLM

    reference = LlamaForCausalLM.from_pretrained(str(TINY), dtype=torch.float32).eval()
    tok = tiny_model.tokenizer
    questions = [
        "Natalia sold clips to 48 of her friends. How many clips did she sell?",
        "The man broke his toe because",
    ]
    answers = ["48", "he dropped a hammer on his foot."]
    got = p_true(tiny_model, questions, answers, template=KADAVATH)

    def probability(prompt: str, option: str) -> float:
        prompt_ids, full = tok.encode(prompt), tok.encode(prompt + option)
        with torch.no_grad():
            logp = torch.log_softmax(reference(torch.tensor([full])).logits[0].double(), -1)
        return float(torch.exp(sum(logp[t - 1, full[t]] for t in range(len(prompt_ids), len(full)))))

    for i, (q, a) in enumerate(zip(questions, answers)):
        prompt = f"Question: {q}\nProposed Answer: {a}\nIs the proposed answer True or False?\nThe proposed answer is:"
        pt, pf = probability(prompt, " True"), probability(prompt, " False")
        assert got.p_true[i] == pytest.approx(pt, rel=1e-3)
        assert got.p_false[i] == pytest.approx(pf, rel=1e-3)
        assert got.normalised[i] == pytest.approx(pt / (pt + pf), rel=1e-3)
