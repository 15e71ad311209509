# pyright: standard
"""PaCoST's measuring: per item, the model's answers to the original and the rephrased question and every measured
confidence of each (`confidences.CONFIDENCES`), as the records an audit stores and resumes; and what a judge is
shown of a question and an answer."""

from __future__ import annotations

import math
import re

from jaxcontam.detect.answering import answer_items
from jaxcontam.detect.pacost.confidences import CONFIDENCES, SideEvidence
from jaxcontam.detect.pacost.settings import PacostSettings
from jaxcontam.engine.chat import uses_chat
from jaxcontam.engine.pacost_judge import yes_token_ids
from jaxcontam.ngram.item_text import prompt_header
from jaxcontam.stage_clock import stage

_ANSWER_CUE = re.compile(r"(?:\b(?:Answer|Solution)|(?:^|(?<=\n))A)\s*:\s*$")
_QUESTION_LABEL = re.compile(r"^(?:Question|Q)\s*:\s*")


def judge_question(benchmark, item, question: str) -> str:
    """What a judge is shown as the question: the benchmark prompt for `question`, minus its header and answer cue.

    The prompt carries what the model saw: context, the question (or its rephrasing), the lettered options
    of MMLU-style prompts, COPA's connector. Header lines shared by every item of the (sub)benchmark (MMLU's
    "The following are multiple choice questions (with answers) about ...", found as ConTAM's item text finds
    them: `ngram.item_text.prompt_header`) go, and so do the trailing cue ("Answer:", "A:", "Solution:") and a
    leading "Question:"/"Q:" label, since the judge template writes its own.
    """
    prompt = benchmark.prompt(item, question=question)
    header = prompt_header(benchmark, item)
    if header and prompt.startswith(header):
        prompt = prompt[len(header) :]
    shown = _ANSWER_CUE.sub("", prompt.strip()).rstrip()
    return _QUESTION_LABEL.sub("", shown)


def judged_answer(benchmark, item, answer) -> str:
    """What the judge is shown as the answer: the generated text, or the chosen option as text.

    A continuation that spells its option (COPA's lower-cased choice after the connector) is kept as the
    model scored it; a label continuation (" B" after lettered options) becomes the option's text.
    """
    if answer.choice is None:
        return answer.text
    option = item.choices[answer.choice].strip()
    said = benchmark.continuation(item, answer.choice).strip()
    return said if said.casefold() == option.casefold() else option


def _side(model, benchmark, items, questions: list[str], settings: PacostSettings, side: str) -> list[dict]:
    """Answers and every measured confidence (`PacostSettings.measured`) for one side (original or rephrased) of a
    list of items."""
    with stage("answer"):
        answers = answer_items(
            model,
            benchmark,
            items,
            questions,
            max_new_tokens=settings.max_new_tokens,
            chat=settings.chat_template,
            progress=True,
            sampling=settings.sampling(side),
        )
    judged = [i for i, a in enumerate(answers) if a.text]
    shown = (
        [judge_question(benchmark, items[i], questions[i]) for i in judged],
        [judged_answer(benchmark, items[i], answers[i]) for i in judged],
    )
    evidence = SideEvidence(model, benchmark, items, questions, answers, judged, shown, settings)
    columns: dict[str, list] = {}
    for name in settings.measured():
        confidence = CONFIDENCES[name]
        with stage(confidence.clock):
            columns |= confidence.measure(evidence)
    return [
        {f"answer_{side}": a.text, f"correct_{side}": a.correct, f"correct_norm_{side}": a.correct_norm}
        | {f"{column}_{side}": values[i] for column, values in columns.items()}
        for i, a in enumerate(answers)
    ]


def pacost_records(model, benchmark, items, rephrasings, settings: PacostSettings) -> list[dict]:
    """One record per item: both answers, correctness, every confidence on both sides (NaN where absent).

    `rephrasings[i]` is the accepted rephrased question of items[i], or None (the item is still answered
    on the original side, which gives its accuracy, and is dropped from the paired test).
    """
    chat = uses_chat(model.tokenizer, settings.chat_template)
    if "p_yes" in settings.measured():
        yes_token_ids(model.tokenizer)  # refuses a tokenizer that cannot say "yes" before anything is answered
    records = [
        {"id": item.id, "chat": chat} | r
        for item, r in zip(items, _side(model, benchmark, items, [it.question for it in items], settings, "original"))
    ]
    with_rephrase = [i for i, r in enumerate(rephrasings) if r]
    rephrased = (
        _side(
            model,
            benchmark,
            [items[i] for i in with_rephrase],
            [rephrasings[i] for i in with_rephrase],
            settings,
            "rephrased",
        )
        if with_rephrase
        else []
    )
    empty = (
        {
            key.replace("original", "rephrased"): (math.nan if isinstance(v, float) else None)
            for key, v in records[0].items()
            if key.endswith("_original")
        }
        if records
        else {}
    )
    for record in records:
        record.update(empty, rephrase=None)
    for i, side in zip(with_rephrase, rephrased):
        records[i].update(side, rephrase=rephrasings[i])
    return records
