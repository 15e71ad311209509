"""Chat templates render in a box (`jaxcontam.chat_render`): as transformers renders them, and hostile ones stopped
with an error naming the template, in bounded time and memory; a template that drops the prompt is refused."""

import json
import shutil
import time
import tracemalloc
import types

import pytest

from helpers import run_cli
from jaxcontam import chat_render
from jaxcontam.audit.config import EXAMPLE_CONFIG
from jaxcontam.chat_render import ChatTemplateError, render_chat
from jaxcontam.engine.chat import chat_text
from jaxcontam.errors import JaxcontamError

ECHO = (
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}{% if add_generation_prompt %}<a>{% endif %}"
)
USER = [{"role": "user", "content": "hi"}]


def template(source: str, name: str = "hostile/model"):
    return types.SimpleNamespace(chat_template=source, name_or_path=name, special_tokens_map={"bos_token": "<s>"})


@pytest.fixture(scope="module")
def smollm2_tokenizer(shared_data):
    from jaxcontam.models.gguf_file import read_gguf
    from jaxcontam.models.gguf_tokenizer import gguf_tokenizer

    path = shared_data / "smollm2_135m_instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return gguf_tokenizer(read_gguf(path).metadata, path)


@pytest.fixture
def short_limit(monkeypatch):
    monkeypatch.setattr(chat_render, "RENDER_SECONDS", 0.5)


@pytest.mark.parametrize(
    "messages, generation",
    [
        (USER, True),
        ([{"role": "system", "content": "Be brief."}, *USER], True),
        ([*USER, {"role": "assistant", "content": "hello"}], False),
    ],
)
def test_renders_as_transformers_does(smollm2_tokenizer, messages, generation):
    expected = smollm2_tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation)
    assert render_chat(smollm2_tokenizer, messages, add_generation_prompt=generation) == expected


def test_template_variables_and_helpers_are_transformers_ones():
    source = "{{ bos_token }}{{ messages|tojson }}{{ namespace(a=1).a }}{{ dict(b=2)['b'] }}"
    source += "{% generation %}g{% endgeneration %}"
    assert render_chat(template(source), USER) == '<s>[{"role": "user", "content": "hi"}]12g'


DOUBLING = "{% set ns = namespace(s='x') %}{% for i in range(40) %}"
HOSTILE = {
    "10^10 iterations": "{% for i in range(10**5) %}{% for j in range(10**5) %}{% endfor %}{% endfor %}",
    "10^10 iterations over lists": "{% set l = range(10**5)|list %}{% for a in l %}{% for b in l %}{% endfor %}"
    "{% endfor %}",
    "100 GB string": "{{ 'x' * 10**11 }}",
    "3 GB per prompt": "{% for i in range(3000) %}{{ 'x' * 1000000 }}{% endfor %}",
    "doubling concatenation": DOUBLING + "{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
    "doubling join": DOUBLING + "{% set ns.s = [ns.s, ns.s]|join %}{% endfor %}",
    "wide padding": "{{ 'x'.ljust(10**11) }}{{ 'x'|center(10**11) }}",
    "wide format": "{{ '{:>3000000000}'.format('x') }}",
    "wide percent format": "{{ '%3000000000s' % 'x' }}",
    "huge power": "{{ 7 ** (10**9) }}",
}


@pytest.mark.parametrize("source", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_templates_are_stopped_in_bounded_time_and_memory(source, short_limit):
    tracemalloc.start()
    try:
        with pytest.raises(ChatTemplateError, match="the chat template of hostile/model (was stopped|ran past)"):
            render_chat(template(source), USER)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 400 * 1024**2  # a few render limits' worth, never the gigabytes asked for


def test_the_time_limit_interrupts_and_never_fires_after_a_render(short_limit):
    with pytest.raises(ChatTemplateError, match="ran past its 0 s limit"):
        render_chat(template(HOSTILE["10^10 iterations"]), USER)
    assert render_chat(template(ECHO), USER) == "<user>hi<a>"
    time.sleep(1.0)  # past the deadline of the finished render: nothing is raised into this thread
    assert render_chat(template(ECHO), USER) == "<user>hi<a>"


@pytest.mark.parametrize(
    "source, message",
    [
        ("{{ ''.__class__.__mro__ }}", "SecurityError: access to attribute '__class__'"),
        ("{{ cycler.__init__.__globals__.os }}", "SecurityError"),
        ("{% for %}", "is not a valid template \\(line 1"),
        ("{{ messages[5].content }}", "UndefinedError"),
        ("{{ raise_exception('only user turns') }}", "refused the conversation: only user turns"),
    ],
)
def test_template_errors_are_jaxcontam_errors_naming_the_template(source, message):
    with pytest.raises(ChatTemplateError, match=f"the chat template of hostile/model {message}|{message}"):
        render_chat(template(source), USER)


def test_a_template_refusing_the_system_role_gets_it_in_the_user_turn():
    source = "{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
    assert chat_text(template(source + ECHO), "Q", "auto", system="S") == "<user>S\n\nQ<a>"
    with pytest.raises(ChatTemplateError, match="SecurityError"):  # a stopped render is not taken for a refusal
        chat_text(template("{{ ''.__class__.__mro__ }}"), "Q", "auto", system="S")


@pytest.mark.parametrize(
    "source, reason",
    [
        ("<user>a fixed prompt<a>", "every prompt renders alike"),
        ("{% for m in messages %}<{{ m['role'] }}>{{ m['content'][:10] }}{% endfor %}", "the message text is missing"),
    ],
)
def test_a_template_that_drops_the_prompt_is_refused(source, reason):
    with pytest.raises(JaxcontamError, match=f"does not write the user's message into its render \\({reason}"):
        chat_text(template(source, f"dropping/{reason}"), "What is 2+2?", "auto")
    assert chat_text(template(source, f"dropping/{reason}"), "What is 2+2?", "never") == "What is 2+2?"


def test_audit_with_a_hostile_template_ends_in_a_clear_error(tmp_path, capsys):
    model = tmp_path / "model"
    shutil.copytree(EXAMPLE_CONFIG.parent / "model", model)
    config = json.loads((model / "tokenizer_config.json").read_text())
    config["chat_template"] = "{{ ''.__class__.__mro__[1].__subclasses__() }}"
    (model / "tokenizer_config.json").write_text(json.dumps(config))
    out = tmp_path / "out"
    args = ["audit", "--config", EXAMPLE_CONFIG, "--model", model, "--limit", 1, "--out", out]
    code, printed = run_cli([*args, "--chat-template", "always"], capsys)
    assert code == 2, printed
    assert f"the chat template of {model} failed: SecurityError" in printed
    assert "Traceback" not in printed and not (out / "summary.json").exists()


def test_the_time_limit_holds_in_a_forked_child(short_limit, monkeypatch):
    """A forked child (a worker pool) has no copy of its parent's watchdog thread: it starts its own. Simulated
    (the watchdog thinks it is in another process): a real fork of a process running JAX may deadlock."""
    render_chat(template(ECHO), USER)  # the watchdog runs
    monkeypatch.setattr(chat_render._WATCHDOG, "_pid", -1)
    monkeypatch.setattr(chat_render._WATCHDOG, "_thread", chat_render._WATCHDOG._thread)
    with pytest.raises(ChatTemplateError, match="ran past"):
        render_chat(template(HOSTILE["10^10 iterations"]), USER)
