# pyright: standard
"""CDD as a detector of the audit (opt-in: `[cdd]`): per item, the greedy output and `samples` sampled ones of its
prompt, all generated on the device in one batched call each (every item's samples together), then the peakedness
of the samples around the greedy output (`detect.cdd`); an effect size, no test, so no verdict."""

from __future__ import annotations

import hashlib

from jaxcontam.detect.cdd import CddResult, CddSettings, cdd_result, peakedness
from jaxcontam.detect.stage import DetectorStage, DetectorView, PerItemWork, StageInput
from jaxcontam.engine.chat import chat_prompt, encode_chat
from jaxcontam.engine.generation import generate
from jaxcontam.report.formatting import number, percent
from jaxcontam.report.html_parts import facts, text

COLUMNS = ("cdd_peakedness", "cdd_flagged", "cdd_distances", "cdd_greedy_tokens")


def sample_key(item_id: str, sample: int) -> int:
    """The sampling key of an item's `sample`-th output (with the audit's seed: `generate`'s `sample_keys`), the
    same however items are chunked."""
    return int.from_bytes(hashlib.sha256(f"{item_id}:{sample}".encode()).digest()[:4], "big") % 2**31


def cdd_records(model, benchmark, items, settings: CddSettings, seed: int) -> list[dict]:
    """Per item: the peakedness of its samples around its greedy output, whether it exceeds xi, each sample's edit
    distance to the greedy output (their first `compared_tokens` tokens) and the greedy output's length in tokens."""
    tokenizer, mode = model.tokenizer, settings.chat_template
    prompts = [encode_chat(tokenizer, chat_prompt(tokenizer, benchmark.prompt(item), mode), mode) for item in items]
    # tokens after the first compared_tokens are never compared, so they are not generated
    longest = min(settings.max_new_tokens, settings.compared_tokens)
    room = max(1, min(longest, model.config.max_position - max(map(len, prompts))))
    greedy = generate(model, prompts, max_new_tokens=room, temperature=0.0)
    count = settings.samples
    sampled = generate(
        model,
        [prompt for prompt in prompts for _ in range(count)],
        max_new_tokens=room,
        temperature=settings.temperature,
        seed=seed,
        sample_keys=[sample_key(item.id, j) for item in items for j in range(count)],
    )
    records = []
    for i, item in enumerate(items):
        samples = [g.token_ids for g in sampled[i * count : (i + 1) * count]]
        peak, distances = peakedness(samples, greedy[i].token_ids, settings.edit_fraction, settings.compared_tokens)
        records.append(
            {
                "id": item.id,
                "cdd_peakedness": peak,
                "cdd_flagged": bool(peak > settings.xi),
                "cdd_distances": distances,
                "cdd_greedy_tokens": len(greedy[i].token_ids),
            }
        )
    return records


def _records(stage_input: StageInput, settings: CddSettings, items) -> list[dict]:
    return cdd_records(stage_input.model, stage_input.target.benchmark, items, settings, stage_input.seed)


def _resume_key(stage_input: StageInput, settings: CddSettings) -> dict:
    """Every setting and the audit's seed (the samples depend on it)."""
    return {
        "samples": settings.samples,
        "temperature": settings.temperature,
        "max_new_tokens": settings.max_new_tokens,
        "compared_tokens": settings.compared_tokens,
        "edit_fraction": settings.edit_fraction,
        "xi": settings.xi,
        "chat_template": settings.chat_template,
        "seed": stage_input.seed,
    }


def _result(stage_input: StageInput, settings: CddSettings, rows: list[dict]) -> CddResult:
    return cdd_result(rows)


def _console(result: CddResult) -> str:
    peak = result.peakedness
    line = f"cdd flagged={percent(result.flagged_share)} peakedness={number(peak.mean)}"
    return line + (f" auc={number(peak.auc)}" if peak.auc is not None else "")


def _section(result: CddResult, figures) -> str:
    peak = result.peakedness
    pairs = [
        ("items sampled", text(result.n_items)),
        ("share flagged (peakedness > xi)", percent(result.flagged_share)),
        ("mean peakedness", text(peak.mean)),
        ("median peakedness", text(peak.median)),
    ]
    if peak.auc is not None:
        pairs += [
            ("peakedness AUC, contaminated vs clean", text(peak.auc)),
            ("one-sided Mann-Whitney p", text(peak.pvalue)),
            ("contaminated / clean items", f"{text(peak.n_contaminated)} / {text(peak.n_clean)}"),
        ]
    return (
        "<p>Per item, the share of sampled outputs within alpha times the longest output's length (in token edits, "
        "each output's first tokens) of the greedy output (Dong et al.'s peakedness); an item is flagged when it "
        "exceeds xi. Higher means more likely seen. Effect sizes with no test, so no verdict.</p>\n" + facts(pairs)
    )


CDD_STAGE = DetectorStage(
    name="cdd",
    settings_type=CddSettings,
    result_type=CddResult,
    per_item=PerItemWork(_records, _resume_key, lambda settings: COLUMNS, clock="answer"),
    result=_result,
    summary_entry=CddResult.to_dict,
    read_entry=CddResult.from_dict,
    title="CDD (output distribution)",
    view=DetectorView(_console, _section),
)
