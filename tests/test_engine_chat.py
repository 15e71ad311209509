"""Chat wrapping of prompts: the SmolLM2 template (real GGUF tokenizer) and a tokenizer without one."""

import pathlib

import pytest

from jaxcontam.engine.chat import chat_text, encode_chat, uses_chat
from jaxcontam.errors import JaxcontamError

EXAMPLE_MODEL = pathlib.Path(__file__).resolve().parents[1] / "jaxcontam" / "examples" / "tiny_contaminated" / "model"


@pytest.fixture(scope="module")
def smollm2_tokenizer(shared_data):
    from jaxcontam.models.gguf_file import read_gguf
    from jaxcontam.models.gguf_tokenizer import gguf_tokenizer

    path = shared_data / "smollm2_135m_instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return gguf_tokenizer(read_gguf(path).metadata, path)  # equal to transformers' own: test_models_gguf_tokenizer


@pytest.fixture(scope="module")
def plain_tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(EXAMPLE_MODEL)


def test_auto_wraps_a_user_turn_and_opens_the_assistant_reply(smollm2_tokenizer):
    text = chat_text(smollm2_tokenizer, "What is 2+2?", "auto", assistant_prefix="The answer is")
    assert text.endswith("<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\nThe answer is")
    ids = encode_chat(smollm2_tokenizer, text, "auto")
    im_start = smollm2_tokenizer.convert_tokens_to_ids("<|im_start|>")
    assert ids[0] == im_start and ids.count(im_start) == 3  # system, user, assistant: no extra BOS added
    assert smollm2_tokenizer.decode(ids) == text


def test_never_leaves_the_prompt_alone(smollm2_tokenizer):
    assert not uses_chat(smollm2_tokenizer, "never")
    assert chat_text(smollm2_tokenizer, "Question: 1+1?\nAnswer:", "never", " (") == "Question: 1+1?\nAnswer: ("


def test_a_tokenizer_without_template_is_plain_under_auto_and_refused_under_always(plain_tokenizer):
    assert not uses_chat(plain_tokenizer, "auto")
    assert chat_text(plain_tokenizer, "Q", "auto") == "Q"
    with pytest.raises(JaxcontamError, match="no chat template"):
        chat_text(plain_tokenizer, "Q", "always")
    with pytest.raises(JaxcontamError, match="auto, never, always"):
        uses_chat(plain_tokenizer, "sometimes")


def test_chat_prompt_puts_the_last_line_at_the_start_of_the_reply(smollm2_tokenizer):
    from jaxcontam.engine.chat import chat_prompt

    judge = "Question: 1+1?\nProposed Answer: 2\nThe proposed answer is: ("
    text = chat_prompt(smollm2_tokenizer, judge, "auto")
    assert text.endswith(
        "user\nQuestion: 1+1?\nProposed Answer: 2<|im_end|>\n<|im_start|>assistant\nThe proposed answer is: ("
    )
    one_line = chat_prompt(smollm2_tokenizer, "The man broke his toe because", "auto")
    assert one_line.endswith("user\nThe man broke his toe because<|im_end|>\n<|im_start|>assistant\n")
    assert chat_prompt(smollm2_tokenizer, judge, "never") == judge
