"""Corpus n-gram counting: jaxcontam's streaming count vs a Python dict scan vs infini-gram (build + query).

Same pre-tokenized corpus (GPT-2 tokens of every text corpus in ../shared/data - Gutenberg books,
State of the Union / inaugural addresses, Shakespeare, MIMIR Pile documents - repeated in
shuffled document order until it holds --tokens tokens; cached under experiments/perf/cache/),
same table (all 8-grams of GSM8K test question+answer, MMLU test question+gold choice and
HellaSwag validation context+gold ending; HellaSwag's test split has no labels).

  jaxcontam   count_corpus over the token array (documents kept apart), time to answer includes
              the table upload and compilation; steady-state rate printed separately.
  python      the loop of existing decontamination scripts: a dict from n-gram tuples to table
              rows, probed with every window of every document (run on --python-tokens tokens,
              its rate extrapolated to the full corpus).
  infini-gram its own suffix-array indexer over the same token ids, then one count query per
              table n-gram; time to answer = build + queries.

All three must agree on the counts (asserted). Usage:
  .venv/bin/python -m experiments.perf.ngram_count [--tokens 50000000] [--python-tokens 5000000]
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import gzip
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("JAXCONTAM_SHARED_DATA", REPO.parent / "shared" / "data"))
CACHE = Path(__file__).resolve().parent / "cache"
N = 8


def corpus_texts() -> list[str]:
    files = sorted((SHARED / "corpus_gutenberg").rglob("*.txt")) + sorted((SHARED / "corpus_misc").rglob("*.txt"))
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in files]
    for path in sorted((SHARED / "mimir_pile_nonmembers").rglob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            texts += [json.loads(line)["text"] for line in f]
    return [t for t in texts if t.strip()]


def base_corpus(units) -> tuple[np.ndarray, np.ndarray]:
    """One copy of all shared text corpora, tokenized: (uint16 tokens, int64 document offsets); cached."""
    tokens_path, offsets_path = CACHE / "base_tokens.npy", CACHE / "base_offsets.npy"
    if not tokens_path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        encoded = units.encode_batch(corpus_texts())
        np.save(offsets_path, np.concatenate([[0], np.cumsum([len(e) for e in encoded])]).astype(np.int64))
        np.save(tokens_path, np.concatenate(encoded).astype(np.uint16))
    return np.load(tokens_path, mmap_mode="r"), np.load(offsets_path)


def repeated_corpus(units, target: int) -> tuple[np.ndarray, np.ndarray]:
    """The base corpus repeated in shuffled document order until it holds >= target tokens; cached."""
    tokens_path, offsets_path = CACHE / f"corpus_{target}_tokens.npy", CACHE / f"corpus_{target}_offsets.npy"
    if not tokens_path.exists():
        base, offsets = base_corpus(units)
        lengths = np.diff(offsets)
        rng = np.random.default_rng(0)
        order = []
        while lengths[order].sum() < target if order else True:
            order += rng.permutation(len(lengths)).tolist()
        pieces = [base[offsets[d] : offsets[d + 1]] for d in order]
        np.save(tokens_path, np.concatenate(pieces))
        np.save(offsets_path, np.concatenate([[0], np.cumsum(lengths[order])]).astype(np.int64))
    tokens, offsets = np.load(tokens_path, mmap_mode="r"), np.load(offsets_path)
    last = int(np.searchsorted(offsets, target, side="left"))  # whole documents up to ~target tokens
    return tokens[: offsets[last]], offsets[: last + 1]


def benchmark_segments() -> list[tuple[str, list[str]]]:
    items = []
    for i, line in enumerate((SHARED / "gsm8k" / "test.jsonl").open()):
        row = json.loads(line)
        items.append((f"gsm8k/{i}", [row["question"], row["answer"]]))
    for path in sorted((SHARED / "mmlu" / "test").glob("*_test.csv")):
        with path.open(newline="") as f:
            for i, row in enumerate(csv.DictReader(f)):
                items.append((f"mmlu/{path.stem}/{i}", [row["question"], row[f"choice{row['answer']}"]]))
    for line in (SHARED / "hellaswag" / "hellaswag_val.jsonl").open():
        row = json.loads(line)
        items.append((f"hellaswag/{row['ind']}", [row["ctx"], row["endings"][row["label"]]]))
    return items


@dataclasses.dataclass
class ArrayShard:
    """Documents of a token array (the .npy reader of jaxcontam.data keeps no document boundaries)."""

    name: str
    tokens: np.ndarray
    offsets: np.ndarray

    def documents(self):
        from jaxcontam.data.corpus import Document

        for a, b in zip(self.offsets[:-1], self.offsets[1:]):
            yield Document(id=f"{self.name}:{a}", tokens=self.tokens[a:b])


@dataclasses.dataclass
class ArrayCorpus:
    shards: tuple

    @classmethod
    def from_arrays(cls, tokens, offsets, shards=4):
        cuts = np.linspace(0, len(offsets) - 1, shards + 1).astype(int)
        return cls(tuple(ArrayShard(f"shard{k}", tokens, offsets[cuts[k] : cuts[k + 1] + 1]) for k in range(shards)))


def run_jaxcontam(table, tokens, offsets, chunk):
    from jaxcontam.ngram.stream import CountView, count_corpus

    start = time.perf_counter()
    result = count_corpus([CountView(table)], ArrayCorpus.from_arrays(tokens, offsets), chunk_tokens=chunk)
    return result.counts[0], time.perf_counter() - start


def run_python(table, tokens, offsets):
    """The dict-probe loop of existing decontamination scripts -> (counts, dict build s, scan s)."""
    start = time.perf_counter()
    rows = {tuple(r): i for i, r in enumerate(table.ngrams.tolist())}
    built = time.perf_counter()
    counts = np.zeros(len(table), np.int64)
    for a, b in zip(offsets[:-1], offsets[1:]):
        doc = tokens[a:b].tolist()
        for gram in zip(*(doc[j:] for j in range(N))):
            row = rows.get(gram)
            if row is not None:
                counts[row] += 1
    return counts, built - start, time.perf_counter() - built


def run_infinigram(table, tokens, offsets, workdir: Path):
    shutil.rmtree(workdir, ignore_errors=True)
    (workdir / "raw").mkdir(parents=True)
    start = time.perf_counter()
    # infini-gram's on-disk input: 0xFFFF before each document, plus byte offsets of the documents
    lengths = np.diff(offsets)
    stream = np.empty(len(tokens) + len(lengths), np.uint16)
    positions = offsets[:-1] + np.arange(len(lengths))
    stream[positions] = 0xFFFF
    mask = np.ones(len(stream), bool)
    mask[positions] = False
    stream[mask] = tokens
    stream.tofile(workdir / "tokenized.0")
    (2 * positions.astype(np.uint64)).tofile(workdir / "offset.0")
    limit = str(resource.getrlimit(resource.RLIMIT_NOFILE)[1])
    subprocess.run(
        [sys.executable, "-m", "infini_gram.indexing", "--data_dir", str(workdir / "raw"), "--save_dir", str(workdir),
         "--token_dtype", "u16", "--cpus", str(len(os.sched_getaffinity(0))), "--mem", "8", "--ulimit", limit],
        check=True, capture_output=True,
    )
    built = time.perf_counter()
    from infini_gram.engine import InfiniGramEngine

    engine = InfiniGramEngine(index_dir=str(workdir), eos_token_id=50256, token_dtype="u16", version=4)
    counts = np.array([engine.count(row)["count"] for row in table.ngrams.tolist()], np.int64)
    done = time.perf_counter()
    return counts, built - start, done - built


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=50_000_000, help="corpus size in tokens")
    parser.add_argument("--python-tokens", type=int, default=5_000_000, help="tokens for the (slow) Python scan")
    parser.add_argument("--chunk", type=int, default=1 << 20, help="jaxcontam window starts per chunk")
    parser.add_argument("--skip-infinigram", action="store_true")
    parser.add_argument("--cpu-devices", type=int, default=None,
                        help="XLA CPU devices to count on (chunks go round-robin over devices)")
    args = parser.parse_args()

    import jax

    if args.cpu_devices:
        jax.config.update("jax_num_cpu_devices", args.cpu_devices)

    from jaxcontam.ngram.table import build_table, encode_items
    from jaxcontam.ngram.units import load_units

    units = load_units(SHARED / "gpt2_tokenizer_whisper" / "gpt2.tiktoken")
    tokens, offsets = repeated_corpus(units, args.tokens)
    start = time.perf_counter()
    table = build_table(encode_items(benchmark_segments(), units), N)
    table_s = time.perf_counter() - start
    cores = len(os.sched_getaffinity(0))
    print(f"device {jax.devices()[0].platform} x{len(jax.local_devices())}, {cores} cores; corpus {len(tokens):,} tokens in {len(offsets) - 1:,} "
          f"documents; table {len(table):,} distinct {N}-grams of {len(table.items.keys):,} items ({table_s:.1f} s)")

    run_jaxcontam(table, tokens[: offsets[min(50, len(offsets) - 1)]], offsets[:51], args.chunk)  # compile once
    cpu_before = resource.getrusage(resource.RUSAGE_SELF)
    counts, jc_s = run_jaxcontam(table, tokens, offsets, args.chunk)
    cpu_after = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = sum(getattr(cpu_after, f) - getattr(cpu_before, f) for f in ("ru_utime", "ru_stime"))
    rate = len(tokens) / jc_s
    print(f"jaxcontam   {jc_s:8.2f} s  {rate / 1e6:8.1f} M tokens/s  ({rate / 1e6 / cores:.1f} M/s per core of the "
          f"machine; {len(tokens) / cpu_s / 1e6:.1f} M per CPU-second used, {cpu_s / jc_s:.2f} cores busy); "
          f"{int((counts > 0).sum()):,} table n-grams found, {int(counts.sum()):,} occurrences")

    py_last = int(np.searchsorted(offsets, min(args.python_tokens, len(tokens)), side="left"))
    py_offsets = offsets[: py_last + 1]
    py_counts, py_build_s, py_s = run_python(table, tokens, py_offsets)
    sub_counts, _ = run_jaxcontam(table, tokens[: py_offsets[-1]], py_offsets, args.chunk)
    assert np.array_equal(py_counts, sub_counts), "python and jaxcontam counts differ"
    py_rate = py_offsets[-1] / py_s
    py_total = py_build_s + len(tokens) / py_rate
    print(f"python      {py_total:8.2f} s  {py_rate / 1e6:8.2f} M tokens/s  (dict build {py_build_s:.1f} s + scan of "
          f"{py_offsets[-1]:,} tokens {py_s:.1f} s, extrapolated); jaxcontam is {py_total / jc_s:.1f}x faster "
          f"({rate / py_rate:.1f}x the scan rate)")

    if not args.skip_infinigram:
        ig_counts, build_s, query_s = run_infinigram(table, tokens, offsets, CACHE / "infinigram_index")
        assert np.array_equal(ig_counts, counts), "infini-gram and jaxcontam counts differ"
        print(f"infini-gram {build_s + query_s:8.2f} s  (build {build_s:.2f} s + {len(table):,} queries "
              f"{query_s:.2f} s); "
              f"jaxcontam time to answer is {(build_s + query_s) / jc_s:.1f}x shorter")
        shutil.rmtree(CACHE / "infinigram_index", ignore_errors=True)
    print("counts agree across all engines")


if __name__ == "__main__":
    main()
