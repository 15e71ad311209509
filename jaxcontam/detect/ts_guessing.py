# pyright: standard
"""TS-Guessing, question-based multiple choice (Deng et al. 2023, "Investigating Data Contamination in Modern
Benchmarks for Large Language Models", arXiv 2311.09783; LLMSanitize `ts_guessing_question_multichoice`).

A model that saw a multiple-choice item can restore one of its wrong options from the rest of the item. Per item:
one wrong option (chosen by a seeded draw from the item's id) is masked, the model is asked in the authors' words to
fill it in, greedily; its reply is compared with the masked option by exact match and ROUGE-L F1. Items whose options
give the option away are skipped as the authors skip them (two options that are yes/no or true/false; two options
with ROUGE-L F1 >= 0.65). The exact-match rate is an effect size: no null distribution of a clean model's rate exists
without a reference, so there is no test (docs/methods.md, "TS-Guessing").
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Sequence

from jaxcontam.dataclass_config import check_ranges, ranged
from jaxcontam.detect.benchmark_results import DetectorSummary
from jaxcontam.detect.item_scores import score_summary
from jaxcontam.engine.chat import ChatMode, check_chat_mode

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
SIMILAR_OPTIONS = 0.65  # ROUGE-L F1 between two options at or above which the item is skipped (the authors' filter)
BINARY_OPTIONS = ({"yes", "no"}, {"true", "false"})


@dataclasses.dataclass(frozen=True)
class TsGuessingSettings:
    """The [ts_guessing] table: the reply's length (LLMSanitize's 128 tokens) and whether the prompt is a chat turn
    ("auto": when the tokenizer has a template)."""

    max_new_tokens: int = ranged(128, at_least=1)  # LLMSanitize's max_output_tokens; the reply is greedy
    chat_template: ChatMode = "auto"

    def __post_init__(self):
        check_ranges(self, "[ts_guessing]")
        check_chat_mode(self.chat_template)


def masked_option(item_id: str, answer: int, n_options: int, seed: int) -> int:
    """The wrong option masked for an item: a draw among its wrong options keyed by (seed, item id), the same
    however items are chunked."""
    wrong = [i for i in range(n_options) if i != answer]
    digest = hashlib.sha256(f"{seed}:{item_id}".encode()).digest()
    return wrong[int.from_bytes(digest[:8], "big") % len(wrong)]


def guessing_prompt(question: str, options: Sequence[str], masked: int) -> str:
    """Deng et al.'s prompt (their Figure, as LLMSanitize writes it): fill in option `masked` of the options."""
    lines = [
        f"Please fill in the [] in option {LETTERS[masked]} based on your benchmark knowledge.",
        "",
        "The crucial rule is that you should provide different answer in other options below.",
        "",
        f"Question: {question}",
        "Options:",
    ]
    lines += [
        f"{LETTERS[i]}: [MASK]" if i == masked else f"{LETTERS[i]}: [{option}]" for i, option in enumerate(options)
    ]
    return "\n".join(lines + ["", "Reply with answer only."])


def guessed_option(reply: str, masked: int) -> str:
    """The option the reply guesses: the text after "<letter>:" when the reply repeats it, its first line and first
    sentence (LLMSanitize cuts at the letter and keeps nltk's first sentence), without the brackets the prompt put
    around every option."""
    symbol = f"{LETTERS[masked]}:"
    text = reply.split(symbol, 1)[1] if symbol in reply else reply
    text = text.strip().split("\n", 1)[0]
    text = re.split(r"(?<=[.!?])\s+", text, maxsplit=1)[0].strip()
    if text.startswith("[") and "]" in text:  # "[Jupiter]" or "[Jupiter]." as the prompt wrote the options
        text = text[1 : text.index("]")].strip()
    return text


def rouge_tokens(text: str) -> list[str]:
    """ROUGE's tokens (Google's rouge_score without stemming): lowercase, every run of other characters than
    a-z and 0-9 a separator."""
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).split()


