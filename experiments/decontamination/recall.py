"""Recall on reformatted copies and false positives on clean text: jaxcontam's word and token modes vs the Janitor
and datatrove.

200 items (50 each of GSM8K test, MMLU test, HellaSwag validation, TruthfulQA), each the text the model sees, are
planted into 200 host documents (Pile records and 1,500-character pieces of the Gutenberg books, Shakespeare and
the addresses) in six forms:
  1 verbatim; 2 re-wrapped at 40 columns (`fmt`-style: lines broken at spaces only); 3 a markdown quote (odd
  items) or a markdown list of its lines (even items); 4 HTML-escaped (`html.escape`); 5 lowercased; 6 a dataset
  JSON row ({"question": ..., "answer": ...} as `json.dumps` writes it).
10,000 other host documents hold nothing planted (false positives). A document counts as flagged when the tool
finds any benchmark n-gram in it.
  jaxcontam words   gpt3 rule, 13-grams of the item as the model sees it;
  jaxcontam tokens  GPT-2 tokens, 8-grams (`ngram`'s default) and 13-grams;
  Janitor           lm-eval's, Python mode, 13-grams of the same item texts;
  datatrove         NGramsDecontFilter, its defaults: NLTK words, 12-grams of the answer and the question/answer
                    overlap (the question is the item's question side, the answer its answer side).
Writes recall.json and recall.md beside this file. Usage: .venv/bin/python experiments/decontamination/recall.py
"""

from __future__ import annotations

import contextlib
import gzip
import html
import io
import json
import os
import random
import sys
import tempfile
import textwrap
import types
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("JAXCONTAM_SHARED_DATA", REPO.parent / "shared" / "data"))
FORMS = ("verbatim", "rewrapped_40", "markdown", "html_escaped", "lowercased", "json_row")
BENCHMARKS = {"gsm8k": {"split": "test"}, "mmlu": {}, "hellaswag": {}, "truthfulqa": {}}


