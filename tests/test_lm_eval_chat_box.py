"""lm-eval's chat path (`JaxcontamLM.apply_chat_template`) renders in jaxcontam's template box: as transformers'
`apply_chat_template(..., add_generation_prompt=g, continue_final_message=not g)` renders (the final message left
open, trailing whitespace as transformers handles it), and a hostile template ends in a `ChatTemplateError`."""

import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("lm_eval")

from jaxcontam import chat_render  # noqa: E402
from jaxcontam.chat_render import ChatTemplateError, render_chat  # noqa: E402
from jaxcontam.lm_eval import JaxcontamLM  # noqa: E402

QUESTION = [{"role": "user", "content": "What is 2+2?"}]
CONVERSATIONS = {
    "question": QUESTION,
    "system and question": [{"role": "system", "content": "Answer briefly."}, *QUESTION],
    "prefilled answer": [*QUESTION, {"role": "assistant", "content": "The answer is"}],
    "prefilled answer, trailing space": [*QUESTION, {"role": "assistant", "content": "The answer is "}],
    "prefilled answer, trailing newlines": [*QUESTION, {"role": "assistant", "content": "Answer:\n\n"}],
    "few-shot, trailing space": [
        {"role": "system", "content": "Answer with a number."},
        *QUESTION,
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "What is 3+3? "},
        {"role": "assistant", "content": "Answer: "},
    ],
    "final user turn left open": [{"role": "user", "content": "Complete: the sky is "}],
}
# a template that trims each message (transformers then strips the render's end) and one that keeps its spacing
TRIMMING = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] | trim }}</s>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def lm_with(tokenizer) -> JaxcontamLM:
    """jaxcontam's lm-eval model around `tokenizer` (the chat path needs no weights)."""
    model = types.SimpleNamespace(tokenizer=tokenizer, config=types.SimpleNamespace(max_position=2048))
    return JaxcontamLM(pretrained=model)


def transformers_render(tokenizer, messages, generation: bool) -> str:
    return tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=generation, continue_final_message=not generation
    )


@pytest.fixture(scope="module")
def smollm2_tokenizer(shared_data):
    from jaxcontam.models.gguf_file import read_gguf
    from jaxcontam.models.gguf_tokenizer import gguf_tokenizer

    path = shared_data / "smollm2_135m_instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return gguf_tokenizer(read_gguf(path).metadata, path)


@pytest.mark.parametrize("template", ["smollm2", "trimming"])
@pytest.mark.parametrize("generation", [True, False], ids=["generation prompt", "continue final message"])
@pytest.mark.parametrize("messages", CONVERSATIONS.values(), ids=CONVERSATIONS.keys())
def test_renders_as_transformers_does(smollm2_tokenizer, monkeypatch, template, generation, messages):
    if template == "trimming":
        monkeypatch.setattr(smollm2_tokenizer, "chat_template", TRIMMING)
    original = [dict(message) for message in messages]
    expected = transformers_render(smollm2_tokenizer, messages, generation)
    assert lm_with(smollm2_tokenizer).apply_chat_template(messages, add_generation_prompt=generation) == expected
    assert messages == original  # the caller's conversation is not tagged


def test_the_final_message_is_left_open(smollm2_tokenizer):
    rendered = lm_with(smollm2_tokenizer).apply_chat_template(
        CONVERSATIONS["prefilled answer, trailing space"], add_generation_prompt=False
    )
    assert rendered.endswith("<|im_start|>assistant\nThe answer is ")  # no <|im_end|>, the space kept


@settings(max_examples=40, deadline=None)
@given(text=st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=30))
def test_any_final_text_continues_as_in_transformers(smollm2_tokenizer, text):
    messages = [*QUESTION, {"role": "assistant", "content": text}]
    for source in (smollm2_tokenizer.chat_template, TRIMMING):
        tokenizer = types.SimpleNamespace(
            chat_template=source, name_or_path="t", special_tokens_map=smollm2_tokenizer.special_tokens_map
        )
        try:
            expected = smollm2_tokenizer.apply_chat_template(
                messages, chat_template=source, tokenize=False, continue_final_message=True
            )
        except ValueError:  # transformers refuses (e.g. whitespace trimmed away): so does the box
            with pytest.raises(ChatTemplateError, match="does not write the final message"):
                render_chat(tokenizer, messages, add_generation_prompt=False, continue_final_message=True)
            continue
        assert render_chat(tokenizer, messages, add_generation_prompt=False, continue_final_message=True) == expected


def template(source: str):
    return types.SimpleNamespace(chat_template=source, name_or_path="hostile/model", special_tokens_map={})


@pytest.mark.parametrize(
    "source, message",
    [
        ("{% for m in messages %}{{ m['content'][:3] }}{% endfor %}", "does not write the final message"),
        ("{% for m in messages %}{{ m['role'] }}{% endfor %}", "never reads a message's 'content'"),
    ],
)
def test_a_template_that_drops_the_final_message_is_named(smollm2_tokenizer, source, message):
    messages = CONVERSATIONS["prefilled answer"]
    with pytest.raises(ValueError):  # transformers' own refusal
        smollm2_tokenizer.apply_chat_template(
            messages, chat_template=source, tokenize=False, continue_final_message=True
        )
    with pytest.raises(ChatTemplateError, match=f"the chat template of hostile/model {message}"):
        lm_with(template(source)).apply_chat_template(messages, add_generation_prompt=False)


@pytest.mark.parametrize("generation", [True, False], ids=["generation prompt", "continue final message"])
@pytest.mark.parametrize(
    "source",
    [
        "{% for i in range(10**5) %}{% for j in range(10**5) %}{% endfor %}{% endfor %}{{ messages[-1]['content'] }}",
        "{{ 'x' * 10**11 }}{{ messages[-1]['content'] }}",
        "{{ ''.__class__.__mro__ }}{{ messages[-1]['content'] }}",
    ],
    ids=["10^10 iterations", "100 GB string", "attribute escape"],
)
def test_a_hostile_template_through_lm_eval_ends_in_a_clear_error(monkeypatch, source, generation):
    """Bounded: the watchdog stops the 10^10 iterations at its (shortened) limit, the size check the string."""
    monkeypatch.setattr(chat_render, "RENDER_SECONDS", 0.5)
    with pytest.raises(ChatTemplateError, match="the chat template of hostile/model (ran past|was stopped|failed)"):
        lm_with(template(source)).apply_chat_template(CONVERSATIONS["prefilled answer"], generation)
