"""Every token id that ends a model's turn, so generation stops on all of them, not only the config's first.

Instruct models end a reply with a token that the config may not list: SmolLM2 with `<|im_end|>`, Llama 3 with
`<|eot_id|>` while its config also names `<|end_of_text|>`. The ids are collected from config.json (already in
the spec), generation_config.json, the tokenizer's eos token and the token the chat template writes right after
an assistant message.
"""

from __future__ import annotations

import dataclasses
import pathlib

from jaxcontam.chat_render import ChatTemplateError, render_chat
from jaxcontam.models.config import eos_field
from jaxcontam.models.config_values import checked_token_ids, read_json_object
from jaxcontam.models.spec import ModelSpec

_PROBE = "jaxcontam-end-of-turn-probe"


def generation_config_ids(directory: pathlib.Path) -> tuple[int, ...]:
    """The eos ids of generation_config.json beside the weights (none when there is no such file)."""
    path = directory / "generation_config.json"
    if not path.is_file():
        return ()
    config = read_json_object(path, "fix or delete the file")
    return checked_token_ids(str(path), "eos_token_id", config.get("eos_token_id"))


def end_of_turn_id(tokenizer) -> int | None:
    """The special token the chat template writes right after an assistant message, or None.

    The template is rendered for a one-exchange conversation and the text following the assistant's reply is
    matched against the tokenizer's special tokens (the longest match wins).
    """
    template = getattr(tokenizer, "chat_template", None)
    if not isinstance(template, str):
        return None
    conversation = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": _PROBE}]
    try:
        text = render_chat(tokenizer, conversation, add_generation_prompt=False)
    except ChatTemplateError:  # refused (e.g. insists on a system turn) or stopped: no answer from it
        return None
    if not isinstance(text, str) or _PROBE not in text:
        return None
    after = text.split(_PROBE, 1)[1].lstrip()
    specials = {
        token.content: token_id
        for token_id, token in tokenizer.added_tokens_decoder.items()
        if token.special and token.content
    }
    matches = [content for content in specials if after.startswith(content)]
    return specials[max(matches, key=len)] if matches else None


def tokenizer_stop_ids(tokenizer) -> tuple[int, ...]:
    """The tokenizer's eos id and the chat template's end-of-turn id (either may be absent)."""
    if tokenizer is None:
        return ()
    ids = [getattr(tokenizer, "eos_token_id", None), end_of_turn_id(tokenizer)]
    return tuple(int(i) for i in ids if i is not None)


def with_stop_ids(spec: ModelSpec, *groups: tuple[int, ...]) -> ModelSpec:
    """`spec` whose `eos_token_id` also carries every id in `groups` (the config's ids stay first)."""
    ids = spec.eos_token_ids + tuple(i for group in groups for i in group)
    return dataclasses.replace(spec, eos_token_id=eos_field(ids))