def hosts(count: int, rng: random.Random) -> list[str]:
    texts = []
    for path in sorted((DATA / "mimir_pile_nonmembers").rglob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            texts += [json.loads(line)["text"][:6000] for line in f]
    books = sorted((DATA / "corpus_gutenberg" / "books").glob("*.txt")) + sorted((DATA / "corpus_misc").rglob("*.txt"))
    for path in books:
        book = path.read_bytes().decode("utf-8", "replace")  # one address file holds Latin-1 bytes
        texts += [book[i : i + 1500] for i in range(0, len(book), 1500)]
    texts = [t for t in texts if len(t.split()) >= 20]
    rng.shuffle(texts)
    return texts[:count]


def form(text: str, question: str, answer: str, name: str, k: int) -> str:
    if name == "verbatim":
        return text
    if name == "rewrapped_40":
        return "\n".join(
            textwrap.fill(line, 40, break_long_words=False, break_on_hyphens=False) for line in text.splitlines()
        )
    if name == "markdown":
        lines = [line for line in text.splitlines() if line.strip()]
        return "\n".join(("> " if k % 2 else "- ") + line for line in lines)
    if name == "html_escaped":
        return html.escape(text)
    if name == "lowercased":
        return text.lower()
    return json.dumps({"question": question, "answer": answer})


def plant(host: str, copy: str, rng: random.Random) -> str:
    cut = host.find("\n", rng.randrange(len(host) // 2 + 1))
    cut = len(host) if cut < 0 else cut
    return f"{host[:cut]}\n{copy}\n{host[cut:]}"


def main() -> None:
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    sys.path.insert(0, str(REPO))
    from jaxcontam.data import load_benchmark
    from jaxcontam.decontam import DecontIndex, IndexSettings, benchmark_items, find_batch, words

    rng = random.Random(0)
    loaded = [load_benchmark(name, path=None, **options) for name, options in BENCHMARKS.items()]
    items = []
    for benchmark in loaded:
        chosen = benchmark_items([benchmark])
        items += rng.sample(chosen, 50)
    documents = hosts(200 * len(FORMS) + 10_000, rng)
    planted = {name: [] for name in FORMS}
    for f, name in enumerate(FORMS):
        for k, item in enumerate(items):
            copy = form(item.whole, item.question, item.answer, name, k)
            planted[name].append(plant(documents[f * 200 + k], copy, rng))
    clean = documents[200 * len(FORMS) :]
    print(f"{len(items)} items, {len(clean)} clean documents")

    def flags(tool) -> dict[str, object]:
        out: dict[str, object] = {name: float(np.mean(tool(planted[name]))) for name in FORMS}
        out["false_positive_documents"] = int(np.sum(tool(clean)))
        return out

    results = {}

    def ours(index):
        def tool(texts):
            return [bool(r.matches) for r in find_batch(index, texts)]

        return tool

    words_index = DecontIndex.build(items)
    results["jaxcontam words (gpt3, 13)"] = flags(ours(words_index))
    missed = [i.key for i, r in zip(items, find_batch(words_index, planted["verbatim"])) if not r.matches]
    print("verbatim copies missed in word mode:", missed, [len(words(i.whole)) for i in items if i.key in missed])
    tiktoken = str(DATA / "gpt2_tokenizer_whisper" / "gpt2.tiktoken")
    for n in (8, 13):
        index = DecontIndex.build(items, IndexSettings(unit="tokens", tokenizer=tiktoken, n=n))
        results[f"jaxcontam tokens (GPT-2, {n})"] = flags(ours(index))
    print(json.dumps(results, indent=1))

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        from lm_eval.decontamination import janitor as janitor_module

        janitor = janitor_module.Janitor()
    for item in items:
        janitor.register_contaminant_python(item.whole)

    def janitor_tool(texts):
        return [
            any(
                janitor.normalize_string(gram) in janitor.dirt_ngrams
                for gram, _ in janitor_module.word_ngrams_indices(t, 13)
            )
            for t in texts
        ]

    results["lm-eval Janitor (13)"] = flags(janitor_tool)

    from datatrove.data import Document
    from datatrove.pipeline.decont.n_grams import NGramsDecontConfig, NGramsDecontFilter, NGramsDecontIndexer
    from datatrove.utils.hashing import HashConfig, create_hash_func
    from datatrove.utils.word_tokenizers import WordTokenizer
    from loguru import logger
    from nltk.tokenize.destructive import NLTKWordTokenizer

    class NltkWords(WordTokenizer):  # datatrove's NLTK tokenizer without Punkt's data file (one sentence)
        def word_tokenize(self, text):
            return [t for t in NLTKWordTokenizer().tokenize(text) if t.strip()]

        def sent_tokenize(self, text):
            return [text]

        def span_tokenize(self, text):
            raise NotImplementedError

    logger.remove()
    config = NGramsDecontConfig(n_grams=12, hash_config=HashConfig(hash_fc="sha1"))
    nltk_words = NltkWords("english")
    indexer = types.SimpleNamespace(config=config, tokenizer=nltk_words, hash_func=create_hash_func(config.hash_config))
    with tempfile.TemporaryDirectory() as folder:
        hashes = {h for i in items for h in NGramsDecontIndexer.compute_hashes(indexer, i.answer, i.question)}
        np.array(sorted(hashes), dtype="<u8").tofile(f"{folder}/items.index.hashes")
        flt = NGramsDecontFilter(folder, config=config, language=nltk_words)
        results["datatrove (12, answer + overlap)"] = flags(
            lambda texts: [flt.filter(Document(text=t, id=str(k))) is not True for k, t in enumerate(texts)]
        )
        ours_like = DecontIndex.build(items, IndexSettings(preset="datatrove", fields=("answer", "overlap")))
        results["jaxcontam words (datatrove preset, 12, answer + overlap)"] = flags(ours(ours_like))

    here = Path(__file__).parent
    summary = {
        "items": len(items),
        "clean_documents": len(clean),
        "missed_verbatim_word_mode": missed,
        "results": results,
    }
    (here / "recall.json").write_text(json.dumps(summary, indent=2) + "\n")
    header = "| tool | " + " | ".join(FORMS) + " | false positives (of 10,000) |\n|---|" + "---|" * (len(FORMS) + 1)
    lines = [header] + [
        f"| {tool} | " + " | ".join(f"{row[f]:.3f}" for f in FORMS) + f" | {row['false_positive_documents']} |"
        for tool, row in results.items()
    ]
    (here / "recall.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