def rouge_l_f1(prediction: str, reference: str) -> float:
    """ROUGE-L F1: the longest common subsequence of the two token lists over their lengths (0 when either is
    empty)."""
    a, b = rouge_tokens(prediction), rouge_tokens(reference)
    if not a or not b:
        return 0.0
    previous = [0] * (len(b) + 1)
    for token in a:
        current = [0]
        for j, other in enumerate(b, start=1):
            current.append(previous[j - 1] + 1 if token == other else max(previous[j], current[j - 1]))
        previous = current
    common = previous[-1]
    if common == 0:
        return 0.0
    precision, recall = common / len(a), common / len(b)
    return 2 * precision * recall / (precision + recall)


def exact_match(guess: str, option: str) -> bool:
    """The guess equals the option, lowercased and with surrounding whitespace dropped (LLMSanitize lowercases)."""
    return guess.strip().lower() == option.strip().lower()


def skip_reason(options: Sequence[str]) -> str | None:
    """Why the authors' filter skips an item with these options (None: it is asked)."""
    if len(options) < 2:
        return "fewer than two options"
    if len(options) > len(LETTERS):
        return f"more than {len(LETTERS)} options (the prompt letters them A-Z)"
    if len(options) == 2 and {o.strip().lower() for o in options} in BINARY_OPTIONS:
        return "yes/no or true/false options"
    for i in range(len(options)):
        for j in range(i + 1, len(options)):
            if rouge_l_f1(options[i], options[j]) >= SIMILAR_OPTIONS:
                return f"options {LETTERS[i]} and {LETTERS[j]} overlap (ROUGE-L >= {SIMILAR_OPTIONS})"
    return None


NO_OPTIONS = "no options"  # a generative item, or a benchmark of them: nothing to mask


@dataclasses.dataclass(frozen=True)
class TsGuessingResult:
    """Over a benchmark's multiple-choice items: how many were asked and skipped, the exact-match rate of the guesses
    against the masked options and the mean ROUGE-L F1 (both higher = seen; with labels, each one's AUC and one-sided
    Mann-Whitney p). `reason`: why nothing was asked ("no options": no multiple-choice item), else None."""

    n_asked: int
    n_skipped: int
    exact_match: DetectorSummary
    rouge_l: DetectorSummary
    reason: str | None = None

    @property
    def exact_match_rate(self) -> float:
        return self.exact_match.mean

    def to_dict(self) -> dict:
        return {
            "n_asked": self.n_asked,
            "n_skipped": self.n_skipped,
            "exact_match_rate": self.exact_match_rate,
            "exact_match": self.exact_match.to_dict(),
            "rouge_l": self.rouge_l.to_dict(),
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, entry: dict) -> TsGuessingResult:
        return cls(
            entry["n_asked"],
            entry["n_skipped"],
            DetectorSummary.from_dict(entry["exact_match"]),
            DetectorSummary.from_dict(entry["rouge_l"]),
            entry["reason"],
        )


def ts_guessing_result(rows: Sequence[dict]) -> TsGuessingResult:
    """The benchmark's result from its rows (`ts_skipped`: why an item was not asked, None when it was;
    `ts_exact_match`, `ts_rouge_l`: None for an item not asked)."""
    multiple_choice = [r for r in rows if r["ts_skipped"] != NO_OPTIONS]
    asked = [r for r in multiple_choice if r["ts_skipped"] is None]
    as_numbers = [
        r | {"ts_exact_match": None if r["ts_exact_match"] is None else float(r["ts_exact_match"])} for r in asked
    ]
    return TsGuessingResult(
        n_asked=len(asked),
        n_skipped=len(multiple_choice) - len(asked),
        exact_match=score_summary(as_numbers, "ts_exact_match", higher_means_seen=True),
        rouge_l=score_summary(asked, "ts_rouge_l", higher_means_seen=True),
        reason=None if multiple_choice else NO_OPTIONS,
    )
