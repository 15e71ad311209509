# pyright: standard
"""ReCaLL as a detector of the audit (`detect.recall`): per item, LL(x | a non-member prefix) / LL(x) of the solved
text, summarised per benchmark with, given labels, its AUC; a score with no test, so no verdict. Opt-in
(`[recall]`, keys `prefix_file` and `shots`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from jaxcontam.dataclass_config import table_values
from jaxcontam.detect.recall import (
    COLUMNS,
    RecallResult,
    RecallSettings,
    nonmember_texts,
    recall_records,
    recall_result,
)
from jaxcontam.detect.stage import DetectorStage, DetectorView, PerItemWork, StageInput, fingerprint
from jaxcontam.errors import JaxcontamError
from jaxcontam.report.formatting import number
from jaxcontam.report.html_parts import facts, text


def _records(stage_input: StageInput, settings: RecallSettings, items) -> list[dict]:
    return recall_records(stage_input.model, stage_input.target.benchmark, items, settings)


def _resume_key(stage_input: StageInput, settings: RecallSettings) -> dict:
    """The prefix's texts (by content: an edited file is scored again) and the items whose longest one the prefix is
    cut beside (a longer `limit` may cut it shorter)."""
    items = [item.id for item in stage_input.target.benchmark]
    return {"prefix": fingerprint({"texts": list(nonmember_texts(settings))}), "pool": fingerprint({"items": items})}


def _result(stage_input: StageInput, settings: RecallSettings, rows: list[dict]) -> RecallResult | None:
    return recall_result(rows, settings)


def _parse_table(table: dict, where: str) -> RecallSettings:
    """[recall]'s keys; a relative `prefix_file` is read from the TOML file's folder, as every path there is."""
    values = table_values(table, [RecallSettings], f"{where} [recall]")
    path = values.get("prefix_file")
    if isinstance(path, str) and not Path(path).is_absolute() and (Path(where).parent / path).exists():
        values["prefix_file"] = str(Path(where).parent / path)
    try:
        return RecallSettings(**values)
    except JaxcontamError as error:
        raise JaxcontamError(f"{where} {error}") from None


def _console(result: RecallResult) -> str:
    summary = result.summary
    auc = "" if summary.auc is None else f" AUC={number(summary.auc)}"
    return f"ReCaLL mean={number(summary.mean)}{auc}"


def _section(result: RecallResult, figures: Mapping[str, Path]) -> str:
    summary = result.summary
    rows = [
        ("mean ReCaLL, LL(x | P) / LL(x)", text(summary.mean)),
        ("median", text(summary.median)),
        (
            "non-member prefix",
            f"{text(result.prefix_source)}: {text(result.prefix_texts)} text(s), {text(result.prefix_tokens)} tokens",
        ),
    ]
    if summary.auc is not None:
        rows.append(("AUC, known contaminated vs clean", text(summary.auc)))
    return (
        "<p>Per item, the mean log-prob of the solved text after a prefix of known non-member texts over its mean "
        "log-prob alone; higher means more likely seen (a seen text loses more likelihood after a non-member "
        "prefix). A score with no test, so no verdict.</p>\n" + facts(rows)
    )


RECALL_STAGE = DetectorStage(
    name="recall",
    settings_type=RecallSettings,
    result_type=RecallResult,
    per_item=PerItemWork(_records, _resume_key, lambda settings: COLUMNS, clock="score"),
    result=_result,
    summary_entry=RecallResult.to_dict,
    read_entry=RecallResult.from_dict,
    title="ReCaLL",
    parse_table=_parse_table,
    view=DetectorView(_console, _section),
)
