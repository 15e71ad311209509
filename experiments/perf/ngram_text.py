"""Raw text -> corpus n-gram counts: jaxcontam's `count_corpus` vs a tokenizer plus a Python dict count.

Corpus: the 15 public-domain Gutenberg books of ../shared/data, --copies times (default 8: 86M characters,
~20M GPT-2 tokens), written once under experiments/perf/cache/text_<copies>/ in four forms:
  text/     one .txt file per book copy (a document is a whole book, as `jaxcontam ngram` reads a folder)
  jsonl/    the same text cut into ~8 KB documents at paragraph breaks, one {"text": ...} row each
  parquet/  the same documents, one Parquet file per copy
  bin/      the text documents' GPT-2 ids as one uint16 .bin file (pre-tokenized)
Table: as ngram_count.py (all 8-grams of GSM8K test, MMLU test and HellaSwag validation items).
Tokenizer: ../shared/data/gpt2_tokenizer_whisper/gpt2.tiktoken (GPT-2's BPE).

Peer, on the text form: what a user's script does with this tokenizer file - tiktoken's
`Encoding.encode_ordinary_batch` over all documents in one call (tiktoken's thread pool, one thread per core),
then the dict probe of existing decontamination scripts (ngram_count.py's `run_python`, timed on
--python-tokens tokens and extrapolated). tiktoken is the fastest published encoder of this BPE and the one a
.tiktoken file is made for; infini-gram's tokenize + index path is not used, as its indexer did not finish on
the repeated corpus in 11 min (ngram_count.py). The `tokenizers` library's `encode_batch` (one call, all
cores; jaxcontam's path before issue 17) is timed on --python-tokens worth of text for reference.

Counts are asserted equal: jaxcontam on text == jaxcontam on the peer's ids == the dict scan (on its prefix).
Usage:
  .venv/bin/python -m experiments.perf.ngram_text [--copies 8] [--views raw|paper] [--python-tokens 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path

import numpy as np

from experiments.perf.ngram_count import CACHE, SHARED, ArrayCorpus, N, benchmark_segments, run_python

DOCUMENT_CHARS = 8192


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def books() -> list[tuple[str, str]]:
    paths = sorted((SHARED / "corpus_gutenberg" / "books").glob("*.txt"))
    return [(p.stem, p.read_text(encoding="utf-8")) for p in paths]


def short_documents(text: str) -> list[str]:
    """`text` cut into ~DOCUMENT_CHARS documents at paragraph breaks (the shape of JSONL/Parquet corpora)."""
    documents, current = [], []
    size = 0
    for paragraph in text.split("\n\n"):
        current.append(paragraph)
        size += len(paragraph) + 2
        if size >= DOCUMENT_CHARS:
            documents.append("\n\n".join(current))
            current, size = [], 0
    if current:
        documents.append("\n\n".join(current))
    return [d for d in documents if d.strip()]


def write_corpus(folder: Path, copies: int, units) -> None:
    """The four forms of the corpus (skipped when already written)."""
    if (folder / "done").exists():
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    for kind in ("text", "jsonl", "parquet", "bin"):
        (folder / kind).mkdir(parents=True, exist_ok=True)
    source = books()
    for copy in range(copies):
        rows = []
        for name, text in source:
            (folder / "text" / f"copy{copy:02d}_{name}.txt").write_text(text, encoding="utf-8")
            rows += short_documents(text)
        with open(folder / "jsonl" / f"copy{copy:02d}.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps({"text": r}) + "\n" for r in rows)
        pq.write_table(pa.table({"text": rows}), folder / "parquet" / f"copy{copy:02d}.parquet")
    ids = units.encode_batch([text for _, text in source])
    np.concatenate(ids * copies).astype(np.uint16).tofile(folder / "bin" / "tokens.bin")
    (folder / "done").touch()


def run_jaxcontam(views, folder: Path, units, kind: str):
    from jaxcontam.data.corpus import open_corpus
    from jaxcontam.ngram.stream import count_corpus

    corpus = open_corpus(folder / kind, token_dtype="uint16" if kind == "bin" else None)
    cpu, start = cpu_seconds(), time.perf_counter()
    result = count_corpus(views, corpus, units)
    return result, time.perf_counter() - start, cpu_seconds() - cpu


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=8, help="copies of the 15 books (8: 86M characters)")
    parser.add_argument("--views", choices=["raw", "paper"], default="raw",
                        help="raw: one view; paper: also the normalised view, as `jaxcontam ngram` counts by default")
    parser.add_argument("--python-tokens", type=int, default=1_000_000, help="tokens for the dict scan and tokenizers")
    parser.add_argument("--kinds", default="text,jsonl,parquet,bin", help="input forms to time")
    args = parser.parse_args()

    import tiktoken

    from jaxcontam.ngram.stream import CountView
    from jaxcontam.ngram.table import build_table, encode_items
    from jaxcontam.ngram.units import load_units

    cores = len(os.sched_getaffinity(0))
    units = load_units(SHARED / "gpt2_tokenizer_whisper" / "gpt2.tiktoken")
    start = time.perf_counter()
    engine = units.encoder.engine
    print(f"{cores} cores, load average {os.getloadavg()[0]:.1f}; encoder {engine} (built in "
          f"{time.perf_counter() - start:.1f} s, once per process)")
    folder = CACHE / f"text_{args.copies}"
    write_corpus(folder, args.copies, units)
    views = [CountView(build_table(encode_items(benchmark_segments(), units), N))]
    if args.views == "paper":
        from jaxcontam.ngram.units import normalize_for_matching

        normalised = [(name, [normalize_for_matching(s) for s in segments]) for name, segments in benchmark_segments()]
        views.append(CountView(build_table(encode_items(normalised, units), N), normalize=True))
    chars = sum(p.stat().st_size for p in (folder / "text").iterdir())
    tokens = (folder / "bin" / "tokens.bin").stat().st_size // 2
    print(f"corpus {chars / 1e6:.1f}M bytes of text, {tokens / 1e6:.1f}M GPT-2 tokens; table {len(views[0].table):,} "
          f"{N}-grams; views: {args.views}")
    from jaxcontam.data.corpus import open_corpus
    from jaxcontam.ngram.stream import count_corpus

    count_corpus(views, open_corpus(min((folder / "text").iterdir(), key=lambda p: p.stat().st_size)), units)  # compile

    results, walls = {}, {}
    for kind in args.kinds.split(","):
        if kind == "bin" and len(views) > 1:
            print("jaxcontam bin      skipped: pre-tokenized ids cannot be normalised for the paper view")
            continue
        result, wall, cpu = run_jaxcontam(views, folder, units, kind)
        results[kind], walls[kind] = result, wall
        scanned = result.units_scanned[0]
        print(f"jaxcontam {kind:8s} {wall:7.2f} s  {scanned / wall / 1e6:6.2f}M tokens/s  "
              f"({scanned / cpu / 1e6:.2f}M per CPU-second, {cpu / wall:.2f} cores busy; {scanned:,} tokens)")

    # the peer, on the text form: tiktoken batch encoding, then the dict count
    import base64

    ranks = {base64.b64decode(t): int(r) for t, r in (line.split() for line in
             (SHARED / "gpt2_tokenizer_whisper" / "gpt2.tiktoken").read_text().splitlines() if line)}
    r50k_pattern = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""  # tiktoken's
    encoding = tiktoken.Encoding("r50k", mergeable_ranks=ranks, special_tokens={"<|endoftext|>": 50256},
                                 pat_str=r50k_pattern)
    texts = [p.read_text(encoding="utf-8") for p in sorted((folder / "text").iterdir())]
    cpu, start = cpu_seconds(), time.perf_counter()
    peer_ids = encoding.encode_ordinary_batch(texts, num_threads=cores)
    tokenize_s, tokenize_cpu = time.perf_counter() - start, cpu_seconds() - cpu
    documents = [np.asarray(ids, np.int32) for ids in peer_ids]
    offsets = np.concatenate([[0], np.cumsum([len(d) for d in documents])]).astype(np.int64)
    stream = np.concatenate(documents)
    last = int(np.searchsorted(offsets, min(args.python_tokens, len(stream)), side="left"))
    counts, build_s, scan_s = run_python(views[0].table, stream, offsets[: last + 1])
    count_s = build_s + scan_s * len(stream) / offsets[last]
    peer_s = tokenize_s + count_s
    print(f"peer      text     {peer_s:7.2f} s  {len(stream) / peer_s / 1e6:6.2f}M tokens/s  (tiktoken "
          f"encode_ordinary_batch {tokenize_s:.2f} s = {len(stream) / tokenize_s / 1e6:.2f}M tokens/s, "
          f"{len(stream) / tokenize_cpu / 1e6:.2f}M per CPU-second, {tokenize_cpu / tokenize_s:.2f} cores busy; "
          f"dict count {count_s:.1f} s, extrapolated from "
          f"{offsets[last]:,} tokens)")
    jc = results.get("text")
    if jc is not None:
        on_peer_ids = count_corpus(views[:1], ArrayCorpus.from_arrays(stream, offsets))
        assert np.array_equal(jc.counts[0], on_peer_ids.counts[0]), "text counts differ from counts of the peer's ids"
        sub = count_corpus(views[:1], ArrayCorpus.from_arrays(stream[: offsets[last]], offsets[: last + 1], shards=1))
        assert np.array_equal(counts, sub.counts[0]), "dict and jaxcontam counts differ"
    hf_texts, hf_chars, budget = [], 0, args.python_tokens * 4  # ~4 characters per GPT-2 token
    for text in texts:
        take = text[: budget - hf_chars]
        hf_texts.append(take)
        hf_chars += len(take)
        if hf_chars >= budget:
            break
    start = time.perf_counter()
    hf_tokens = sum(len(e.ids) for e in units.tokenizer.encode_batch(hf_texts, add_special_tokens=False))
    hf_rate = hf_tokens / (time.perf_counter() - start)
    print(f"tokenizers encode_batch (one call, {len(hf_texts)} texts): {hf_rate / 1e6:.2f}M tokens/s on "
          f"{hf_tokens:,} tokens")
    if jc is not None:
        extra = " (jaxcontam also counted the normalised view; the peer did not)" if len(views) > 1 else ""
        print(f"text: jaxcontam {walls['text']:.2f} s vs peer {peer_s:.2f} s: {peer_s / walls['text']:.1f}x faster; "
              f"vs the peer's tokenization alone: {tokenize_s / walls['text']:.2f}x{extra}; counts agree")


if __name__ == "__main__":
    main()
