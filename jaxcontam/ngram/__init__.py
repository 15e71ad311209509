"""Corpus evidence: benchmark n-gram tables, streaming corpus counts, ConTAM metrics, decontamination.

units = load_units("path/to/tokenizer")                 # or "words"
texts = [(f"{b.name}/{it.id}", [item_text(b, it).whole]) for it in b]   # the item as the model sees it
table = build_table(encode_items(texts, units), n=8)
result = count_corpus([CountView(table)], corpus, units)  # one pass, checkpointed, multi-process
scores = table_scores(table, result.counts[0], mincount=1, skip_budget=0)
"""

from jaxcontam.ngram.audit import NgramScoring, NgramSettings, ensure_counts, item_rows, load_counts, save_counts
from jaxcontam.ngram.filter import DecontaminationFilter
from jaxcontam.ngram.hashing import window_fingerprints
from jaxcontam.ngram.item_text import ItemText, item_text
from jaxcontam.ngram.metrics import ItemScores, item_scores, table_scores
from jaxcontam.ngram.stream import ChunkPacker, CorpusCounts, CountView, count_corpus
from jaxcontam.ngram.table import FingerprintCollisionError, NgramTable, build_table, encode_items
from jaxcontam.ngram.units import load_units, normalize_for_matching, tokenizer_from_tiktoken

__all__ = [
    "ChunkPacker",
    "CorpusCounts",
    "CountView",
    "DecontaminationFilter",
    "FingerprintCollisionError",
    "ItemScores",
    "ItemText",
    "NgramScoring",
    "NgramSettings",
    "NgramTable",
    "build_table",
    "count_corpus",
    "encode_items",
    "ensure_counts",
    "item_rows",
    "item_scores",
    "item_text",
    "load_counts",
    "load_units",
    "normalize_for_matching",
    "save_counts",
    "table_scores",
    "tokenizer_from_tiktoken",
    "window_fingerprints",
]
