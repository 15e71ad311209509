"""The text of a benchmark item that n-gram matching scores: the item as the model sees it.

An item's text is ONE segment: the benchmark's solved text (`Benchmark.solved_text`: the prompt
followed by the gold answer as the model reads them, one space between: COPA's second space is
lm-eval's request's, not the item's) without the prompt's header lines.
  - Kept: everything on the item's own lines, labels included ("Question: ... Answer: <solution>",
    COPA's premise with its "because"/"therefore" connector and the lower-cased choice, MMLU's
    question, lettered options and "Answer: B"). The text stays contiguous, so a verbatim copy of what
    the model was shown holds every n-gram of it and scores 1.0 on all four metrics, whatever the
    lengths of its fields (a per-field text shorter than n could never match).
  - Dropped: header lines that precede the item on lines of their own and are the same for every
    item of a (sub)benchmark (MMLU's "The following are multiple choice questions (with answers)
    about <subject>."): their n-grams would match any corpus holding another item of the benchmark
    and inflate clean items' scores. The header is found by rendering the item's prompt with
    placeholders in place of its question, context and choices: the literal text before the first
    placeholder, up to its last newline.
  - Left as is, and said here: a constant instruction line inside the prompt (WinoGrande's "Which
    option fills the blank _? Answer:") still gives every item the same few n-grams; a corpus holding
    one WinoGrande item in our format therefore lifts every item's TOKEN-MATCH slightly.

The text is encoded on its own, so its first token carries no leading space: with a byte-level
BPE, a copy that follows a space in the corpus encodes its first token differently, and only the
item's first n-gram can miss because of it (a copy at the start of a line or document matches whole).
An item text shorter than n units holds no n-gram and scores 0.

`scope="fields"` also scores the question side (context and question as the prompt shows them, template
text left out) and the answer side (the gold answer as shown: the continuation, or the option's text
where the continuation is a bare letter; GSM8K's full solution) each as its own text with its own
denominator, ConTAM's answer-vs-question analysis; a side shorter than n units scores 0 (GPT-2 tokens,
n = 8: 760 of 1,838 PIQA questions, 8,263 of 14,042 MMLU answers, every WinoGrande answer).
"""

from __future__ import annotations

import dataclasses
import re

SCOPES = ("item", "fields")
FIELD_NAMES = ("question", "answer")
_SLOT = re.compile("\x00(\\d+)\x00")


def _slot(index: int) -> str:
    return f"\x00{index}\x00"


@dataclasses.dataclass(frozen=True)
class ItemText:
    """An item as the model sees it (`whole`), and its question and answer sides for per-field scoring."""

    whole: str
    question: str
    answer: str

    def texts(self, scope: str) -> dict[str, str]:
        """{column suffix: text} to score: "" is the whole item; "fields" adds "question" and "answer"."""
        texts = {"": self.whole}
        if scope == "fields":
            texts |= {"question": self.question, "answer": self.answer}
        return texts


def _layout(benchmark, item) -> list[str]:
    """The item's prompt rendered with placeholders: literal, slot id, literal, ..., literal."""
    probe = dataclasses.replace(
        item,
        question=_slot(0),
        context=_slot(1) if item.context else None,
        choices=tuple(_slot(2 + i) for i in range(len(item.choices))) if item.choices is not None else None,
    )
    return _SLOT.split(benchmark.prompt(probe))


def prompt_header(benchmark, item) -> str:
    """The prompt's header lines: the literal text before the item's first field, up to its last newline ("" if
    the item starts the prompt). Also what PaCoST's judges are not shown (`detect.pacost.records.judge_question`)."""
    header = _layout(benchmark, item)[0]
    return header[: header.rfind("\n") + 1]


def shown_item(benchmark, item) -> str:
    """The solved text without the prompt's header lines."""
    solved = benchmark.solved_text(item)
    header = prompt_header(benchmark, item)
    return solved[len(header) :] if header and solved.startswith(header) else solved


def shown_question(benchmark, item) -> str:
    """The item's context and question as its prompt shows them, without the prompt's template text."""
    layout = _layout(benchmark, item)
    literals, slots = layout[0::2], [int(s) for s in layout[1::2]]
    pattern = "".join(re.escape(lit) + ("(.*?)" if k < len(slots) else "") for k, lit in enumerate(literals))
    match = re.fullmatch(pattern, benchmark.prompt(item), flags=re.DOTALL)
    if match is None:
        parts = [item.context, item.question]
    else:
        first = {}
        for slot, text in zip(slots, match.groups()):
            first.setdefault(slot, text)
        parts = [first[slot] for slot in dict.fromkeys(slots) if slot in (0, 1)]
    return " ".join(p.strip() for p in parts if p and p.strip())


def shown_answer(benchmark, item) -> str:
    """The gold answer as the model sees it: the continuation, or the option text where that is a bare label."""
    if item.choices is not None:
        continuation = benchmark.continuation(item, item.answer).strip()
        option = item.answer_text.strip()
        return continuation if _squeezed(option) in _squeezed(continuation) else option
    prompt, solved = benchmark.prompt(item), benchmark.solved_text(item)
    return (solved[len(prompt) :] if solved.startswith(prompt) else item.answer_text).strip()


def _squeezed(text: str) -> str:
    return " ".join(text.casefold().split())


def item_text(benchmark, item) -> ItemText:
    """The question and answer sides of `item` of `benchmark` (see the module docstring)."""
    return ItemText(shown_item(benchmark, item), shown_question(benchmark, item), shown_answer(benchmark, item))
