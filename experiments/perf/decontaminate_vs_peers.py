"""Decontamination throughput: jaxcontam (word mode, both presets; token mode) vs lm-eval's Janitor and datatrove.

One process run, the same corpus and the same benchmarks for every tool:
  corpus      every MIMIR Pile document of ../shared/data and the 15 Gutenberg books cut into 5,000-character
              documents (~4.3M whitespace words);
  benchmarks  GSM8K test and MMLU test, each item as the model sees it (question + gold answer).
  jaxcontam   `find_batch` over 4 MB batches (word mode gpt3 13-grams, word mode datatrove 12-grams, token mode
              GPT-2 8-grams), and the whole one-host shard pipeline (`process_shard`: read a .jsonl.zst, match, write
              the cleaned shard, the matches and the marker) in word mode;
  Janitor     lm-eval's `Janitor.clean_python` per document (its C++ helper is not in the lm-eval wheel and its
              source is not shipped, so only the Python mode runs), on the first --peer-words words;
  datatrove   `NGramsDecontFilter.filter` per document (NLTK words, 12-grams, answer + overlap n-grams of the
              same items; its sha1 hash, as xxhash 4 refuses its str input), on the first --peer-words words.
Rates are whitespace words of the input per CPU-second of this process (all its threads): words/s per core.
Writes experiments/perf/decontaminate_vs_peers.json. Usage:
  .venv/bin/python experiments/perf/decontaminate_vs_peers.py [--peer-words 300000]
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import json
import os
import platform
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("JAXCONTAM_SHARED_DATA", REPO.parent / "shared" / "data"))
BATCH = 1 << 22


def corpus() -> list[str]:
    texts = []
    for path in sorted((DATA / "mimir_pile_nonmembers").rglob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            texts += [json.loads(line)["text"] for line in f]
    for path in sorted((DATA / "corpus_gutenberg" / "books").glob("*.txt")):
        book = path.read_text(encoding="utf-8")
        texts += [book[i : i + 5000] for i in range(0, len(book), 5000)]
    return texts


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def batches(texts):
    batch, size = [], 0
    for text in texts:
        batch.append(text)
        size += len(text)
        if size >= BATCH:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def run_find(index, texts) -> tuple[int, int]:
    from jaxcontam.decontam import find_batch

    flagged = units = 0
    for batch in batches(texts):
        for result in find_batch(index, batch):
            flagged += bool(result.matches)
            units += result.units
    return flagged, units


def prefix(texts, words: int) -> list[str]:
    out, total = [], 0
    for text in texts:
        if total >= words:
            break
        out.append(text)
        total += len(text.split())
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--peer-words", type=int, default=300_000)
    parser.add_argument("--out", default=str(Path(__file__).with_suffix(".json")))
    args = parser.parse_args()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    sys.path.insert(0, str(REPO))
    from jaxcontam.data import load_benchmark
    from jaxcontam.decontam import DecontIndex, IndexSettings, benchmark_items

    texts = corpus()
    words = sum(len(t.split()) for t in texts)
    benchmarks = [
        load_benchmark("gsm8k", path=DATA / "gsm8k", split="test"),
        load_benchmark("mmlu", path=DATA / "mmlu"),
    ]
    items = benchmark_items(benchmarks)
    print(f"corpus: {len(texts)} documents, {words} words; {len(items)} items")
    rows = {}

    def record(name, units_words, wall, cpu, extra=None):
        rows[name] = {
            "words": units_words,
            "wall_s": round(wall, 3),
            "cpu_s": round(cpu, 3),
            "words_per_s_per_core": round(units_words / cpu),
        } | (extra or {})
        print(name, rows[name])

    gpt3 = DecontIndex.build(items)
    run_find(gpt3, texts[:200])  # warm: the power tables
    (flagged, _), wall, cpu = timed(lambda: run_find(gpt3, texts))
    record("jaxcontam words gpt3 (find_batch)", words, wall, cpu, {"flagged": flagged, "ngrams": len(gpt3.table.keys)})

    datatrove_rule = DecontIndex.build(items, IndexSettings(preset="datatrove"))
    (flagged, _), wall, cpu = timed(lambda: run_find(datatrove_rule, texts))
    record("jaxcontam words datatrove (find_batch)", words, wall, cpu, {"flagged": flagged})

    tokens_index = DecontIndex.build(
        items, IndexSettings(unit="tokens", tokenizer=str(DATA / "gpt2_tokenizer_whisper" / "gpt2.tiktoken"))
    )
    (result, wall, cpu) = timed(lambda: run_find(tokens_index, texts))
    record(
        "jaxcontam tokens gpt2 n=8 (find_batch)",
        words,
        wall,
        cpu,
        {"flagged": result[0], "tokens": result[1], "tokens_per_s_per_core": round(result[1] / cpu)},
    )

    import zstandard

    from jaxcontam.decontam.run import RunSettings, process_shard
    from jaxcontam.decontam.shards import ShardSpec

    with tempfile.TemporaryDirectory() as folder:
        shard = Path(folder) / "corpus.jsonl.zst"
        lines = "".join(json.dumps({"id": str(k), "text": t}) + "\n" for k, t in enumerate(texts))
        shard.write_bytes(zstandard.ZstdCompressor(level=3).compress(lines.encode()))
        spec = ShardSpec("corpus.jsonl.zst", str(shard), "jsonl", ".zst")
        stats, wall, cpu = timed(lambda: process_shard(gpt3, spec, RunSettings(), str(Path(folder) / "out")))
        record(
            "jaxcontam words gpt3, whole shard pipeline (read .zst, match, write)",
            words,
            wall,
            cpu,
            {"matched": stats["matched"]},
        )

    peer_texts = prefix(texts, args.peer_words)
    peer_words = sum(len(t.split()) for t in peer_texts)
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        from lm_eval.decontamination.janitor import Janitor

        janitor = Janitor()
    for item in items:
        janitor.register_contaminant_python(item.whole)
    _, wall, cpu = timed(lambda: [janitor.clean_python(t) for t in peer_texts])
    record("lm-eval Janitor (Python mode)", peer_words, wall, cpu)

    from datatrove.data import Document
    from datatrove.pipeline.decont.n_grams import NGramsDecontConfig, NGramsDecontFilter, NGramsDecontIndexer
    from datatrove.utils.hashing import HashConfig, create_hash_func
    from datatrove.utils.word_tokenizers import WordTokenizer
    from nltk.tokenize.destructive import NLTKWordTokenizer

    class NltkWords(WordTokenizer):  # datatrove's NLTK tokenizer without Punkt's data file (one sentence)
        def word_tokenize(self, text):
            return [t for t in NLTKWordTokenizer().tokenize(text) if t.strip()]

        def sent_tokenize(self, text):
            return [text]

        def span_tokenize(self, text):
            raise NotImplementedError

    config = NGramsDecontConfig(n_grams=12, hash_config=HashConfig(hash_fc="sha1"))
    words_ = NltkWords("english")
    indexer = types.SimpleNamespace(config=config, tokenizer=words_, hash_func=create_hash_func(config.hash_config))
    with tempfile.TemporaryDirectory() as folder:
        hashes = {h for i in items for h in NGramsDecontIndexer.compute_hashes(indexer, i.answer, i.question)}
        np.array(sorted(hashes), dtype="<u8").tofile(f"{folder}/items.index.hashes")
        from loguru import logger

        logger.remove()
        flt = NGramsDecontFilter(folder, config=config, language=words_)
        flt.filter(Document(text="warm up", id="0"))
        _, wall, cpu = timed(lambda: [flt.filter(Document(text=t, id=str(k))) for k, t in enumerate(peer_texts)])
    record("datatrove NGramsDecontFilter (NLTK words)", peer_words, wall, cpu)

    ours = rows["jaxcontam words gpt3 (find_batch)"]["words_per_s_per_core"]
    token_rate = rows["jaxcontam tokens gpt2 n=8 (find_batch)"]["tokens_per_s_per_core"]
    summary = {
        "ratio_vs_datatrove": round(
            ours / rows["datatrove NGramsDecontFilter (NLTK words)"]["words_per_s_per_core"], 1
        ),
        "ratio_vs_janitor": round(ours / rows["lm-eval Janitor (Python mode)"]["words_per_s_per_core"], 1),
        "one_trillion_tokens_on_16x16_cores_hours_token_mode": round(1e12 / (token_rate * 256) / 3600, 1),
        "one_trillion_tokens_on_16x16_cores_hours_word_mode": round(
            1e12
            / rows["jaxcontam tokens gpt2 n=8 (find_batch)"]["tokens"]
            * words
            / rows["jaxcontam words gpt3, whole shard pipeline (read .zst, match, write)"]["words_per_s_per_core"]
            / 256
            / 3600,
            1,
        ),
    }
    print(summary)
    result = {
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f} at the end",
        "corpus_documents": len(texts),
        "corpus_words": words,
        "items": len(items),
        "rows": rows,
        "summary": summary,
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
