"""PaCoST's published judge against its authors' released code (github.com/lleozhang/PaCoST,
test_model_pipeline.py at fc80fc717269500491718c6df2b26261d9da9b02): their prompt text, their confidence loop run
with torch transformers' greedy `generate(output_scores=True)`, and the yes ids on the real SmolLM2 tokenizer."""

import pathlib

import numpy as np
import pytest

from helpers import SMOLLM2_FOLDER, SMOLLM2_GGUF
from jaxcontam.engine.chat import encode_chat
from jaxcontam.engine.pacost_judge import JUDGE_REQUEST, JUDGE_SYSTEM, judge_text, pacost_judge, yes_token_ids
from jaxcontam.errors import JaxcontamError

REPO = pathlib.Path(__file__).resolve().parents[1]
TINY = REPO / "jaxcontam" / "examples" / "tiny_contaminated" / "model"

# The authors' strings as their source writes them (Python line continuations inside the literals).
B_INST, E_INST = "[INST]", "[/INST]"
confidence_prompt = 'You are an expert in judging whether the answer is correct. \
        You will be given a question and a corresponding answer. \
        Your job is to determine whether this answer is correct. \
        You should only respond with Yes or No. \
        For example, given question "What is the value of 1+1? A. 1 B. 2 C. 3 D. 4" and answer "B", the correct response should be "Yes".'  # noqa: E501


def authors_judge_prompt(question, answer):
    return f"<s> {B_INST} <<SYS>> {confidence_prompt} <</SYS>> \
        The question is {question}. \
        The answer is {answer}. \
        Is the answer correct according to the question? {E_INST}"


def one_space(text):
    return " ".join(text.split())


def test_the_judge_asks_what_the_authors_ask():
    question, answer = "What is 7 * 6? A. 42 B. 36", "A"
    prompt = authors_judge_prompt(question, answer)
    system = prompt[prompt.index("<<SYS>>") + 7 : prompt.index("<</SYS>>")]
    request = prompt[prompt.index("<</SYS>>") + 8 : prompt.index(E_INST)]
    assert JUDGE_SYSTEM == one_space(system)
    assert JUDGE_REQUEST.format(question=question, answer=answer) == one_space(request)


@pytest.fixture(scope="module")
def smollm2_tokenizer(shared_data):
    from jaxcontam.models.gguf_file import read_gguf
    from jaxcontam.models.gguf_tokenizer import gguf_tokenizer

    path = shared_data / SMOLLM2_FOLDER / SMOLLM2_GGUF
    return gguf_tokenizer(read_gguf(path).metadata, path)  # equal to transformers': test_models_gguf_tokenizer


def test_the_judge_speaks_in_the_chat_template_of_the_model_under_test(smollm2_tokenizer):
    """SmolLM2's ChatML turns in place of Llama 2's [INST] <<SYS>>: the authors' system text, then the request."""
    text = judge_text(smollm2_tokenizer, "What is 2 + 2?", "4", "auto")
    request = "The question is What is 2 + 2?. The answer is 4. Is the answer correct according to the question?"
    assert text == (
        f"<|im_start|>system\n{one_space(confidence_prompt)}<|im_end|>\n"
        f"<|im_start|>user\n{request}<|im_end|>\n<|im_start|>assistant\n"
    )
    plain = judge_text(smollm2_tokenizer, "What is 2 + 2?", "4", "never")
    assert plain == f"{one_space(confidence_prompt)}\n\n{request}\n"


