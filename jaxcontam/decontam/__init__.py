"""Decontamination: which corpus documents hold which benchmark items, and a cleaned copy of the corpus.

index = DecontIndex.build(benchmark_items([load_benchmark("gsm8k")]))   # GPT-3's rule: words, 13-grams
find(index, text)                  # [Match(benchmark, item_id, ngrams, longest, start, end), ...]
clean(index, text, "spans")        # the kept slices (GPT-3 / Janitor), or "drop" / "annotate"
run_decontamination(...)           # shards -> matches, per-item counts, cleaned shards, summary (one host or Ray)
"""

from jaxcontam.decontam.index import DecontIndex, IndexSettings, ItemSides, benchmark_items
from jaxcontam.decontam.matching import (
    POLICIES,
    DocumentResult,
    Match,
    Policy,
    SpanSettings,
    apply_policy,
    clean,
    find,
    find_batch,
    kept_slices,
)
from jaxcontam.decontam.rules import PRESETS, Preset, word_spans, words

__all__ = [
    "POLICIES",
    "PRESETS",
    "DecontIndex",
    "DocumentResult",
    "IndexSettings",
    "ItemSides",
    "Match",
    "Policy",
    "Preset",
    "SpanSettings",
    "apply_policy",
    "benchmark_items",
    "clean",
    "find",
    "find_batch",
    "kept_slices",
    "word_spans",
    "words",
]
