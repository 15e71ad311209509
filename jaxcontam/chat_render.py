"""Chat templates rendered in a box: jinja2's immutable sandbox plus a time limit and a size limit.

A chat template is code from whoever published the tokenizer. jinja2's `ImmutableSandboxedEnvironment` (the one
transformers renders with, set up the same way here: trim_blocks, lstrip_blocks, loop controls, the `generation`
tag, tojson, raise_exception, strftime_now, dict, namespace) stops attribute escapes; on top of it a render

- ends after `RENDER_SECONDS`: a watchdog thread raises `RenderTimeout` inside the rendering thread at its next
  bytecode (CPython's `PyThreadState_SetAsyncExc`), so `{% for i in range(10**5) %}{% for j in range(10**5) %}`
  stops within the limit whatever the loop body does;
- may not build or write more than `RENDER_CHARS` characters: `*`, `+`, `~` and `%` are checked before they run (so
  `{{ 'x' * 10**11 }}` is refused before any memory is taken, and jinja cannot fold it at compile time), `**` may not
  build a number beyond `POWER_BITS` bits, a str method or filter may not be given a count above `ARGUMENT_LIMIT`
  (`'x'.ljust(10**11)`), a format string may not ask for a width of 8 digits, every call's result is measured, and
  the output is counted as it streams.

Every failure, the template's own (`raise_exception`, a syntax error, a `SecurityError`) included, is a
`ChatTemplateError` naming the template; a template compiles once per text (`functools.lru_cache`), so a normal
render costs what transformers' does.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import re
import threading
import time
from collections.abc import Callable
from datetime import datetime

from jaxcontam.errors import JaxcontamError

RENDER_SECONDS = 5.0  # a render of a few messages takes well under a millisecond
RENDER_CHARS = 16 * 1024 * 1024  # characters a render may build or write (a few million tokens: beyond any context)
ARGUMENT_LIMIT = 1 << 16  # the largest count or width a str method or filter may be given
POWER_BITS = 4096  # the largest number `**` may build
_WIDE_FORMAT = re.compile(r"\d{8,}")  # a format width or precision of 8 digits or more


class ChatTemplateError(JaxcontamError):
    """A chat template that failed or was stopped; `raised_by_template`: it refused the conversation itself
    (`raise_exception`, e.g. Gemma's "System role not supported")."""

    def __init__(self, message: str, raised_by_template: bool = False):
        super().__init__(message)
        self.raised_by_template = raised_by_template


class RenderTimeout(BaseException):
    """Raised inside a render that ran past its time limit (a BaseException: no template code can catch it)."""


class _Watchdog:
    """One daemon thread that stops renders past their deadline by raising `RenderTimeout` in their thread."""

    def __init__(self):
        self._lock = threading.Condition()
        self._armed: dict[int, float] = {}  # thread id -> deadline
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def arm(self, seconds: float) -> None:
        with self._lock:
            self._armed[threading.get_ident()] = time.monotonic() + seconds
            if self._thread is None or self._pid != os.getpid():  # a forked child has no watchdog thread: start one
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._watch, name="jaxcontam-template-watchdog", daemon=True)
                self._thread.start()
            self._lock.notify()

    def disarm(self) -> None:
        ident = threading.get_ident()
        with self._lock:
            if self._armed.pop(ident, None) is None:  # fired: drop the exception if it has not been raised yet
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), None)

    def _watch(self) -> None:
        with self._lock:
            while True:
                now = time.monotonic()
                for ident in [i for i, deadline in self._armed.items() if deadline <= now]:
                    del self._armed[ident]  # fired once: `disarm` sees it gone
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(RenderTimeout))
                soonest = min(self._armed.values(), default=None)
                self._lock.wait(None if soonest is None else max(soonest - now, 0.001))


_WATCHDOG = _Watchdog()


class _TooLarge(Exception):
    """A render that would build more than it may (its message says what)."""


def _refuse_large(value) -> None:
    if isinstance(value, (str, list, tuple, dict)) and len(value) > RENDER_CHARS:
        raise _TooLarge(f"a value of {len(value):,} items or characters, more than {RENDER_CHARS:,}")


def _check_arguments(args, kwargs) -> None:
    for value in (*args, *kwargs.values()):
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > ARGUMENT_LIMIT:
            raise _TooLarge(f"{value:,} given to a string method or filter, more than {ARGUMENT_LIMIT:,}")


def _check_format(text: str) -> None:
    if _WIDE_FORMAT.search(text):
        raise _TooLarge(f"the format {text[:40]!r} asks for a width of 8 digits or more")


def _bounded_join(pieces) -> str:
    """jinja's `str_join` (the `~` operator), refusing a result above `RENDER_CHARS` before building it."""
    parts = [str(piece) for piece in pieces]
    if sum(map(len, parts)) > RENDER_CHARS:
        raise _TooLarge(f"'~' would build {sum(map(len, parts)):,} characters")
    return "".join(parts)


