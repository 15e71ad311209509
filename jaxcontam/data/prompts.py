"""Zero-shot prompt formats per benchmark, following lm-eval-harness task templates.

A prompt is the text the model sees before its answer: for multiple-choice benchmarks scored
by continuation likelihood (ARC, HellaSwag, PIQA, ...) the choices are the continuations and
are not listed; for MMLU and CommonsenseQA the lettered choices are part of the prompt.
"""

from __future__ import annotations

from jaxcontam.data.item import Item


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


def hellaswag(item: Item) -> str:
    """HellaSwag: `activity label: context`, continued by an ending."""
    label = item.meta.get("activity_label")
    return f"{label}: {item.question.strip()}" if label else item.question.strip()


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
    """COPA continues the premise with the choice, its first letter lower-cased (lm-eval-harness)."""
    choice = item.choices[index]
    return " " + choice[:1].lower() + choice[1:]


def copa(item: Item) -> str:
    """COPA: the premise without its final period joined by `because` (cause) or `therefore` (effect)."""
    connector = "because" if item.meta.get("relation") == "cause" else "therefore"
    return f"{item.question.strip().rstrip('.')} {connector}"


def short_qa(item: Item) -> str:
    """`Q: ...?\\nA:` (NQ-open, TruthfulQA generation)."""
    question = item.question.strip()
    if not question.endswith("?"):
        question += "?"
    return f"Q: {question}\nA:"


def math_problem(item: Item) -> str:
    """MATH (Minerva format): `Problem:\\n...\\n\\nSolution:`."""
    return f"Problem:\n{item.question.strip()}\n\nSolution:"
