# pyright: standard
"""TS-Guessing as a detector of the audit (opt-in: `[ts_guessing]`): per multiple-choice item, one wrong option
masked and the model's greedy guess of it, every item's prompt in one batched generation (`detect.ts_guessing`).
An effect size with no test: no verdict on a benchmark with options, "not tested: no options" on one without."""

from __future__ import annotations

from jaxcontam.detect.stage import DetectorStage, DetectorView, PerItemWork, StageInput
from jaxcontam.detect.ts_guessing import (
    NO_OPTIONS,
    TsGuessingResult,
    TsGuessingSettings,
    exact_match,
    guessed_option,
    guessing_prompt,
    masked_option,
    rouge_l_f1,
    skip_reason,
    ts_guessing_result,
)
from jaxcontam.detect.verdict import Verdict
from jaxcontam.engine.chat import chat_text, encode_chat
from jaxcontam.engine.generation import generate
from jaxcontam.report.formatting import number, percent
from jaxcontam.report.html_parts import facts, text

COLUMNS = ("ts_skipped", "ts_masked", "ts_guess", "ts_exact_match", "ts_rouge_l")


def ts_guessing_records(model, items, settings: TsGuessingSettings, seed: int) -> list[dict]:
    """Per item: why it was not asked (None when it was), the masked option's index, the model's guess, whether it
    matches the masked option exactly and their ROUGE-L F1."""
    records = {item.id: dict.fromkeys(COLUMNS) | {"id": item.id} for item in items}
    asked = []
    for item in items:
        if item.choices is None:
            records[item.id]["ts_skipped"] = NO_OPTIONS
            continue
        reason = skip_reason(item.choices)
        if reason is not None:
            records[item.id]["ts_skipped"] = reason
            continue
        assert isinstance(item.answer, int)  # Item.__post_init__: a multiple-choice answer is an index
        asked.append((item, masked_option(item.id, item.answer, len(item.choices), seed)))
    if asked:
        tokenizer, mode = model.tokenizer, settings.chat_template
        prompts = [
            encode_chat(
                tokenizer, chat_text(tokenizer, guessing_prompt(item.question, item.choices, masked), mode), mode
            )
            for item, masked in asked
        ]
        room = max(1, min(settings.max_new_tokens, model.config.max_position - max(map(len, prompts))))
        replies = generate(model, prompts, max_new_tokens=room, temperature=0.0)
        for (item, masked), reply in zip(asked, replies):
            option = item.choices[masked]
            guess = guessed_option(reply.text or "", masked)
            records[item.id] |= {
                "ts_masked": masked,
                "ts_guess": guess,
                "ts_exact_match": exact_match(guess, option),
                "ts_rouge_l": rouge_l_f1(guess, option),
            }
    return [records[item.id] for item in items]


def _records(stage_input: StageInput, settings: TsGuessingSettings, items) -> list[dict]:
    return ts_guessing_records(stage_input.model, items, settings, stage_input.seed)


def _resume_key(stage_input: StageInput, settings: TsGuessingSettings) -> dict:
    """Every setting and the audit's seed (it picks the masked options)."""
    return {
        "max_new_tokens": settings.max_new_tokens,
        "chat_template": settings.chat_template,
        "seed": stage_input.seed,
    }


def _result(stage_input: StageInput, settings: TsGuessingSettings, rows: list[dict]) -> TsGuessingResult:
    return ts_guessing_result(rows)


def _headline(result: TsGuessingResult, alpha: float) -> Verdict | None:
    """ "not tested: no options" on a benchmark without multiple-choice items; else none (an effect size)."""
    if result.reason is None:
        return None
    return Verdict(
        detector="ts_guessing",
        test="TS-Guessing (Deng et al.): masked wrong option, exact match",
        contaminated=None,
        pvalue=float("nan"),
        reason=f"{result.reason}: TS-Guessing masks an option of multiple-choice items",
    )


def _console(result: TsGuessingResult) -> str:
    if result.reason is not None:
        return f"ts-guessing not tested: {result.reason}"
    line = (
        f"ts-guessing exact-match={percent(result.exact_match_rate)} rouge-l={number(result.rouge_l.mean)} "
        f"({result.n_asked} asked, {result.n_skipped} skipped)"
    )
    return line + (f" auc={number(result.rouge_l.auc)}" if result.rouge_l.auc is not None else "")


def _section(result: TsGuessingResult, figures) -> str:
    if result.reason is not None:
        return f"<p>Not tested: {text(result.reason)} (TS-Guessing masks a wrong option of multiple-choice items).</p>"
    pairs = [
        ("items asked / skipped by the authors' filter", f"{text(result.n_asked)} / {text(result.n_skipped)}"),
        ("exact-match rate", percent(result.exact_match_rate)),
        ("mean ROUGE-L F1", text(result.rouge_l.mean)),
    ]
    for name, summary in (("exact match", result.exact_match), ("ROUGE-L", result.rouge_l)):
        if summary.auc is not None:
            pairs += [
                (f"{name} AUC, contaminated vs clean", text(summary.auc)),
                (f"{name} one-sided Mann-Whitney p", text(summary.pvalue)),
            ]
    return (
        "<p>Per multiple-choice item, one wrong option is masked and the model asked to fill it in (Deng et al.'s "
        "prompt, greedy); its guess against the masked option. Higher means more likely seen. Effect sizes with no "
        "test, so no verdict.</p>\n" + facts(pairs)
    )


TS_GUESSING_STAGE = DetectorStage(
    name="ts_guessing",
    settings_type=TsGuessingSettings,
    result_type=TsGuessingResult,
    per_item=PerItemWork(_records, _resume_key, lambda settings: COLUMNS, clock="answer"),
    result=_result,
    summary_entry=TsGuessingResult.to_dict,
    read_entry=TsGuessingResult.from_dict,
    title="TS-Guessing (masked option)",
    headline=_headline,
    view=DetectorView(_console, _section),
)
