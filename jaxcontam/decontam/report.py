"""report.html of a decontamination run, rendered from its typed summary (`DecontSummary`): the page a run writes
and the page rendered again from its summary.json read back (`render(read_summary(path))`) are the same."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from jaxcontam.decontam.manifest import DecontSummary, Manifest

STYLE = "body{font-family:sans-serif}td,th{padding:2px 8px;border-bottom:1px solid #ddd}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def render(summary: DecontSummary) -> str:
    """The whole page: totals, benchmarks, items no copy can match, common n-grams left out, shards, manifest."""
    total = summary.total
    benchmarks = _table(
        ["benchmark", "items", "items found", "documents holding one", "documents removed", f"{summary.units} removed"],
        [
            [name, b["items"], b["items_found"], b["documents"], b["removed_documents"], b["removed_units"]]
            for name, b in summary.benchmarks.items()
        ],
    )
    shards = _table(
        ["shard", "documents", "matched", "removed", "split", "bad lines", "named", "skipped lines kept in"],
        [
            [name, s["documents"], s["matched"], s["removed"], s["split"], s["bad_lines"], "; ".join(s["bad"][:5])]
            + [summary.rejects.get(name, "")]
            for name, s in summary.shards.items()
        ],
    )
    policy = summary.manifest.run.get("policy") if summary.manifest else summary.extra.get("policy")
    return (
        f"<!doctype html><meta charset='utf-8'><title>jaxcontam decontaminate</title><style>{STYLE}</style>"
        f"<h1>Decontamination</h1><p>{total['documents']} documents ({total['units']} {summary.units}), "
        f"{total['matched']} holding a benchmark item, {total['removed']} removed, {total['split']} split; policy "
        f"{html.escape(str(policy))}; {total['bad_lines']} bad lines.</p>"
        f"<h2>Benchmarks</h2>{benchmarks}{_not_findable(summary.not_findable or ())}"
        f"{_common(summary.common_ngrams)}<h2>Shards</h2>{shards}" + _manifest(summary.manifest)
    )


def _not_findable(items: Sequence[Mapping[str, Any]]) -> str:
    """The items no copy can match (shorter than the floor), with the reason: a clean run says nothing of them."""
    if not items:
        return ""
    rows = [[item.get("benchmark", ""), item.get("item", ""), item.get("reason", "")] for item in items]
    return (
        f"<h2>Not findable ({len(items)} items)</h2><p>These items are too short to be told from chance matches: "
        "no copy of them is looked for, so their absence above is no evidence.</p>"
        + _table(["benchmark", "item", "why"], rows)
    )


def _common(common: Mapping[str, Any] | None) -> str:
    """The n-grams `--drop-common` left out: held by more documents than the limit, so no flag stands on them."""
    if not common:
        return ""
    rows = [
        [c["ngram"], c["documents"], ", ".join(c["items"][:5]) + (" ..." if len(c["items"]) > 5 else "")]
        for c in common["ngrams"]
    ]
    return (
        f"<h2>Common n-grams left out ({common['dropped']})</h2><p>Benchmark n-grams found in more than "
        f"{common['limit']} of the {common['documents_counted']} documents: boilerplate a benchmark shares with the "
        "corpus, not copies; no match above rests on them.</p>" + _table(["n-gram", "documents", "items"], rows)
    )


def _manifest(manifest: Manifest | None) -> str:
    """The manifest: what the run read (benchmark files and rows, the table, the shards), by hash."""
    if manifest is None:
        return ""
    files = [
        [b.name, b.loaded_split, b.items, *((f.path, f.bytes, f.sha256) if f else ("(hub)", "", ""))]
        for b in manifest.benchmarks
        for f in b.files or (None,)
    ]
    rows = [[b.name, b.rows_sha256] for b in manifest.benchmarks]
    size = sum(s.bytes for s in manifest.shards)
    return (
        f"<h2>Manifest</h2><p>jaxcontam {html.escape(manifest.jaxcontam_version)}; n-gram table "
        f"{manifest.index.table_ngrams} n-grams, sha256 {manifest.index.table_sha256}; {len(manifest.shards)} input "
        f"shards, {size} bytes (each with its sha256 in summary.json). Repeat the run: "
        "<code>jaxcontam decontaminate --reproduce OUT/summary.json --out OUT2</code>.</p>"
        + _table(["benchmark", "split", "items", "file", "bytes", "sha256"], files)
        + _table(["benchmark", "rows sha256"], rows)
    )
