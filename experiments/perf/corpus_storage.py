"""Counting a corpus stored as zstd shards, and from a bucket, beside the same corpus as plain local files.

Corpus: the 15 Gutenberg books and the MIMIR Pile non-member documents (../shared/data), --copies times, as
--shards JSONL shards (one JSON object per document, text in "text", as Dolma and RedPajama ship). Forms:
  plain   .jsonl on local disk
  zstd    .jsonl.zst on local disk (level 3, the level Dolma's shards use)
  bucket  the .jsonl.zst shards on an S3 server started here (moto, localhost), read with jaxcontam's read-ahead
          (`corpus.READ_AHEAD` shards fetched at once while the current one is counted)
Table: all 8-grams of GSM8K test, MMLU test and HellaSwag validation in SmolLM2's tokens (its GGUF's tokenizer).
Each form is counted by `count_corpus` as `jaxcontam ngram` runs it; the counts are asserted equal, and the
rate is corpus tokens per second of wall time. The fetch rate is how fast one host pulls the shards from the
server with the same number of reads in flight (localhost: a bound on jaxcontam's side, not a cloud figure).

Usage: .venv/bin/python -m experiments.perf.corpus_storage [--copies 2] [--shards 16]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import tempfile
import time
from pathlib import Path

from experiments.perf.ngram_count import SHARED, N, benchmark_segments


def documents(copies: int) -> list[str]:
    texts = [p.read_text(encoding="utf-8") for p in sorted((SHARED / "corpus_gutenberg" / "books").glob("*.txt"))]
    for path in sorted((SHARED / "mimir_pile_nonmembers").rglob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            texts += [json.loads(line)["text"] for line in handle]
    return texts * copies


def write_shards(folder: Path, texts: list[str], shards: int, compress: bool) -> int:
    """The documents as `shards` JSONL files; returns their bytes on disk."""
    import zstandard

    folder.mkdir(parents=True)
    pack = zstandard.ZstdCompressor(level=3).compress if compress else (lambda data: data)
    size = 0
    for index in range(shards):
        data = "".join(json.dumps({"text": t}) + "\n" for t in texts[index::shards]).encode()
        path = folder / f"shard{index:03d}.jsonl{'.zst' if compress else ''}"
        path.write_bytes(pack(data))
        size += path.stat().st_size
    return size


def count(corpus_path: str, views, units) -> tuple[list, int, float]:
    from jaxcontam.data import open_corpus
    from jaxcontam.ngram.stream import count_corpus

    start = time.perf_counter()
    corpus = open_corpus(corpus_path)
    result = count_corpus(views, corpus, units, chunk_tokens=1 << 18)
    return [c.tolist() for c in result.counts], result.units_scanned[0], time.perf_counter() - start


def fetch_rate(url: str, in_flight: int) -> tuple[float, float]:
    """(seconds, MB/s) to fetch every shard with `in_flight` reads at once (no counting)."""
    import functools

    from jaxcontam.storage import as_path, fetch, read_ahead

    objects = sorted(as_path(url).glob("*.jsonl.zst"), key=str)
    start = time.perf_counter()
    fetched = sum(len(got.data) for _, got in read_ahead(objects, lambda p: functools.partial(fetch, p), in_flight))
    seconds = time.perf_counter() - start
    return seconds, fetched / seconds / 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=2)
    parser.add_argument("--shards", type=int, default=16)
    args = parser.parse_args()

    from experiments.object_stores import s3_server
    from jaxcontam.data.corpus import READ_AHEAD
    from jaxcontam.ngram.stream import CountView
    from jaxcontam.ngram.table import build_table, encode_items
    from jaxcontam.ngram.units import load_units

    units = load_units(SHARED / "smollm2_135m_instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf")
    views = [CountView(build_table(encode_items(benchmark_segments(), units), N))]
    texts = documents(args.copies)
    with tempfile.TemporaryDirectory() as scratch, s3_server() as (direct, _proxy):
        root = Path(scratch)
        plain_bytes = write_shards(root / "plain", texts, args.shards, compress=False)
        zstd_bytes = write_shards(root / "zstd", texts, args.shards, compress=True)
        direct.mkdir("corpora")
        direct.put(str(root / "zstd") + "/", "corpora/zstd/", recursive=True)
        count(str(root / "plain"), views, units)  # compiles the counting programs once, outside the timings
        results = {}
        for form, path in (("plain", root / "plain"), ("zstd", root / "zstd"), ("bucket", "s3://corpora/zstd")):
            counts, tokens, seconds = count(str(path), views, units)
            results[form] = {"counts": counts, "tokens": tokens, "seconds": seconds}
        fetch_seconds, fetch_mb_s = fetch_rate("s3://corpora/zstd", READ_AHEAD)
    assert results["zstd"]["counts"] == results["plain"]["counts"] == results["bucket"]["counts"]
    record = {
        "copies": args.copies,
        "shards": args.shards,
        "documents": len(texts),
        "tokens": results["plain"]["tokens"],
        "plain_mb": plain_bytes / 1e6,
        "zstd_mb": zstd_bytes / 1e6,
        "seconds": {form: result["seconds"] for form, result in results.items()},
        "read_ahead": READ_AHEAD,
        "fetch_seconds": fetch_seconds,
        "fetch_mb_per_s": fetch_mb_s,
        "cores": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d"),
    }
    print(markdown(record))
    with open(Path(__file__).with_suffix(".jsonl"), "a") as handle:
        handle.write(json.dumps(record) + "\n")


def markdown(record: dict) -> str:
    """The run as docs/storage.md shows it (docs/generate.py reads the last record)."""
    tokens, seconds = record["tokens"], record["seconds"]
    lines = [
        f"{record['documents']:,} documents, {tokens:,} SmolLM2 tokens in {record['shards']} shards: "
        f"{record['plain_mb']:.1f} MB as JSONL, {record['zstd_mb']:.1f} MB as `.jsonl.zst`; {record['cores']} CPU "
        f"cores, {record['date']}.",
        "",
        "| corpus form | seconds | tokens/s | vs plain |",
        "|---|---|---|---|",
    ]
    names = {"plain": "JSONL on local disk", "zstd": "`.jsonl.zst` on local disk", "bucket": "`.jsonl.zst` on S3"}
    for form, taken in seconds.items():
        lines.append(f"| {names[form]} | {taken:.2f} | {tokens / taken:,.0f} | {seconds['plain'] / taken:.2f}x |")
    lines += [
        "",
        f"Fetching the shards alone with {record['read_ahead']} reads in flight: {record['fetch_seconds']:.2f} s, "
        f"{record['fetch_mb_per_s']:.0f} MB/s (from a server on the same machine: a bound on jaxcontam's side, not "
        "a cloud figure). The bucket row includes listing the shards and reading each one's first record before "
        "counting, and the S3 server runs in the measuring process, its Python threads sharing the interpreter "
        "lock with the counting.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
