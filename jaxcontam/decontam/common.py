"""N-grams common in the corpus (`--drop-common K`): a first pass counts, per benchmark n-gram, the documents that
hold it; those held by more than K documents are left out of the run and listed apart.

A benchmark n-gram in many documents of a corpus is boilerplate the benchmark shares with the world (a licence
line, a template sentence, a famous quotation), not a copy of an item: Marin's per-source frequency filter, and the
precision table of docs/decontamination.md, are why. The count is over the same documents and the same lookup as
the run (bad lines left out), per shard, committed under OUT/common/ so a rerun or a reproduction reuses it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxcontam.decontam.index import DecontIndex
from jaxcontam.decontam.shards import BadLine, Destination, ShardSpec, read_records

BATCH_CHARACTERS = 1 << 22  # text per find_batch call, in this pass and in the run's (`decontam.run`)
SHOWN = 200  # dropped n-grams named in summary.json (the most common first); the count covers them all


def marker(shard: ShardSpec) -> str:
    return f"common/{shard.label}.json"


def count_shard(index: DecontIndex, shard: ShardSpec, settings: Any, out: str) -> dict[str, Any]:
    """{"shard", "documents", "rows": [[row, documents holding it], ...]} of one shard (read back when counted)."""
    destination = Destination(out)
    if destination.exists(marker(shard)):
        return json.loads(destination.read_bytes(marker(shard)))
    counts = np.zeros(len(index.table.keys), np.int64)
    documents = 0
    batch: list[str] = []
    size = 0

    def flush() -> None:
        nonlocal documents
        if not batch:
            return
        ids, ends = index.encode_joined(batch)
        hits = index.lookup(ids, ends)
        if len(hits.starts):
            document = np.searchsorted(ends, hits.starts, side="right")
            pairs = np.unique(np.stack([document, hits.rows.astype(np.int64)]), axis=1)
            counts[:] += np.bincount(pairs[1], minlength=len(counts))
        documents += len(batch)

    for record in read_records(shard, settings.text_field, None):
        if isinstance(record, BadLine):
            continue
        batch.append(record.text)
        size += len(record.text)
        if size >= BATCH_CHARACTERS:
            flush()
            batch, size = [], 0
    flush()
    rows = np.flatnonzero(counts)
    result = {"shard": shard.label, "documents": documents, "rows": np.stack([rows, counts[rows]], 1).tolist()}
    destination.write_bytes(marker(shard), json.dumps(result).encode())
    return result


def document_counts(index: DecontIndex, per_shard: Sequence[dict[str, Any]]) -> tuple[np.ndarray, int]:
    """(documents holding each table row, documents counted) over every shard."""
    counts = np.zeros(len(index.table.keys), np.int64)
    for shard in per_shard:
        if shard["rows"]:
            rows = np.asarray(shard["rows"], np.int64)
            np.add.at(counts, rows[:, 0], rows[:, 1])
    return counts, sum(s["documents"] for s in per_shard)


def common_rows(counts: np.ndarray, limit: int) -> np.ndarray:
    """The rows held by more than `limit` documents."""
    return np.flatnonzero(counts > limit)


def summary_entry(index: DecontIndex, counts: np.ndarray, documents: int, limit: int) -> dict[str, Any]:
    """summary.json's `common_ngrams`: the limit, what was counted, and the dropped n-grams (most common first)."""
    rows = common_rows(counts, limit)
    rows = rows[np.argsort(-counts[rows], kind="stable")]
    shown = [
        {
            "ngram": index.row_text(int(r)),
            "documents": int(counts[r]),
            "items": [index.items[i].key for i in index.row_items(int(r)).tolist()],
        }
        for r in rows[:SHOWN]
    ]
    return {"limit": limit, "documents_counted": documents, "dropped": len(rows), "ngrams": shown}
