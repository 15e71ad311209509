# pyright: standard
"""ReCaLL (Xie et al. 2024, "ReCaLL: Membership Inference via Relative Conditional Log-Likelihoods"; mimir's
`recall` attack): per item, LL(x | P) / LL(x), the mean log-prob per token of the item's solved text after a prefix P
of known non-member texts over its mean log-prob alone. A text the model saw loses more likelihood when a non-member
prefix precedes it, so LL(x | P) is further below zero and the ratio larger: higher means more likely seen.

Choices (docs/methods.md, "ReCaLL"):
- P: the first `shots` texts of `prefix_file` (JSON lines, {"text": ...} each: known non-members, best items of the
  same benchmark written after the model's training data, as the authors' best results use non-members of the same
  distribution), by default `BUNDLED_NONMEMBERS`, short texts written for jaxcontam in December 2026, so non-members
  of any model trained on data collected before then. Not the benchmark's rephrasings: for a contaminated benchmark
  they paraphrase members, and a prefix that reminds the model of its training items is not a non-member prefix.
- one prefix for every item of a benchmark: its texts joined by a blank line, cut to fit the model's positions beside
  the benchmark's longest item (`detect.prefixed.fit_prefix`: whole texts dropped from the front, as mimir keeps the
  last shots that fit, then the last tokens of one text).
- LL(x) over the text's tokens 1..n-1, LL(x | P) over every token of the text after P (mimir's masks): both passes in
  one batched `score_logprobs` call (`detect.prefixed.prefixed_scores`).
ReCaLL gives a per-item score and no test: the audit reports its distribution and, with labels, its AUC.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path

from jaxcontam.dataclass_config import check_ranges, ranged
from jaxcontam.detect.benchmark_results import DetectorSummary
from jaxcontam.detect.item_scores import score_summary
from jaxcontam.detect.prefixed import fit_prefix, prefixed_scores, text_body
from jaxcontam.errors import JaxcontamError

SCORE = "recall"
COLUMNS = (SCORE, "recall_logprob", "recall_prefixed_logprob", "recall_prefix_texts", "recall_prefix_tokens")
BUNDLED = "bundled"  # the prefix source's name when no file is given

BUNDLED_NONMEMBERS = (
    "The ferry to the northern island left twenty minutes late because a delivery of bicycle tyres had to be loaded "
    "by hand. Most passengers waited on the upper deck, where a child counted the gulls following the wake and lost "
    "track somewhere past forty.",
    "To repot a small lemon tree, water it the evening before, ease the root ball out in one piece and loosen only "
    "the outer roots. Use a pot no more than five centimetres wider than the old one, or the soil stays wet too long.",
    "The library committee voted to keep the reading room open until nine on Thursdays, provided that two volunteers "
    "sign up for each evening. The caretaker asked that the radiator by the window be reported if it starts ticking "
    "again.",
    "A rectangular garden bed is three metres long and one and a half metres wide. Mara wants to edge it with bricks "
    "that are twenty-five centimetres long, laid end to end. She already has twelve bricks, so she buys the rest at "
    "the market on Saturday.",
    "Fog settled over the valley shortly after dawn, and the first train of the morning crept past the orchards with "
    "its lamps lit. By ten the sun had burned through, and the station master hung the wet flag out to dry on the "
    "fence.",
    "When the recipe asks for browned butter, melt it over medium heat and keep stirring until the foam subsides and "
    "the solids at the bottom turn the colour of hazelnuts. Take the pan off the heat at once, because it burns "
    "within seconds.",
)


@dataclasses.dataclass(frozen=True)
class RecallSettings:
    """[recall]: `prefix_file` a JSON-lines file of known non-member texts ({"text": ...} per line; a relative path is
    read from the audit's TOML folder; None: `BUNDLED_NONMEMBERS`); `shots` how many of its texts, in file order,
    make the prefix (before it is cut to fit the model's positions)."""

    prefix_file: str | None = None  # JSON lines of known non-member texts; None: the bundled texts
    shots: int = ranged(len(BUNDLED_NONMEMBERS), at_least=1)  # texts of the prefix, in file order, before the cut

    def __post_init__(self):
        check_ranges(self, "[recall]")
        nonmember_texts(self)  # a missing or malformed file is refused before any work starts


def nonmember_texts(settings: RecallSettings) -> tuple[str, ...]:
    """The prefix's texts: the first `shots` of the file (or of the bundled texts); fewer than `shots` is refused."""
    from jaxcontam.data.records import read_jsonl, require_file

    if settings.prefix_file is None:
        texts, where = BUNDLED_NONMEMBERS, "the bundled non-member texts"
    else:
        path = require_file(settings.prefix_file, "[recall] prefix_file")
        texts, where = [], str(path)
        for number, row in read_jsonl(path):
            text = row.get("text")
            if not isinstance(text, str) or not text.strip():
                raise JaxcontamError(
                    f'{path}, line {number}: expected {{"text": "<a known non-member text>"}}, got keys '
                    f"{sorted(row)}; write one non-empty text per line"
                )
            texts.append(text)
    if len(texts) < settings.shots:
        raise JaxcontamError(
            f"[recall] shots = {settings.shots} but {where} hold(s) {len(texts)} text(s): lower shots, or add texts"
        )
    return tuple(texts[: settings.shots])


def prefix_source(settings: RecallSettings) -> str:
    """What summary.json names the prefix by: the file, or "bundled"."""
    return BUNDLED if settings.prefix_file is None else str(Path(settings.prefix_file))


def recall_records(model, benchmark, items, settings: RecallSettings) -> list[dict]:
    """Per item: LL(x), LL(x | P), their ratio, and the prefix's size; P is the same for every item of the benchmark
    (fitted beside its longest item, so it does not depend on how items are chunked)."""
    tokenizer = model.tokenizer
    longest = max(len(text_body(tokenizer, tokenizer.encode(benchmark.solved_text(item)))) for item in benchmark)
    where = f"ReCaLL on {benchmark.name}"
    prefix = fit_prefix(tokenizer, nonmember_texts(settings), model.config.max_position - longest, where)
    texts = [benchmark.solved_text(item) for item in items]
    scores = prefixed_scores(model, texts, [prefix] * len(texts), same_tokens=False)
    return [
        {
            "id": item.id,
            SCORE: score.prefixed / score.alone if score.alone != 0 else math.nan,
            "recall_logprob": score.alone,
            "recall_prefixed_logprob": score.prefixed,
            "recall_prefix_texts": prefix.texts,
            "recall_prefix_tokens": score.prefix_tokens,
        }
        for item, score in zip(items, scores)
    ]


@dataclasses.dataclass(frozen=True)
class RecallResult:
    """ReCaLL over a benchmark: the score's mean, median and, with labels, AUC (`summary`); the prefix it used (its
    source, texts and tokens, after the cut to fit)."""

    summary: DetectorSummary
    prefix_source: str
    prefix_texts: int
    prefix_tokens: int

    def to_dict(self) -> dict:
        return {
            "score": self.summary.to_dict(),
            "prefix_source": self.prefix_source,
            "prefix_texts": self.prefix_texts,
            "prefix_tokens": self.prefix_tokens,
        }

    @classmethod
    def from_dict(cls, entry: dict) -> RecallResult:
        return cls(
            DetectorSummary.from_dict(entry["score"]),
            entry["prefix_source"],
            entry["prefix_texts"],
            entry["prefix_tokens"],
        )


def recall_result(rows: Sequence[dict], settings: RecallSettings) -> RecallResult | None:
    """The score's summary and the prefix's size (None without items)."""
    if not rows:
        return None
    first = rows[0]
    return RecallResult(
        score_summary(rows, SCORE), prefix_source(settings), first["recall_prefix_texts"], first["recall_prefix_tokens"]
    )
