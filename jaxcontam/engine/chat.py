"""Chat turns for instruction-tuned models: wrap a prompt as a user turn and open the assistant's reply.

An instruct model answers as its users expect only inside its chat template (SmolLM2:
`<|im_start|>user ... <|im_end|>`, Llama 3: `<|start_header_id|>user ...`). Every prompt the
audit builds (answering, P(True) judging, rephrasing) goes through `chat_text`: with chat on it
becomes one user turn followed by the opened assistant turn and an optional start of the reply
(`assistant_prefix`, e.g. a judge's "The proposed answer is: ("); with chat off it is the plain
prompt followed by the same prefix. The rendered text already holds the template's special
tokens (BOS included where the template writes it), so it is encoded without adding any.

Modes: "auto" uses the template when the tokenizer has one, "never" never, "always" requires one.
Templates render in a box with time and size limits (`jaxcontam.chat_render`), and one that drops the user's
message or renders every prompt alike is refused (`check_writes_prompt`).
"""

from __future__ import annotations

import typing
from typing import Literal

from jaxcontam.chat_render import ChatTemplateError, render_chat, template_name
from jaxcontam.errors import JaxcontamError

ChatMode = Literal["auto", "never", "always"]
CHAT_MODES: tuple[ChatMode, ...] = typing.get_args(ChatMode)


def check_chat_mode(mode: str) -> str:
    if mode not in CHAT_MODES:
        raise JaxcontamError(f"chat_template={mode!r} is unknown: use one of {', '.join(CHAT_MODES)}")
    return mode


def uses_chat(tokenizer, mode: str) -> bool:
    """Whether prompts for this tokenizer are wrapped as chat turns under `mode`."""
    has_template = bool(getattr(tokenizer, "chat_template", None))
    if check_chat_mode(mode) == "always" and not has_template:
        raise JaxcontamError(
            "chat_template='always' but the model's tokenizer has no chat template: "
            "use 'auto' or 'never', or give a tokenizer with a template"
        )
    if mode == "never" or not has_template:
        return False
    check_writes_prompt(tokenizer)
    return True


_PROBES = ("which river is the longest on earth", "how many legs does a spider have")  # two distinct user turns
_WRITES_PROMPT: set[str] = set()  # templates seen to write the user's message


def check_writes_prompt(tokenizer) -> None:
    """Refuse a chat template that drops the user's message or renders every prompt alike (checked once per
    template): every prompt would reach the model as the same text, and PaCoST would compare nothing with
    nothing and report "not detected" where it tested nothing."""
    source = str(tokenizer.chat_template)
    if source in _WRITES_PROMPT:
        return
    first, second = (render_chat(tokenizer, [{"role": "user", "content": probe}]) for probe in _PROBES)
    if first == second or _PROBES[0] not in first or _PROBES[1] not in second:
        raise JaxcontamError(
            f"{template_name(tokenizer)} does not write the user's message into its render "
            f"({'every prompt renders alike' if first == second else 'the message text is missing'}: "
            f"{first[:80]!r}); use chat_template = 'never' ([pacost], --chat-template never) or a tokenizer whose "
            "template writes the prompt"
        )
    _WRITES_PROMPT.add(source)


def chat_text(tokenizer, prompt: str, mode: str, assistant_prefix: str = "", system: str | None = None) -> str:
    """`prompt` as the model under `mode` sees it, ending where the model's reply starts (after `assistant_prefix`).

    `system`: a system message; a template that refuses the system role gets it at the head of the user turn
    (where Llama 2's own template writes it), and a plain prompt starts with it, a blank line before `prompt`.
    """
    if not uses_chat(tokenizer, mode):
        return (f"{system}\n\n{prompt}" if system else prompt) + assistant_prefix
    user = [{"role": "user", "content": prompt}]
    if system:
        try:
            return render_chat(tokenizer, [{"role": "system", "content": system}] + user) + assistant_prefix
        except ChatTemplateError as error:  # e.g. Gemma's "System role not supported"
            if not error.raised_by_template:
                raise
            user = [{"role": "user", "content": f"{system}\n\n{prompt}"}]
    return render_chat(tokenizer, user) + assistant_prefix


def chat_prompt(tokenizer, prompt: str, mode: str) -> str:
    """A prompt as the model sees it; its last line opens the answer ("Answer:", "The proposed answer is: (").

    As a chat the lines before the last are the user's turn and the last line starts the assistant's reply;
    a one-line prompt is the user's turn whole. Without chat the prompt is unchanged.
    """
    request, newline, cue = prompt.rpartition("\n")
    if not newline:
        request, cue = prompt, ""
    return chat_text(tokenizer, request, mode, cue) if uses_chat(tokenizer, mode) else prompt


def encode_chat(tokenizer, text: str, mode: str) -> list[int]:
    """Token ids of a `chat_text` result: no special tokens added to a rendered chat (it has its own)."""
    if uses_chat(tokenizer, mode):
        return list(tokenizer.encode(text, add_special_tokens=False))
    return list(tokenizer.encode(text))
