"""One item schema for every benchmark.

An `Item` is immutable and hashable by id; a `Benchmark` is a named, ordered
sequence of items that knows how to show an item to a model (`prompt`) and how
to score a model's answer (`score`).
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

from jaxcontam.errors import DataError

TaskKind = Literal["multiple_choice", "generative"]


@dataclasses.dataclass(frozen=True)
class Item:
    """One benchmark item.

    `answer` is the gold choice index for multiple choice and the gold string
    for generative items. `paraphrases` are alternative phrasings of `question`
    (PaCoST rephrasings) attached by id from a paraphrase source.
    """

    id: str
    benchmark: str
    question: str
    answer: int | str
    choices: tuple[str, ...] | None = None
    context: str | None = None
    paraphrases: tuple[str, ...] = ()
    meta: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.id, str) or not self.id:
            raise DataError(f"item in {self.benchmark!r} has an empty or non-string id: {self.id!r}")
        if not isinstance(self.question, str) or not self.question.strip():
            raise DataError(f"item {self.id!r} of {self.benchmark!r} has an empty question")
        if self.choices is not None:
            object.__setattr__(self, "choices", tuple(self.choices))
            if not isinstance(self.answer, int) or isinstance(self.answer, bool):
                raise DataError(
                    f"item {self.id!r} of {self.benchmark!r}: multiple-choice answer must be a choice index, "
                    f"got {self.answer!r}"
                )
            if not 0 <= self.answer < len(self.choices):
                raise DataError(
                    f"item {self.id!r} of {self.benchmark!r}: answer index {self.answer} is out of range "
                    f"for {len(self.choices)} choices"
                )
        object.__setattr__(self, "paraphrases", tuple(self.paraphrases))
        object.__setattr__(self, "meta", types.MappingProxyType(dict(self.meta)))

    @property
    def kind(self) -> TaskKind:
        return "multiple_choice" if self.choices is not None else "generative"

    @property
    def answer_text(self) -> str:
        """The gold answer as text (the chosen option for multiple choice)."""
        if self.choices is not None:
            assert isinstance(self.answer, int)  # __post_init__: a multiple-choice answer is an index
            return self.choices[self.answer]
        return str(self.answer)

    def with_paraphrases(self, paraphrases: Sequence[str]) -> Item:
        return dataclasses.replace(self, paraphrases=tuple(self.paraphrases) + tuple(paraphrases))

    def __hash__(self) -> int:
        return hash((self.benchmark, self.id))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (lists for tuples, a plain dict for meta)."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["meta"] = dict(self.meta)
        d["choices"] = list(self.choices) if self.choices is not None else None
        d["paraphrases"] = list(self.paraphrases)
        return d


def default_prompt(item: Item) -> str:
    """Verbalise an item the way lm-eval-harness style zero-shot prompts do."""
    parts = []
    if item.context:
        parts.append(item.context.strip())
    parts.append(f"Question: {item.question.strip()}")
    if item.choices is not None:
        parts.extend(f"{chr(ord('A') + i)}. {c}" for i, c in enumerate(item.choices))
    parts.append("Answer:")
    return "\n".join(parts)


def choice_of(item: Item, index: int) -> str:
    """Choice `index` of a multiple-choice item (a generative item has none)."""
    if item.choices is None:
        raise DataError(f"item {item.id!r} of {item.benchmark!r} is generative: it has no choice {index}")
    return item.choices[index]


def default_continuation(item: Item, index: int) -> str:
    """The text scored after the prompt for choice `index`: a space, then the choice (lm-eval-harness)."""
    return " " + choice_of(item, index)


@dataclasses.dataclass(frozen=True)
class Benchmark:
    """A named, ordered sequence of items with a prompt format and a scorer.

    `score(item, prediction)` returns 1.0 for a correct answer and 0.0 otherwise;
    `prediction` is a choice index for multiple choice and generated text for
    generative items (normalised by `normalize_answer` before exact match).
    `continuation(item, i)` is the text whose likelihood after the prompt picks choice i.
    """

    name: str
    split: str
    items: tuple[Item, ...]
    prompt_fn: Callable[[Item], str] = default_prompt
    choice_fn: Callable[[Item, int], str] = default_continuation
    normalize_answer: Callable[[str], str] | None = None
    scorer: Callable[[Item, int | str], float] | None = None  # overrides the default scoring when set

    def __post_init__(self):
        object.__setattr__(self, "items", tuple(self.items))
        seen: dict[str, int] = {}
        for position, item in enumerate(self.items):
            if item.id in seen:
                raise DataError(
                    f"benchmark {self.name!r} ({self.split}): duplicate item id {item.id!r} at positions "
                    f"{seen[item.id]} and {position}; ids must be unique"
                )
            seen[item.id] = position

    def __len__(self) -> int:
        return len(self.items)

    @property
    def kind(self) -> TaskKind | None:
        """The task kind shared by all items (None for an empty or mixed benchmark)."""
        kinds: set[TaskKind] = {item.kind for item in self.items}
        return kinds.pop() if len(kinds) == 1 else None

    def __iter__(self) -> Iterator[Item]:
        return iter(self.items)

    def __getitem__(self, index: int) -> Item:
        return self.items[index]

    def by_id(self) -> dict[str, Item]:
        return {item.id: item for item in self.items}

    def prompt(self, item: Item, question: str | None = None) -> str:
        """The text shown to the model; `question` swaps in a paraphrase."""
        if question is not None:
            item = dataclasses.replace(item, question=question)
        return self.prompt_fn(item)

    def continuation(self, item: Item, index: int) -> str:
        """The text scored after the prompt when asking how likely choice `index` is."""
        return self.choice_fn(item, index)

    def choice_text(self, item: Item, index: int) -> str:
        """Choice `index` as lm-eval's `doc_to_choice` gives it: the continuation without lm-eval's target
        delimiter (one leading space; COPA's choices keep a space of their own). `acc_norm` divides by its
        length in characters."""
        return self.continuation(item, index).removeprefix(" ")

    def solved_text(self, item: Item) -> str:
        """The item as one text: the prompt followed by the gold answer (the full solution when `meta["solution"]`
        has one). A choice follows after one space, as the item reads: COPA's scored continuation starts with two
        (lm-eval's target delimiter and the choice's own), an artefact of the request, not of the item's text,
        which n-gram search, the likelihood detectors and contamination injection work on."""
        if item.choices is not None:
            assert isinstance(item.answer, int)  # Item.__post_init__: a multiple-choice answer is an index
            answer = self.continuation(item, item.answer)
            return self.prompt(item) + (" " + answer.lstrip(" ") if answer.startswith(" ") else answer)
        return self.prompt(item) + " " + str(item.meta.get("solution", item.answer_text))

    def score(self, item: Item, prediction: int | str) -> float:
        if self.scorer is not None:
            return self.scorer(item, prediction)
        if item.choices is not None:
            return float(int(prediction) == item.answer)
        normalize = self.normalize_answer or normalize_text
        return float(normalize(str(prediction)) == normalize(str(item.answer)))

    def replace_items(self, items: Sequence[Item]) -> Benchmark:
        return dataclasses.replace(self, items=tuple(items))


def normalize_text(text: str) -> str:
    """SQuAD-style normalisation: lowercase, drop punctuation and articles, squeeze whitespace."""
    import re
    import string

    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())