def _sized(operator: str, left, right) -> int:
    """The length `left operator right` would have (0 for numbers)."""
    if operator == "*":
        for seq, count in ((left, right), (right, left)):
            if isinstance(seq, (str, list, tuple)) and isinstance(count, int):
                return len(seq) * max(count, 0)
    if operator == "+" and isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple)):
        return len(left) + len(right)
    return 0


def _environment():
    import jinja2
    import jinja2.ext
    import jinja2.nodes
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class BoundedSandbox(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**", "+", "%"})  # intercepted ops are never folded at compile time

        def call_binop(self, context, operator, left, right):
            if _sized(operator, left, right) > RENDER_CHARS:
                raise _TooLarge(f"{operator!r} would build {_sized(operator, left, right):,} items or characters")
            if operator == "**" and isinstance(left, int) and isinstance(right, int) and abs(left) > 1:
                if right * abs(left).bit_length() > POWER_BITS:
                    raise _TooLarge(f"{left} ** {right} would have more than {POWER_BITS} bits")
            if operator == "%" and isinstance(left, str):
                _check_format(left)
            result = super().call_binop(context, operator, left, right)
            _refuse_large(result)
            return result

        def wrap_str_format(self, value):
            owner = getattr(value, "__self__", None)
            if isinstance(owner, str) and getattr(value, "__name__", "") in ("format", "format_map"):
                _check_format(owner)
            return super().wrap_str_format(value)

        def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 (jinja's own signature)
            if isinstance(getattr(__obj, "__self__", None), str):  # a str method: counts and widths bounded
                _check_arguments(args, kwargs)
            result = super().call(__context, __obj, *args, **kwargs)
            _refuse_large(result)
            return result

    class GenerationTag(jinja2.ext.Extension):
        """transformers' `{% generation %}` block (it marks the assistant's tokens): renders its body."""

        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

        def _body(self, caller):
            return caller()

    def raise_exception(message):
        raise _RaisedByTemplate(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    class TemplateDict:
        def __call__(self, *args, **kwargs):
            return dict(*args, **kwargs)

        def fromkeys(self, *args, **kwargs):
            return dict.fromkeys(*args, **kwargs)

    class TemplateNamespace(jinja2.utils.Namespace):
        def __init__(*args, **kwargs):  # jinja's own signature trick: namespace(self=...) works
            self, args = args[0], args[1:]
            attrs = dict(*args, **kwargs)
            for name in attrs:
                TemplateNamespace._check_name(name)
            jinja2.utils.Namespace.__init__(self, attrs)

        def __setitem__(self, name, value):
            TemplateNamespace._check_name(name)
            jinja2.utils.Namespace.__setitem__(self, name, value)

        @staticmethod
        def _check_name(name):
            if isinstance(name, str) and name.startswith("_"):
                raise jinja2.exceptions.SecurityError(f"a namespace cannot hold underscore attributes ({name!r})")

    class _RaisedByTemplate(jinja2.exceptions.TemplateError):
        pass

    env = BoundedSandbox(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters = {name: _bounded_filter(name, f) for name, f in env.filters.items()}
    env.filters["tojson"] = _bounded_filter("tojson", tojson)
    env.globals.update(
        raise_exception=raise_exception,
        strftime_now=lambda format: datetime.now().strftime(format),
        dict=TemplateDict(),
        namespace=TemplateNamespace,
    )
    return env, _RaisedByTemplate


def _bounded_filter(name: str, function: Callable) -> Callable:
    """`function` (the jinja filter `name`) refusing counts above `ARGUMENT_LIMIT`, wide formats and results above
    `RENDER_CHARS`."""

    @functools.wraps(function)  # keeps jinja's pass_context / pass_eval_context marks
    def bounded(*args, **kwargs):
        _check_arguments(args[1:], kwargs)
        if name == "format":
            _check_format(str(next((a for a in args if isinstance(a, str)), "")))
        result = function(*args, **kwargs)
        _refuse_large(result)
        return result

    return bounded


@functools.cache
def _sandbox():
    return _environment()


@functools.lru_cache(maxsize=32)
def _compiled(source: str):
    template = _sandbox()[0].from_string(source)
    namespace = template.root_render_func.__globals__  # the compiled module's: jinja's `~` calls its str_join
    namespace["str_join"] = namespace["markup_join"] = _bounded_join
    return template


def template_name(tokenizer) -> str:
    """How an error names a tokenizer's chat template."""
    return f"the chat template of {getattr(tokenizer, 'name_or_path', None) or type(tokenizer).__name__}"


CONTINUE_TAG = "CONTINUE_FINAL_MESSAGE_TAG "  # transformers' marker for the end of the message to continue


def _template_source(tokenizer) -> str:
    return tokenizer.get_chat_template() if hasattr(tokenizer, "get_chat_template") else tokenizer.chat_template


def render_chat(
    tokenizer, messages: list[dict], *, add_generation_prompt: bool = True, continue_final_message: bool = False
) -> str:
    """`messages` through the tokenizer's chat template as `tokenizer.apply_chat_template(messages, tokenize=False,
    add_generation_prompt=..., continue_final_message=...)` renders them, inside the box (module docstring).

    `continue_final_message` (transformers' semantics): the render ends just after the final message's text, so a
    model continues that message (lm-eval's prefilled answers): `CONTINUE_TAG` is appended to the text, the render
    cut where it appears (and stripped of trailing whitespace when the template trimmed the tag's space)."""
    if continue_final_message and add_generation_prompt:
        raise ValueError("continue_final_message and add_generation_prompt exclude each other")
    if not continue_final_message:
        return _render(tokenizer, messages, add_generation_prompt)
    name = template_name(tokenizer)
    tagged, final_text = _tag_final_message(name, tokenizer, messages)
    rendered = _render(tokenizer, tagged, False)
    if final_text.strip() not in rendered or CONTINUE_TAG.strip() not in rendered:
        raise ChatTemplateError(
            f"{name} does not write the final message into its render (it drops or rewrites part of "
            f"{final_text.strip()[:80]!r}), so the conversation cannot be continued from it: use a tokenizer whose "
            "template writes each message's content as given"
        )
    tag_at = rendered.rindex(CONTINUE_TAG.strip())
    if rendered[tag_at : tag_at + len(CONTINUE_TAG)] == CONTINUE_TAG:  # the template kept the tag's space
        return rendered[:tag_at]
    return rendered[:tag_at].rstrip()  # the template trimmed trailing whitespace: so is the message's


def _tag_final_message(name: str, tokenizer, messages: list[dict]) -> tuple[list[dict], str]:
    """A copy of `messages` whose final message's text (its `content`, or that content's last text block) ends in
    `CONTINUE_TAG`, and that text untagged; the caller's messages are left as they were."""
    source = _template_source(tokenizer)
    if not messages or messages[-1].get("content") is None:
        raise ChatTemplateError(f"there is no final message with content to continue through {name}")
    if "content" not in source:
        raise ChatTemplateError(f"{name} never reads a message's 'content', so its final message cannot be continued")
    final = dict(messages[-1])
    content = final["content"]
    if isinstance(content, (list, tuple)):
        blocks = [dict(block) if isinstance(block, dict) else block for block in content]
        text_at = next((i for i in reversed(range(len(blocks))) if "text" in blocks[i]), None)
        if text_at is None:
            raise ChatTemplateError(f"the final message given to {name} has no text block to continue")
        final_text = blocks[text_at]["text"]
        blocks[text_at]["text"] = final_text + CONTINUE_TAG
        final["content"] = blocks
    elif isinstance(content, str):
        final_text = content
        final["content"] = content + CONTINUE_TAG
    else:
        raise ChatTemplateError(f"the final message given to {name} has {type(content).__name__} content, not text")
    return [*messages[:-1], final], final_text


def _render(tokenizer, messages: list[dict], add_generation_prompt: bool) -> str:
    """The box itself: one render of `messages`, every failure a `ChatTemplateError` naming the template."""
    import jinja2

    name = template_name(tokenizer)
    source = _template_source(tokenizer)
    try:
        template = _compiled(source)
    except jinja2.TemplateSyntaxError as error:
        raise ChatTemplateError(f"{name} is not a valid template (line {error.lineno}: {error.message})") from None
    variables = dict(getattr(tokenizer, "special_tokens_map", {}) or {})
    variables.update(messages=messages, tools=None, documents=None, add_generation_prompt=add_generation_prompt)
    pieces, size = [], 0
    try:
        try:
            _WATCHDOG.arm(RENDER_SECONDS)
            for piece in template.generate(**variables):
                size += len(piece)
                if size > RENDER_CHARS:
                    raise _TooLarge(f"an output of more than {RENDER_CHARS:,} characters")
                pieces.append(piece)
        finally:
            _WATCHDOG.disarm()
    except RenderTimeout:
        raise ChatTemplateError(
            f"{name} ran past its {RENDER_SECONDS:.0f} s limit on one prompt (a loop that does not end): use "
            "chat_template = 'never' ([pacost], --chat-template never) or a tokenizer with a sound template"
        ) from None
    except (_TooLarge, MemoryError, OverflowError, RecursionError) as error:
        detail = str(error) if isinstance(error, _TooLarge) else type(error).__name__
        raise ChatTemplateError(
            f"{name} was stopped on one prompt ({detail}); use chat_template = 'never' ([pacost], "
            "--chat-template never) or a tokenizer with a sound template"
        ) from None
    except _sandbox()[1] as error:  # the template's raise_exception
        raise ChatTemplateError(f"{name} refused the conversation: {error}", raised_by_template=True) from None
    except jinja2.TemplateError as error:  # SecurityError, UndefinedError, ...
        raise ChatTemplateError(f"{name} failed: {type(error).__name__}: {error}") from None
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, ZeroDivisionError) as error:
        raise ChatTemplateError(f"{name} failed: {type(error).__name__}: {error}") from None
    return "".join(pieces)
