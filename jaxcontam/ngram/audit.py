"""Benchmarks x corpora -> reusable counts -> per-item ConTAM metrics (what `jaxcontam ngram` runs).

Each item is scored on its item text (`item_text`: the item as the model sees it, one segment,
without the header lines every item shares). `scope="fields"` also scores its question side and
answer side, each as its own text, reported as `<metric>_question` / `<metric>_answer` beside the
item columns.

Counts are kept per *view*: "raw" (text encoded as is) and "normalized" (lowercased, punctuation
stripped before encoding, on both the item and the corpus side). `normalize="paper"` takes
TOKEN_MATCH and NGRAM_MATCH from the normalised view (the PaLM / Llama 2 style overlap metrics,
robust to casing and punctuation changes in the copy) and TOKEN_EXTEND and LONGEST_MATCH from the
raw one (a span of the text as written), as ConTAM does; with the default skip_budget = 0,
TOKEN_EXTEND and TOKEN_MATCH are then the same metric on the two views. "none" uses raw for all
four, "all" normalised for all four. `<out>/counts/<view>.npz` holds the table (with
back-references) and its counts, with the tokenizer, n, scope, corpora and a checksum, so a rerun
with other metric options (mincount, skip_budget) reads them instead of rescanning.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from jaxcontam.cluster import from_writer, is_writer
from jaxcontam.dataclass_config import check_ranges, ranged
from jaxcontam.errors import DataError
from jaxcontam.ngram.item_text import SCOPES, item_text
from jaxcontam.ngram.metrics import table_scores
from jaxcontam.ngram.store import read_npz, write_npz
from jaxcontam.ngram.stream import CountView, count_corpus, from_process_zero, process_checkpoint
from jaxcontam.ngram.table import ItemUnits, NgramTable, build_table, encode_items
from jaxcontam.ngram.units import normalize_for_matching
from jaxcontam.storage import publish

METRICS = ("token_match", "ngram_match", "token_extend", "longest_match")
VIEW_OF_METRIC = {
    "paper": {"token_match": "normalized", "ngram_match": "normalized", "token_extend": "raw", "longest_match": "raw"},
    "none": dict.fromkeys(METRICS, "raw"),
    "all": dict.fromkeys(METRICS, "normalized"),
}


@dataclasses.dataclass(frozen=True)
class NgramSettings:
    n: int = ranged(8, at_least=1)
    scope: str = "item"
    normalize: str = "paper"

    def __post_init__(self):
        check_ranges(self, "[ngram]")
        if self.scope not in SCOPES:
            raise DataError(
                f"scope={self.scope!r}: choose 'item' (the item as the model sees it) or 'fields' "
                f"(also its question and answer, each scored on its own)"
            )
        if self.normalize not in VIEW_OF_METRIC:
            raise DataError(f"normalize={self.normalize!r}: choose one of {', '.join(VIEW_OF_METRIC)}")
        if self.n < 1:
            raise DataError(f"--n {self.n}: n must be a positive number of units (the paper uses 8)")

    @property
    def views(self) -> tuple[str, ...]:
        needed = set(VIEW_OF_METRIC[self.normalize].values())
        return tuple(v for v in ("raw", "normalized") if v in needed)


@dataclasses.dataclass(frozen=True)
class NgramScoring:
    """How counted n-grams score an item (applied after counting, so changing these reuses the counts):
    an n-gram is contaminated when its corpus count is >= `mincount`; a matched span may hold `skip_budget`
    unmatched units in total (TOKEN_EXTEND, LONGEST_MATCH; Llama 2's rule)."""

    mincount: int = ranged(1, at_least=1)
    skip_budget: int = ranged(0, at_least=0)

    def __post_init__(self):
        check_ranges(self, "[ngram]")
        if self.mincount < 1 or self.skip_budget < 0:
            raise DataError(
                f"mincount={self.mincount}, skip_budget={self.skip_budget}: mincount must be >= 1 and skip_budget >= 0"
            )


def _scored_texts(benchmarks, scope: str):
    """(benchmark, item, column suffix, text) of every text to score, item by item ("" = the whole item)."""
    for benchmark in benchmarks:
        for item in benchmark:
            for suffix, text in item_text(benchmark, item).texts(scope).items():
                yield benchmark, item, suffix, text


def _keyed_segments(benchmarks, scope: str):
    for benchmark, item, suffix, text in _scored_texts(benchmarks, scope):
        yield f"{benchmark.name}/{item.id}" + (f"#{suffix}" if suffix else ""), [text]


def build_tables(benchmarks: Sequence, units, settings: NgramSettings) -> dict[str, NgramTable]:
    """One table per needed view over all items of all benchmarks."""
    tables = {}
    for view in settings.views:
        transform = normalize_for_matching if view == "normalized" else None
        items = encode_items(_keyed_segments(benchmarks, settings.scope), units, transform)
        tables[view] = build_table(items, settings.n)
    return tables


def _header(units, settings: NgramSettings, corpora: Sequence[str], table: NgramTable, view: str) -> dict:
    # tokenizer first: a different tokenizer is the mismatch users most need named
    return {
        "tokenizer_sha256": units.sha256,
        "tokenizer": units.name,
        "n": settings.n,
        "scope": settings.scope,
        "view": view,
        "corpora": list(corpora),
        "table_sha256": table.checksum,
    }


def _table_arrays(table: NgramTable, counts: np.ndarray) -> dict[str, np.ndarray]:
    items = table.items
    return {
        "keys": table.keys,
        "ngrams": table.ngrams,
        "position_ngram": table.position_ngram,
        "counts": counts,
        "item_keys": np.array(items.keys, dtype=str),
        "item_tokens": items.tokens,
        "segment_offsets": items.segment_offsets,
        "item_segments": items.item_segments,
    }


def save_counts(path: str | Path, table: NgramTable, counts: np.ndarray, header: dict) -> None:
    write_npz(path, _table_arrays(table, counts), header)


def load_counts(path: str | Path, expect: dict | None = None) -> tuple[NgramTable, np.ndarray, dict]:
    """(table, counts, header) from a counts file, refusing other settings or a corrupted file."""
    arrays, header = read_npz(path, expect)
    items = ItemUnits(
        tuple(arrays["item_keys"].tolist()), arrays["item_tokens"], arrays["segment_offsets"], arrays["item_segments"]
    )
    table = NgramTable(int(header["n"]), arrays["keys"], arrays["ngrams"], items, arrays["position_ngram"])
    return table, arrays["counts"], header


def ensure_counts(
    benchmarks: Sequence,
    corpora: Sequence[tuple[str, object]],
    units,
    settings: NgramSettings,
    counts_dir: str | Path,
    *,
    chunk_tokens: int = 1 << 20,
) -> tuple[dict[str, tuple[NgramTable, np.ndarray]], bool]:
    """Counts per view, read from `counts_dir` when present, else counted (one pass for all missing views) and saved.

    `corpora` is a list of (name, Corpus). Returns ({view: (table, counts)}, scanned).
    A counts file from other settings (tokenizer, n, scope, corpora, items) is refused.
    Under `jax.distributed` every process counts its share and process 0 writes the files; on a rerun process 0
    reads them and sends the counts to the others (whose disks need not hold them).
    """
    counts_dir = Path(counts_dir)
    tables = build_tables(benchmarks, units, settings)
    names = [name for name, _ in corpora]
    headers = {view: _header(units, settings, names, table, view) for view, table in tables.items()}
    paths = {view: counts_dir / f"{view}.npz" for view in tables}
    saved: dict[str, np.ndarray] = {}

    def read_saved() -> list[str]:  # on process 0 alone: the views whose counts are saved (checked)
        saved.update({view: load_counts(paths[view], headers[view])[1] for view in tables if paths[view].exists()})
        return list(saved)

    counted = {
        view: (tables[view], from_process_zero(saved.get(view), len(tables[view]))) for view in from_writer(read_saved)
    }
    missing = [view for view in tables if view not in counted]
    if not missing:
        return counted, False
    views = [CountView(tables[v], normalize=(v == "normalized")) for v in missing]
    totals = [np.zeros(len(tables[v]), np.int64) for v in missing]
    checkpoints = [counts_dir / f"checkpoint-{index}.npz" for index in range(len(corpora))]
    for (_, corpus), checkpoint in zip(corpora, checkpoints):
        result = count_corpus(views, corpus, units, chunk_tokens=chunk_tokens, checkpoint=checkpoint)
        totals = [a + b for a, b in zip(totals, result.counts)]
    for view, counts in zip(missing, totals):
        if is_writer():
            save_counts(paths[view], tables[view], counts, headers[view])
        counted[view] = (tables[view], counts)
    for checkpoint in checkpoints:
        process_checkpoint(checkpoint).unlink(missing_ok=True)
    return {view: counted[view] for view in tables}, True


def _span_text(units, text: str, start: int, end: int) -> str:
    """The characters of `text` (as `units` show it) that units [start, end) were encoded from."""
    if start >= end:
        return ""
    spans = units.char_spans(text)
    return units.shown_text(text)[spans[start][0] : spans[end - 1][1]]


def item_rows(
    benchmarks: Sequence,
    counted: dict[str, tuple[NgramTable, np.ndarray]],
    units,
    settings: NgramSettings,
    *,
    mincount: int = NgramScoring.mincount,
    skip_budget: int = NgramScoring.skip_budget,
) -> list[dict]:
    """One dict per item: id, benchmark, num_tokens, the four metrics and the longest span's text.

    With scope "fields", also num_tokens_<field> and <metric>_<field> for field in question, answer.
    """
    scores = {
        view: table_scores(table, counts, mincount=mincount, skip_budget=skip_budget)
        for view, (table, counts) in counted.items()
    }
    view_of = VIEW_OF_METRIC[settings.normalize]
    transform = normalize_for_matching if view_of["longest_match"] == "normalized" else (lambda s: s)
    rows: dict[tuple[str, str], dict] = {}
    for index, (benchmark, item, suffix, text) in enumerate(_scored_texts(benchmarks, settings.scope)):
        row = rows.setdefault((benchmark.name, item.id), {"benchmark": benchmark.name, "id": item.id})
        column = f"_{suffix}" if suffix else ""
        span = scores[view_of["longest_match"]][index]
        row[f"num_tokens{column}"] = span.num_units
        row.update({f"{m}{column}": getattr(scores[view_of[m]][index], m) for m in METRICS})
        if not suffix:
            row["longest_match_text"] = _span_text(units, transform(text), *span.longest_span)
    return list(rows.values())


def write_items_parquet(rows: list[dict], path: str | Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = list(dict.fromkeys(column for row in rows for column in row))
    table = pa.table({c: [r[c] for r in rows] for c in columns})
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    publish(path)
