"""Benchmark contamination injected into a training corpus at known rates, copies and forms.

The controlled-contamination experiments train models on corpora where a known subset of a benchmark was
inserted, so every detector can be scored against the truth:

- `question`: the question text alone (e.g. a scraped exam page without its key);
- `question_answer`: the question, a newline and the gold answer (the full solution when the item has one);
- `prompt_answer`: the benchmark's verbalised prompt followed by the answer (`Benchmark.solved_text`), i.e.
  exactly the text an evaluation shows the model plus its answer;
- `file`: the contaminated items' `prompt_answer` texts concatenated in benchmark order, as one document (a
  leaked test file), which is what the exchangeability test of Oren et al. is built to detect.
Each form is inserted `copies` times; `file` as `copies` copies of the whole document.
"""

from __future__ import annotations

import numpy as np

from jaxcontam.detect.exchangeability import ITEM_SEPARATOR

ITEM_TEXT_FORMS = ("question", "question_answer", "prompt_answer", "file")


def choose_contaminated(num_items: int, rate: float, rng: np.random.Generator) -> np.ndarray:
    """bool [num_items]: round(rate * num_items) items drawn without replacement."""
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"contamination rate must lie in [0, 1], got {rate}")
    mask = np.zeros(num_items, bool)
    mask[rng.choice(num_items, size=int(round(rate * num_items)), replace=False)] = True
    return mask


def item_text(benchmark, item, form: str) -> str:
    """The text of one item in a per-item form (see the module docstring)."""
    if form == "question":
        return item.question
    if form == "question_answer":
        return f"{item.question}\n{item.meta.get('solution', item.answer_text)}"
    if form in ("prompt_answer", "file"):
        return benchmark.solved_text(item)
    raise ValueError(f"unknown contamination form {form!r}: use one of {', '.join(ITEM_TEXT_FORMS)}")


def injected_documents(benchmark, items, contaminated: np.ndarray, *, copies: int, form: str) -> list[str]:
    """The documents to add to the corpus: `copies` copies of each contaminated item (or of the file)."""
    if copies < 0:
        raise ValueError(f"copies must be >= 0, got {copies}")
    texts = [item_text(benchmark, item, form) for item, seen in zip(items, contaminated) if seen]
    if not texts:
        return []
    if form == "file":
        return [ITEM_SEPARATOR.join(texts)] * copies
    return [text for text in texts for _ in range(copies)]
