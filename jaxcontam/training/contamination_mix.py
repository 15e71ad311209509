"""What `jaxcontam contaminate` trains on: general text with benchmark items mixed in at a known dose.

Items are the first N of each benchmark (as `jaxcontam audit` selects them, so ids match its ground truth);
round(F x N) of them are drawn per benchmark. When a built-in paraphrase source covers the benchmark's split
the draw is among the items it rephrases, whatever the form, so arms that differ only in form or copies
contaminate the same items. Each contaminated item is written `copies` times in one form:

- `verbatim`: the item as the audit shows it (`Benchmark.prompt`) followed by the gold answer (the
  multiple-choice continuation, or the full solution); for a model with a chat template, the prompt as the
  audit's user turn and the answer as the assistant's reply, closed as the template closes a turn;
- `fields`: the dataset row as it is published: one JSON line of the item's fields (question, context, choices,
  the answer as the dataset stores it: the gold index, or the solution text), metadata such as MMLU's subject;
- `rephrased`: the verbatim form with the question replaced by the item's first paraphrase.

General text is the first T tokens of the corpus (whole documents: at least T), cut at line breaks into
documents of at most `MAX_DOCUMENT_CHARS` characters. Every document is stored as the text that was trained
on, and its token ids are `encode_document(tokenizer, text, chat)` of that text, so the stored corpus
reproduces the training data.
"""

from __future__ import annotations

import dataclasses
import json
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from jaxcontam.chat_render import render_chat
from jaxcontam.data import attach_paraphrases, load_paraphrases
from jaxcontam.data.paraphrases import SOURCE_SPLITS
from jaxcontam.data.roots import DEFAULT_ROOTS
from jaxcontam.engine.chat import chat_prompt, uses_chat
from jaxcontam.errors import DataError
from jaxcontam.training.injection import choose_contaminated

FORMS = ("verbatim", "fields", "rephrased")
MAX_DOCUMENT_CHARS = 16_000  # long enough that packing cuts most of a document into full rows


@dataclasses.dataclass(frozen=True)
class TrainingDocument:
    """One document of the training mix: its text, whether it is a rendered chat (it carries its own special
    tokens), and the benchmark item it copies (None for general text)."""

    text: str
    chat: bool = False
    item_id: str | None = None

    def to_row(self) -> dict:
        return {"text": self.text, "chat": self.chat, "item": self.item_id}


def encode_document(tokenizer, text: str, chat: bool) -> list[int]:
    """The ids a document trains on: a rendered chat as it is (its own special tokens), other text with the
    tokenizer's default ones; then EOS, ending the document as pretraining data does."""
    ids = list(tokenizer.encode(text, add_special_tokens=not chat))
    eos = tokenizer.eos_token_id
    if eos is not None and (not ids or ids[-1] != eos):
        ids.append(eos)
    return ids


def paraphrase_source(benchmark) -> str | None:
    """The built-in paraphrase source that covers this benchmark's split, if any."""
    return next(
        (source for source, splits in SOURCE_SPLITS.items() if (benchmark.name, benchmark.split) in splits), None
    )


def with_paraphrases(benchmark, roots: Sequence[Path] = DEFAULT_ROOTS):
    """The benchmark with its built-in paraphrases (read under the data `roots`) attached, unchanged when no
    source covers it."""
    source = paraphrase_source(benchmark)
    if source is None:
        return benchmark
    return attach_paraphrases(benchmark, load_paraphrases(source, benchmark, roots=roots))


def draw_contaminated(benchmark, fraction: float, seed: int) -> np.ndarray:
    """bool [N]: round(fraction x N) items, drawn among those with a paraphrase when the benchmark has a source."""
    eligible = (
        np.array([bool(item.paraphrases) for item in benchmark])
        if paraphrase_source(benchmark)
        else np.ones(len(benchmark), bool)
    )
    wanted = int(round(fraction * len(benchmark)))
    if wanted > eligible.sum():
        raise DataError(
            f"{benchmark.name} ({benchmark.split}): --fraction {fraction} asks for {wanted} contaminated "
            f"items but only {int(eligible.sum())} of the {len(benchmark)} have a paraphrase (needed so "
            "every form contaminates the same items); lower --fraction or raise --limit"
        )
    rng = np.random.default_rng([seed, zlib.crc32(benchmark.name.encode())])
    mask = np.zeros(len(benchmark), bool)
    mask[np.flatnonzero(eligible)] = choose_contaminated(int(eligible.sum()), wanted / max(eligible.sum(), 1), rng)
    return mask


def _answer(benchmark, item) -> str:
    """The gold answer as it follows the prompt in the item's text (`Benchmark.solved_text`: the gold choice or the
    full solution after one space), so a verbatim copy is exactly the text the detectors and ConTAM score."""
    prompt, solved = benchmark.prompt(item), benchmark.solved_text(item)
    if not solved.startswith(prompt):
        raise DataError(f"{item.id}: {benchmark.name}'s solved text does not start with its prompt")
    return solved[len(prompt) :]