def test_a_template_without_a_system_role_gets_the_system_text_in_the_user_turn():
    """Gemma's template refuses a system turn; Llama 2's own template writes the system text inside the user turn."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(TINY))
    tok.chat_template = (
        "{% for m in messages %}{% if m['role'] == 'system' %}"
        "{{ raise_exception('System role not supported') }}{% endif %}"
        "<start_of_turn>{{ m['role'] }}\n{{ m['content'] }}<end_of_turn>\n{% endfor %}"
        "<start_of_turn>model"
    )  # jinja drops a template's final newline
    request = JUDGE_REQUEST.format(question="Q?", answer="A")
    assert judge_text(tok, "Q?", "A", "auto") == (
        f"<start_of_turn>user\n{JUDGE_SYSTEM}\n\n{request}<end_of_turn>\n<start_of_turn>model"
    )


def test_yes_ids_on_the_smollm2_tokenizer(smollm2_tokenizer):
    tok = smollm2_tokenizer
    spelled = {tok.convert_tokens_to_ids(t) for t in ("Yes", "ĠYes", "yes", "Ġyes", "YES", "ĠYES")}
    spelled.discard(tok.unk_token_id)
    found = yes_token_ids(tok)
    assert spelled <= set(found) and {tok.decode([i]).strip().lower() for i in found} == {"yes"}
    # the token a "Yes" reply starts with in the model's own chat is one of them
    prompt = judge_text(tok, "What is 2 + 2?", "4", "auto")
    base = encode_chat(tok, prompt, "auto")
    assert encode_chat(tok, prompt + "Yes", "auto")[len(base)] in found


def test_a_tokenizer_without_a_yes_token_is_refused():
    import jaxcontam

    model = jaxcontam.load_model(str(TINY))  # 2,048 tokens: " Yes" is " Y" + "es"
    with pytest.raises(JaxcontamError, match="no token spelling 'yes'"):
        pacost_judge(model, ["q"], ["a"])


@pytest.fixture(scope="module")
def smollm2_vocabulary_model(tmp_path_factory, smollm2_tokenizer):
    """A tiny random llama over SmolLM2's tokenizer (and chat template), its Yes / No rows scaled up so that some
    but not all greedy steps say yes or no."""
    torch = pytest.importorskip("torch")
    from transformers import LlamaConfig, LlamaForCausalLM

    import jaxcontam

    tok = smollm2_tokenizer
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    reference = LlamaForCausalLM(config).eval()
    rows = [tok.convert_tokens_to_ids(t) for t in ("Yes", "ĠYes", "yes", "Ġyes", "No", "ĠNo")]
    with torch.no_grad():
        reference.lm_head.weight[rows] *= 3
    path = tmp_path_factory.mktemp("smollm2-vocabulary")
    reference.save_pretrained(path)
    tok.save_pretrained(path)
    return jaxcontam.load_model(str(path)), reference


def authors_confidence(reference, tokenizer, prompt_ids, yes_ids, stop_ids, max_new_tokens):
    """`calculate_confidence_with_logits` of the authors, with `yes_id` the sum over `yes_ids`: greedy generation
    with scores; at each step whose argmax decodes to text holding "yes" or "no", softmax(scores)[yes]; the max."""
    import torch

    with torch.no_grad():
        out = reference.generate(
            torch.tensor([prompt_ids]),
            max_new_tokens=max_new_tokens,
            do_sample=False,
            output_scores=True,
            return_dict_in_generate=True,
            eos_token_id=stop_ids,
            pad_token_id=0,
        )
    re_confi = 0
    for score in out.scores:
        confi = torch.softmax(score[0].double(), dim=0)[list(yes_ids)].sum().item()
        dec = tokenizer.decode([torch.argmax(score[0]).item()])
        if "yes" in dec.lower() or "no" in dec.lower():
            re_confi = max(re_confi, confi)
    return re_confi, out.sequences[0, len(prompt_ids) :].tolist()


def test_the_confidence_is_the_authors_on_torch(smollm2_vocabulary_model):
    model, reference = smollm2_vocabulary_model
    tok = model.tokenizer
    questions = ["What is 2 + 2?", "The man broke his toe because", "Capital of France?", "Who wrote Hamlet?"]
    answers = ["4", "he dropped a hammer on his foot", "Lyon", "Shakespeare"]
    got = pacost_judge(model, questions, answers, max_new_tokens=16)
    stop = model.config.eos_token_id
    stop = [stop] if isinstance(stop, int) else list(stop)
    for q, a, reply in zip(questions, answers, got):
        prompt = encode_chat(tok, judge_text(tok, q, a, "auto"), "auto")
        expected, tokens = authors_confidence(reference, tok, prompt, yes_token_ids(tok), stop, 16)
        assert reply.text == tok.decode([t for t in tokens if t not in stop], skip_special_tokens=True)
        assert 0 < reply.verdict_steps < len(tokens)  # some steps say yes/no, others do not
        np.testing.assert_allclose(reply.confidence, expected, rtol=1e-4)
