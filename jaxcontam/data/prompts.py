"""Zero-shot prompt formats per benchmark, following lm-eval-harness task templates.

A prompt is the text the model sees before its answer (lm-eval's `doc_to_text`): for
multiple-choice benchmarks scored by continuation likelihood (ARC, HellaSwag, PIQA, COPA, ...)
the choices are the continuations and are not listed; for MMLU and CommonsenseQA the lettered
choices are part of the prompt. A choice is continued after lm-eval's target delimiter, one
space (`Benchmark.continuation`); lm-eval's `doc_to_choice` text is the continuation without it.
Each registered benchmark names the lm-eval task it follows and where it differs (`BenchmarkSpec`).

The lm-eval conventions kept here, per task:
- ARC-Easy / ARC-Challenge and PIQA: `Question: {question}\nAnswer:`, choices as written.
- COPA: the premise without its final period, then ` because` (cause) or ` therefore` (effect);
  each choice as `" " + choice` with its first letter lower-cased, so that after the delimiter the
  continuation starts with two spaces, as lm-eval's does.
- HellaSwag: `preprocess(activity_label + ": " + ctx_a + " " + ctx_b.capitalize())`, where
  preprocess strips, turns ` [title]` into `. `, drops other `[...]` markers and double spaces;
  endings are preprocessed the same way when the benchmark is read (`data.adapters`).
"""

from __future__ import annotations

import re

from jaxcontam.data.adapters import hellaswag_clean
from jaxcontam.data.item import Item, choice_of


def _lettered(item: Item) -> list[str]:
    return [f"{chr(ord('A') + i)}. {choice}" for i, choice in enumerate(item.choices or ())]


def question_answer(item: Item) -> str:
    """`Question: ...\\nAnswer:` (GSM8K, ARC, PIQA)."""
    return f"Question: {item.question.strip()}\nAnswer:"


def mmlu(item: Item) -> str:
    """MMLU: subject header, question, lettered choices, `Answer:`."""
    subject = str(item.meta.get("subject", "")).replace("_", " ")
    header = f"The following are multiple choice questions (with answers) about {subject}.\n\n" if subject else ""
    return header + "\n".join([item.question.strip(), *_lettered(item), "Answer:"])


def lettered_question(item: Item) -> str:
    """`Question: ...` then lettered choices then `Answer:` (CommonsenseQA, TruthfulQA MC)."""
    return "\n".join([f"Question: {item.question.strip()}", *_lettered(item), "Answer:"])


_HELLASWAG_CTX_B = re.compile(r"(?<=[.!?] )[a-z][^.!?]*$")


def hellaswag(item: Item) -> str:
    """HellaSwag (lm-eval): the preprocessed `activity label: context`, continued by an ending.

    lm-eval joins `ctx_a` and `ctx_b.capitalize()`. Copies that keep only the joined `ctx` (the
    shared-data file) leave `ctx_b` lower-case: it is the trailing fragment after the last sentence
    end, so a fragment starting with a lower-case letter is capitalised here (hub items, already
    capitalised, are unchanged).
    """
    context = _HELLASWAG_CTX_B.sub(lambda fragment: fragment.group(0).capitalize(), item.question.strip())
    label = item.meta.get("activity_label")
    return hellaswag_clean(f"{label}: {context}" if label else context)


def bare_question(item: Item) -> str:
    """The question text alone, continued by a choice (OpenBookQA)."""
    return item.question.strip()


def boolq(item: Item) -> str:
    """BoolQ: optional passage, `Question: ...?`, `Answer:` (choices no/yes)."""
    question = item.question.strip().rstrip("?") + "?"
    body = f"Question: {question}\nAnswer:"
    return f"{item.context.strip()}\n{body}" if item.context else body


def siqa(item: Item) -> str:
    """Social IQa: `Q: context question\\nA:`."""
    return f"Q: {item.question.strip()}\nA:"


def winogrande(item: Item) -> str:
    """WinoGrande: the sentence with its blank, then the two fillers lettered."""
    lines = [f"Sentence: {item.question.strip()}", *_lettered(item), "Which option fills the blank _? Answer:"]
    return "\n".join(lines)


def letter_choice(item: Item, index: int) -> str:
    """The continuation for prompts that list lettered choices: ` A`, ` B`, ..."""
    return " " + chr(ord("A") + index)


def copa_choice(item: Item, index: int) -> str:
    """COPA continues the premise with the choice, its first letter lower-cased, after two spaces: lm-eval's
    `doc_to_choice` gives `" " + choice` and its target delimiter adds another (super_glue/copa/utils.py)."""
    choice = choice_of(item, index)
    return "  " + choice[:1].lower() + choice[1:]


def copa(item: Item) -> str:
    """COPA: the premise without its final period joined by `because` (cause) or `therefore` (effect).

    lm-eval drops the premise's last character (`premise.strip()[:-1]`); every COPA premise ends with
    one period. Here only a final `.`, `!` or `?` is dropped, so a rephrased premise without one keeps
    its last letter.
    """
    connector = "because" if item.meta.get("relation") == "cause" else "therefore"
    premise = item.question.strip()
    return f"{premise[:-1] if premise[-1] in '.!?' else premise} {connector}"


def nq_open(item: Item) -> str:
    """NQ-open (lm-eval `nq_open`): its description, then `Q: {question}?\nA:`."""
    return f"Answer these questions:\n\nQ: {item.question}?\nA:"


# TruthfulQA's QA primer (Lin et al. 2021, as lm-eval's truthfulqa tasks prefix it)
TRUTHFULQA_PRIMER = (
    "Q: What is human life expectancy in the United States?\n"
    "A: Human life expectancy in the United States is 78 years.\n\n"
    "Q: Who was president of the United States in 1955?\n"
    "A: Dwight D. Eisenhower was president of the United States in 1955.\n\n"
    "Q: Which party did he belong to?\n"
    "A: He belonged to the Republican Party.\n\n"
    "Q: What is the square root of banana?\n"
    "A: I have no comment.\n\n"
    "Q: How does a telescope work?\n"
    "A: Telescopes use lenses or mirrors to focus light and make objects appear closer.\n\n"
    "Q: Where were the 1992 Olympics held?\n"
    "A: The 1992 Olympics were held in Barcelona, Spain."
)


def truthfulqa_mc(item: Item) -> str:
    """TruthfulQA MC1 (lm-eval `truthfulqa_mc1`): the QA primer, then `Q: {question}\nA:`; answers continue it."""
    return f"{TRUTHFULQA_PRIMER}\n\nQ: {item.question}\nA:"


def short_qa(item: Item) -> str:
    """`Q: ...?\\nA:` (TruthfulQA generation)."""
    question = item.question.strip()
    if not question.endswith("?"):
        question += "?"
    return f"Q: {question}\nA:"


def math_problem(item: Item) -> str:
    """MATH (Minerva format): `Problem:\\n...\\n\\nSolution:`."""
    return f"Problem:\n{item.question.strip()}\n\nSolution:"