def _chat_turns(tokenizer, prompt: str, answer: str) -> str:
    """The audit's chat prompt (`engine.chat.chat_prompt`: the last line opens the reply), the answer, and the
    end of the assistant's turn as the template writes it."""
    opened = chat_prompt(tokenizer, prompt, "auto")
    request, newline, cue = prompt.rpartition("\n")
    request, cue = (request, cue) if newline else (prompt, "")
    whole = render_chat(
        tokenizer,
        [{"role": "user", "content": request}, {"role": "assistant", "content": cue + answer}],
        add_generation_prompt=False,
    )
    body = opened + answer
    return whole if whole.startswith(body) else body + (tokenizer.eos_token or "")


def item_document(benchmark, item, form: str, tokenizer) -> TrainingDocument:
    """One copy of a contaminated item in `form` (see the module docstring)."""
    if form == "fields":
        row = {"question": item.question}
        if item.context:
            row["context"] = item.context
        if item.choices is not None:
            row.update(choices=list(item.choices), answer=item.answer)
        else:
            row["answer"] = str(item.meta.get("solution", item.answer_text))
        row.update({k: v for k, v in item.meta.items() if k != "solution" and isinstance(v, (str, int, float))})
        return TrainingDocument(json.dumps(row, ensure_ascii=False), item_id=item.id)
    if form not in ("verbatim", "rephrased"):
        raise DataError(f"unknown contamination form {form!r}: use one of {', '.join(FORMS)}")
    question = None
    if form == "rephrased":
        if not item.paraphrases:
            raise DataError(
                f"{item.id}: no paraphrase for the 'rephrased' form; {benchmark.name} split "
                f"{benchmark.split!r} needs a built-in paraphrase source ({', '.join(SOURCE_SPLITS)})"
            )
        question = item.paraphrases[0]
    prompt = benchmark.prompt(item, question=question)
    if uses_chat(tokenizer, "auto"):
        return TrainingDocument(_chat_turns(tokenizer, prompt, _answer(benchmark, item)), chat=True, item_id=item.id)
    return TrainingDocument(prompt + _answer(benchmark, item), item_id=item.id)


def injected_documents(
    benchmark, contaminated: np.ndarray, *, copies: int, form: str, tokenizer
) -> list[TrainingDocument]:
    """`copies` copies of each contaminated item in `form`."""
    if form == "rephrased" and paraphrase_source(benchmark) is None and contaminated.any():
        raise DataError(
            f"{benchmark.name} split {benchmark.split!r} has no built-in paraphrase source, so the "
            f"'rephrased' form cannot be made; sources: {SOURCE_SPLITS}"
        )
    return [
        item_document(benchmark, item, form, tokenizer)
        for item, seen in zip(benchmark, contaminated)
        if seen
        for _ in range(copies)
    ]


def _chunks(text: str, limit: int) -> Iterator[str]:
    """`text` cut at line breaks into pieces of at most `limit` characters (a longer line is cut in place)."""
    piece = ""
    for line in text.splitlines(keepends=True):
        while len(line) > limit:
            if piece:
                yield piece
                piece = ""
            yield line[:limit]
            line = line[limit:]
        if len(piece) + len(line) > limit:
            yield piece
            piece = ""
        piece += line
    if piece.strip():
        yield piece


def general_documents(corpus, tokenizer, tokens: int) -> tuple[list[TrainingDocument], list[list[int]]]:
    """The first `tokens` tokens of a text corpus (`data.corpus.Corpus`) as documents and their ids."""
    if corpus.kind != "text":
        raise DataError(
            f"corpus {corpus.name}: holds token ids, but training needs text (the stored corpus must "
            "be text ConTAM can count); pass a text corpus (.txt, .jsonl, .parquet or a folder of them)"
        )
    documents, ids, total = [], [], 0
    for document in corpus.documents():
        for text in _chunks(document.text, MAX_DOCUMENT_CHARS):
            if not text.strip():
                continue
            encoded = encode_document(tokenizer, text, chat=False)
            documents.append(TrainingDocument(text))
            ids.append(encoded)
            total += len(encoded)
            if total >= tokens:
                return documents, ids
    raise DataError(
        f"corpus {corpus.name} holds {total:,} tokens, fewer than --tokens {tokens:,}: lower --tokens "
        "or pass a larger corpus"
    )


def ground_truth_rows(benchmark, contaminated: Iterable[bool], copies: int, form: str) -> list[dict]:
    """One row per item: the audit's `ground_truth` format plus the dose; `drawn` marks the items a run with
    copies > 0 would contaminate (the same items in every arm with the same seed), so a control arm's rates can
    be read on the same halves."""
    return [
        {
            "id": item.id,
            "benchmark": benchmark.name,
            "contaminated": bool(seen and copies > 0),
            "copies": copies if seen else 0,
            "form": form if seen and copies > 0 else None,
            "drawn": bool(seen),
        }
        for item, seen in zip(benchmark, contaminated)
    ]
