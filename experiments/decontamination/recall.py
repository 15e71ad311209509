"""Recall on copies of the datasets' own text, reformatted, and false positives on clean text: jaxcontam's word and
token modes vs lm-eval's Janitor and datatrove.

400 items (100 each of GSM8K test, MMLU test, HellaSwag validation, TruthfulQA), each copied as the dataset holds
it: its question, a line break, its answer (`dataset_copy`: the question field, the context before it where the
dataset has one; GSM8K's solution, the gold option's text, TruthfulQA's best answer), with none of the labels or
template words of a prompt. Each copy is planted into a host document (Pile records and 1,500-character pieces of
the Gutenberg books, Shakespeare and the addresses) in nine forms:
  1 verbatim; 2 re-wrapped at 40 columns (`fmt`-style: lines broken at spaces only); 3 a markdown quote (odd
  items) or a markdown list of its lines (even items); 4 markdown-escaped (a backslash before every markdown
  special character); 5 HTML-escaped (`html.escape`); 6 an HTML page (each line a `<p>` of escaped text);
  7 lowercased; 8 inside a JSON string (`json.dumps({"text": ...})`: line breaks, quotes and non-ASCII escaped);
  9 a dataset JSON row ({"question": ..., "answer": ...}: the key "answer" stands between question and answer).
A tenth column plants jaxcontam's own rendering of the item (`item.whole`: the prompt's labels, MMLU's lettered
options) for comparison: it is not the dataset's text.
Every other document of the shared clean text (the rest of the Pile records whole, and of the pieces) holds
nothing planted (false positives). A document counts as flagged when the tool finds any benchmark n-gram in it.
  jaxcontam words          gpt3 rule, 13-grams, the default: the item's question and answer as one text (no
                           labels) and, a segment apart, its prompt rendering; an item shorter than 13 words
                           matched whole down to the floor; escapes decoded;
  jaxcontam words, --no-escapes  the same, text read as the Janitor reads it (the default before 2026-11-28);
  jaxcontam words, prompt  the same rule on the rendering (`--fields prompt`, the default before 2026-11-28);
  jaxcontam tokens         GPT-2 tokens, 8-grams (`ngram`'s default) and 13-grams, default fields; SmolLM2's
                           tokens (digits one by one), 8-grams, with the default letter share (half an n-gram's
                           tokens hold a letter) and without it, and 10- and 13-grams with it (precision.py's
                           --n 10 / 13 rows: the length that flags no clean document but the items' sources);
  Janitor                  lm-eval's, Python mode, 13-grams of the same question-and-answer texts;
  datatrove                NGramsDecontFilter, its defaults: NLTK words, 12-grams of the answer and the
                           question/answer overlap.
Writes recall.json and recall.md beside this file. Usage: .venv/bin/python -m experiments.decontamination.recall
[--per-benchmark 100] [--clean all|N]
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import html
import io
import json
import os
import random
import re
import tempfile
import textwrap
import time
import types
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("JAXCONTAM_SHARED_DATA", REPO.parent / "shared" / "data"))
FORMS = (
    "verbatim",
    "rewrapped_40",
    "markdown",
    "markdown_escaped",
    "html_escaped",
    "html_page",
    "lowercased",
    "json_string",
    "json_row",
)
_MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]()#+\-.!|>])")
LABELLED = "labelled_rendering"
BENCHMARKS = {"gsm8k": {"split": "test"}, "mmlu": {}, "hellaswag": {}, "truthfulqa": {}}


def clean_texts() -> list[str]:
    """The shared clean text as documents: every Pile record whole, and 1,500-character pieces of the books."""
    texts = []
    for path in sorted((DATA / "mimir_pile_nonmembers").rglob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            texts += [json.loads(line)["text"] for line in f]
    books = sorted((DATA / "corpus_gutenberg" / "books").glob("*.txt")) + sorted((DATA / "corpus_misc").rglob("*.txt"))
    for path in books:
        book = path.read_bytes().decode("utf-8", "replace")  # one address file holds Latin-1 bytes
        texts += [book[i : i + 1500] for i in range(0, len(book), 1500)]
    return [t for t in texts if len(t.split()) >= 20]


def dataset_copy(item) -> tuple[str, str]:
    """(question, answer) as the dataset holds them: no prompt labels, no template words."""
    question = f"{item.context} {item.question}" if item.context else item.question
    return question, str(item.meta.get("solution", item.answer_text))


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
    if name == "markdown_escaped":
        return _MARKDOWN_SPECIALS.sub(r"\\\1", text)
    if name == "html_escaped":
        return html.escape(text)
    if name == "html_page":
        return "<div>" + "".join(f"<p>{html.escape(line)}</p>" for line in text.splitlines()) + "</div>"
    if name == "lowercased":
        return text.lower()
    if name == "json_string":
        return json.dumps({"text": text})
    return json.dumps({"question": question, "answer": answer})


def interval(k: int, n: int, method: str) -> list[float]:
    """95% interval of a proportion, to 4 decimals: "wilson" for recall, "exact" (Clopper-Pearson) for a rare rate."""
    from jaxcontam.stats.intervals import clopper_pearson, wilson

    ci = (wilson if method == "wilson" else clopper_pearson)(k, n, 0.95)
    return [round(float(ci.low), 4), round(float(ci.high), 4)]


def plant(host: str, copy: str, rng: random.Random) -> str:
    cut = host.find("\n", rng.randrange(len(host) // 2 + 1))
    cut = len(host) if cut < 0 else cut
    return f"{host[:cut]}\n{copy}\n{host[cut:]}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-benchmark", type=int, default=100)
    parser.add_argument("--clean", default="all", help="clean documents: all, or the first N")
    args = parser.parse_args()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    from jaxcontam.data import load_benchmark
    from jaxcontam.decontam import DecontIndex, IndexSettings, benchmark_items, find_batch, words

    rng = random.Random(0)
    loaded = [load_benchmark(name, path=None, **options) for name, options in BENCHMARKS.items()]
    items, copies = [], []
    for benchmark in loaded:
        sides = benchmark_items([benchmark])
        for k in sorted(rng.sample(range(len(sides)), args.per_benchmark)):
            items.append(sides[k])
            copies.append(dataset_copy(benchmark.items[k]))
    documents = clean_texts()
    rng.shuffle(documents)
    columns = (*FORMS, LABELLED)
    hosts = [d[:6000] for d in documents[: len(items) * len(columns)]]
    planted = {name: [] for name in columns}
    for f, name in enumerate(columns):
        for k, (item, (question, answer)) in enumerate(zip(items, copies)):
            text = item.whole if name == LABELLED else f"{question}\n{answer}"
            copy = form(text, question, answer, "verbatim" if name == LABELLED else name, k)
            planted[name].append(plant(hosts[f * len(items) + k], copy, rng))
    clean = documents[len(hosts) :]
    if args.clean != "all":
        clean = clean[: int(args.clean)]
    clean_words = sum(len(t.split()) for t in clean)
    print(f"{len(items)} items, {len(clean)} clean documents ({clean_words:,} words)", flush=True)
    benchmark_of = np.array([i.benchmark for i in items])

    def flags(tool) -> dict[str, object]:
        start = time.perf_counter()
        out: dict[str, object] = {}
        per_benchmark: dict[str, dict[str, float]] = {}
        for name in columns:
            found = np.asarray(tool(planted[name]), bool)
            out[name] = float(found.mean())
            out[f"{name}_ci95"] = interval(int(found.sum()), len(found), "wilson")
            for b in dict.fromkeys(benchmark_of):
                per_benchmark.setdefault(b, {})[name] = float(found[benchmark_of == b].mean())
        flagged = np.asarray(tool(clean), bool)
        out["false_positive_documents"] = int(flagged.sum())
        out["false_positive_rate_ci95"] = interval(int(flagged.sum()), len(flagged), "exact")
        out["per_benchmark"] = per_benchmark
        out["seconds"] = round(time.perf_counter() - start, 1)
        print(json.dumps(out), flush=True)
        return out

    results = {}

    def ours(index):
        def tool(texts):
            return [bool(r.matches) for r in find_batch(index, texts)]

        return tool

    words_index = DecontIndex.build(items)
    results["jaxcontam words (gpt3, 13)"] = flags(ours(words_index))
    missed = [
        {"item": i.key, "words": len(words(q + " " + a))}
        for i, (q, a), r in zip(items, copies, find_batch(words_index, planted["verbatim"]))
        if not r.matches
    ]
    print("verbatim copies missed in word mode:", missed)
    results["jaxcontam words, --no-escapes (gpt3, 13)"] = flags(
        ours(DecontIndex.build(items, IndexSettings(escapes=False)))
    )
    results["jaxcontam words, --fields prompt (gpt3, 13)"] = flags(
        ours(DecontIndex.build(items, IndexSettings(fields=("prompt",))))
    )
    tiktoken = str(DATA / "gpt2_tokenizer_whisper" / "gpt2.tiktoken")
    for n in (8, 13):
        index = DecontIndex.build(items, IndexSettings(unit="tokens", tokenizer=tiktoken, n=n))
        results[f"jaxcontam tokens (GPT-2, {n})"] = flags(ours(index))
    smollm2 = str(DATA / "smollm2_135m_instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf")  # splits digits one by one
    for n, share in ((8, 0.5), (8, 0.0), (10, 0.5), (13, 0.5)):
        index = DecontIndex.build(items, IndexSettings(unit="tokens", tokenizer=smollm2, n=n, letter_share=share))
        results[f"jaxcontam tokens (SmolLM2, {n}, letter share {share:g})"] = flags(ours(index))

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        from lm_eval.decontamination import janitor as janitor_module

        janitor = janitor_module.Janitor()
    for question, answer in copies:
        janitor.register_contaminant_python(f"{question} {answer}")

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
        hashes = {h for q, a in copies for h in NGramsDecontIndexer.compute_hashes(indexer, a, q)}
        np.array(sorted(hashes), dtype="<u8").tofile(f"{folder}/items.index.hashes")
        flt = NGramsDecontFilter(folder, config=config, language=nltk_words)
        results["datatrove (12, answer + overlap)"] = flags(
            lambda texts: [flt.filter(Document(text=t, id=str(k))) is not True for k, t in enumerate(texts)]
        )
    ours_like = DecontIndex.build(items, IndexSettings(preset="datatrove", fields=("answer", "overlap"), floor=12))
    results["jaxcontam words (datatrove preset, 12, answer + overlap, floor 12)"] = flags(ours(ours_like))

    here = Path(__file__).parent
    summary = {
        "date": time.strftime("%Y-%m-%d"),
        "items": len(items),
        "per_benchmark": args.per_benchmark,
        "clean_documents": len(clean),
        "clean_words": clean_words,
        "missed_verbatim_word_mode": missed,
        "results": results,
    }
    (here / "recall.json").write_text(json.dumps(summary, indent=2) + "\n")
    header = (
        "| tool | "
        + " | ".join(columns)
        + f" | false positives (of {len(clean):,}; 95% upper bound of the rate) |\n|---|"
        + "---|" * (len(columns) + 1)
    )
    lines = [header] + [
        f"| {tool} | "
        + " | ".join(f"{row[f]:.3f} ({row[f + '_ci95'][0]:.2f}-{row[f + '_ci95'][1]:.2f})" for f in columns)
        + f" | {row['false_positive_documents']} (<= {row['false_positive_rate_ci95'][1]:.2%}) |"
        for tool, row in results.items()
    ]
    lines += ["", f"Recall over {len(items)} items per form with its 95% Wilson interval."]
    default = results["jaxcontam words (gpt3, 13)"]["per_benchmark"]
    lines += ["", "jaxcontam words (gpt3, 13), the default, per benchmark:", ""]
    lines += ["| benchmark | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    lines += [f"| {b} | " + " | ".join(f"{row[f]:.2f}" for f in columns) + " |" for b, row in default.items()]
    (here / "recall.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
