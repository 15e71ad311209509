"""The floor for short items: recall on planted verbatim short items against false positives on clean text.

An item whose own text (question and answer, no labels) holds fewer than n = 13 normalised words has no 13-gram;
jaxcontam matches it whole, at its own length, if it has at least `floor` words. This measures, for every floor
from 1 to 13 (13: no short item is matched, GPT-3's rule):
  recall          planted items: every short item of TruthfulQA, COPA (validation and test) and ARC-Easy, copied as
                  the dataset holds it (its question, a line break, its answer: `recall.dataset_copy`) into its own
                  host document (Pile records, pieces of the books); found = the planted item is among the matches;
  false positives clean documents: the rest of the shared clean text (every other Pile record whole, 1,500-character
                  pieces of the Gutenberg books, Shakespeare and the addresses), flagged by any item, for two item
                  sets: the three benchmarks above, and those with MMLU, ARC-Challenge, OpenBookQA, CommonsenseQA,
                  PIQA, HellaSwag and NQ-open added (every item, short or not).
One index with floor 1 gives every figure (a document is flagged at floor F when it holds an item of at least F
words); the chosen floor (jaxcontam's default, DEFAULT_FLOOR) is then run as it ships, and its figures are checked
against the table. Because no short item at all occurs in this clean text, a second, more sensitive measure: the
share of all m-word windows of the wide set's items (m = 3..13) that occur anywhere in the clean text, the chance
that an m-word run of benchmark text turns up in unrelated text. Last, find_batch's rate with and without short
items. Writes short_items.json and short_items.md beside this file.
Usage: .venv/bin/python -m experiments.decontamination.short_items
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
RECALL_SET = {"truthfulqa": [{}], "copa": [{}, {"split": "test"}], "arc_easy": [{}]}
WIDE_SET = RECALL_SET | {
    "mmlu": [{}],
    "arc_challenge": [{}],
    "openbookqa": [{}],
    "commonsenseqa": [{}],
    "piqa": [{}],
    "hellaswag": [{}],
    "nq_open": [{}],
}
N = 13


def main() -> None:
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    from experiments.decontamination.recall import clean_texts, dataset_copy, plant
    from jaxcontam.data import load_benchmark
    from jaxcontam.decontam import DecontIndex, IndexSettings, benchmark_items, find_batch, words
    from jaxcontam.decontam.index import DEFAULT_FLOOR, not_findable

    rng = random.Random(0)
    loaded = {}
    for name, splits in WIDE_SET.items():
        for options in splits:
            benchmark = load_benchmark(name, **options)
            loaded[f"{name}{'/' + options['split'] if options else ''}"] = benchmark
    items, copies, source = [], [], []
    for key, benchmark in loaded.items():
        sides = benchmark_items([benchmark])
        items += sides
        copies += [dataset_copy(item) for item in benchmark.items]
        source += [key.split("/")[0]] * len(sides)
    source = np.array(source)
    length = np.array([len(words(i.question + " " + i.answer)) for i in items])
    in_recall = np.isin(source, list(RECALL_SET))
    short = np.flatnonzero(in_recall & (length < N))
    print(f"{len(items)} items, {len(short)} short ones in {', '.join(RECALL_SET)}", flush=True)

    documents = clean_texts()
    rng.shuffle(documents)
    hosts, clean = [d[:6000] for d in documents[: len(short)]], documents[len(short) :]
    clean_words = sum(len(t.split()) for t in clean)
    planted = [plant(h, "\n".join(copies[k]), rng) for h, k in zip(hosts, short.tolist())]
    print(f"{len(clean)} clean documents, {clean_words:,} words", flush=True)

    start = time.perf_counter()
    every = DecontIndex.build(items, IndexSettings(floor=1))
    key_of = {item.key: k for k, item in enumerate(items)}
    found = np.array(
        [items[k].key in r.items for k, r in zip(short.tolist(), find_batch(every, planted))], bool
    )  # the planted item itself, at floor 1
    flagged = []  # (item index, its length, the matched text) of every match in a clean document
    by_doc = []  # the items each flagged clean document holds
    for doc, result in zip(clean, find_batch(every, clean)):
        if result.matches:
            ks = [key_of[f"{m.benchmark}/{m.item_id}"] for m in result.matches]
            by_doc.append(ks)
            flagged += [(k, int(length[k]), doc[m.start : m.end]) for k, m in zip(ks, result.matches)]
    seconds = time.perf_counter() - start

    def fp(mask, floor: int) -> int:  # long items' n-grams are looked for at every floor
        return sum(any(mask[k] and length[k] >= floor for k in ks) for ks in by_doc)

    rows = []
    for floor in range(1, N + 1):
        eligible = length[short] >= floor
        recall = {b: float(np.mean((found & eligible)[source[short] == b])) for b in RECALL_SET}
        recall["all"] = float(np.mean(found & eligible))

        rows.append(
            {
                "floor": floor,
                "recall": recall,
                "below_floor": int((~eligible).sum()),
                "false_positive_documents_recall_set": fp(in_recall, floor),
                "false_positive_documents_wide_set": fp(np.ones(len(items), bool), floor),
            }
        )
    examples = sorted({(int(L), items[k].key, text[:120]) for k, L, text in flagged if L < N})

    # the shipped default, run as it is
    chosen = DEFAULT_FLOOR["words"]
    recall_index = DecontIndex.build([items[k] for k in np.flatnonzero(in_recall).tolist()])
    wide_index = DecontIndex.build(items)
    assert recall_index.settings.short_floor == chosen
    shipped = {
        "floor": chosen,
        "recall": float(
            np.mean([items[k].key in r.items for k, r in zip(short.tolist(), find_batch(recall_index, planted))])
        ),
        "false_positive_documents_recall_set": sum(bool(r.matches) for r in find_batch(recall_index, clean)),
        "false_positive_documents_wide_set": sum(bool(r.matches) for r in find_batch(wide_index, clean)),
        "not_findable_recall_set": len(not_findable(recall_index)),
        "not_findable_wide_set": len(not_findable(wide_index)),
    }

    # how often a run of m words of benchmark text occurs in clean text at all: every m-word window of every item
    # of the wide set (its own text), looked up in the clean text; at 13 words what is left is real copies (MMLU's
    # US-history passages quote the addresses), so the excess over it is chance
    windows = []
    for m in range(3, N + 1):
        index = DecontIndex.build(items, IndexSettings(n=m, floor=m))
        hit = np.zeros(len(index.table.keys), bool)
        for b in range(0, len(clean), 512):
            ids, ends = index.encode_joined(clean[b : b + 512])
            hit[index.lookup(ids, ends).rows] = True
        windows.append({"words": m, "windows": int(len(hit)), "found": int(hit.sum()), "share": float(hit.mean())})
        print(windows[-1], flush=True)

    # what matching short items costs: find_batch over the clean text, wide set, the shipped floor vs none (13)
    def rate(index) -> float:
        best = float("inf")
        for _ in range(3):
            begin = time.process_time()
            for b in range(0, len(clean), 256):
                find_batch(index, clean[b : b + 256])
            best = min(best, time.process_time() - begin)
        return clean_words / best

    no_short = DecontIndex.build(items, IndexSettings(floor=N))
    throughput = {
        f"words_per_cpu_second_floor_{chosen}": rate(wide_index),
        "words_per_cpu_second_no_short": rate(no_short),
    }
    print(throughput, flush=True)
    summary = {
        "date": time.strftime("%Y-%m-%d"),
        "throughput": throughput,
        "item_windows_in_clean_text": windows,
        "n": N,
        "short_items": {b: int((source[short] == b).sum()) for b in RECALL_SET},
        "items_wide_set": len(items),
        "short_items_wide_set": int((length < N).sum()),
        "clean_documents": len(clean),
        "clean_words": clean_words,
        "seconds_floor_1_pass": round(seconds, 1),
        "by_floor": rows,
        "shipped": shipped,
        "flagged_short_matches": [{"words": L, "item": key, "text": text} for L, key, text in examples],
    }
    (HERE / "short_items.json").write_text(json.dumps(summary, indent=2) + "\n")
    lines = [
        f"| floor (words) | recall: all {len(short)} | "
        + " | ".join(f"{b} ({summary['short_items'][b]})" for b in RECALL_SET)
        + f" | below the floor | clean documents flagged (of {len(clean):,}): TruthfulQA, COPA, ARC-Easy | "
        "with 7 benchmarks more |",
        "|---|" + "---|" * (len(RECALL_SET) + 4),
    ]
    for row in rows:
        lines.append(
            f"| {row['floor']} | {row['recall']['all']:.3f} | "
            + " | ".join(f"{row['recall'][b]:.3f}" for b in RECALL_SET)
            + f" | {row['below_floor']} | {row['false_positive_documents_recall_set']} | "
            f"{row['false_positive_documents_wide_set']} |"
        )
    lines += ["", f"Shipped floor {chosen}, run as it ships: {json.dumps(shipped)}", ""]
    lines += [
        "| words (m) | distinct m-word windows of the items | found in the clean text | share |",
        "|---|---|---|---|",
    ]
    lines += [f"| {w['words']} | {w['windows']:,} | {w['found']:,} | {w['share']:.5f} |" for w in windows]
    lines += ["", f"find_batch words per CPU-second (wide set, clean text, best of 3): {json.dumps(throughput)}"]
    (HERE / "short_items.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"{len(examples)} distinct short-item matches in clean text; the first 40:")
    for L, key, text in examples[:40]:
        print(L, key, repr(text))


if __name__ == "__main__":
    main()
