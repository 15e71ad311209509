"""Benchmarks as one item schema, paraphrase sources, and lazy corpus readers."""

from jaxcontam.data.corpus import Corpus, CorpusShard, Document, open_corpus
from jaxcontam.data.item import Benchmark, Item, default_prompt, normalize_text
from jaxcontam.data.paraphrases import BUILTIN_SOURCES, attach_paraphrases, load_paraphrases
from jaxcontam.data.registry import list_benchmarks, load_benchmark

__all__ = [
    "BUILTIN_SOURCES",
    "Benchmark",
    "Corpus",
    "CorpusShard",
    "Document",
    "Item",
    "attach_paraphrases",
    "default_prompt",
    "list_benchmarks",
    "load_benchmark",
    "load_paraphrases",
    "normalize_text",
    "open_corpus",
]
