"""Raw text -> n-gram counts in the tokens of real models' `tokenizer.json`: jaxcontam vs `tokenizers` + counting.

Tokenizers:
  smollm2        SmolLM2-135M-Instruct's own byte-level BPE (49,152 tokens, from its GGUF in ../shared/data)
  llama3-style   a byte-level BPE with Llama 3's pipeline (its split regex, byte level without regex,
                 ignore_merges) and its 128,256-token budget, trained here by the `tokenizers` trainer on the
                 Gutenberg books (no hub: Llama 3's own file cannot be fetched; the pipeline is what sets speed)
  qwen2-style    the same with Qwen2's split regex (single digits) and NFC normalizer, 151,643-token budget
  llama2-style   a SentencePiece-style BPE (Metaspace "▁", byte fallback; Llama 2 / Gemma shape), 32,000 tokens:
                 no tiktoken twin exists for it, so jaxcontam runs the `tokenizers` pipeline (measured, reported)
Trained tokenizers are cached under experiments/perf/cache/tokenizers/.

Corpus: the 15 Gutenberg books, --copies times, as .txt files (a document is a whole book). Table: all 8-grams of
GSM8K test, MMLU test and HellaSwag validation items in each tokenizer's ids (as ngram_count.py).

jaxcontam: `count_corpus` on the text folder (what `jaxcontam ngram --tokenizer DIR` runs). Peer: what a user's
script does with a `tokenizer.json` - `Tokenizer.encode_batch_fast` over all documents in one call (Rust, a
thread per core) and the ids as numpy arrays, then counting those ids with jaxcontam's own counter (the fastest counter we have, so the peer
is favoured). The counts are asserted equal, and the peer's ids equal jaxcontam's on every document.

Usage: .venv/bin/python -m experiments.perf.ngram_tokenizers [--copies 4] [--tokenizers smollm2,llama3-style,...]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path

import numpy as np

from experiments.perf.ngram_count import CACHE, SHARED, ArrayCorpus, N, benchmark_segments

BUDGETS = {"llama3-style": 128_256, "qwen2-style": 151_643, "llama2-style": 32_000}


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def book_texts() -> list[str]:
    return [p.read_text(encoding="utf-8") for p in sorted((SHARED / "corpus_gutenberg" / "books").glob("*.txt"))]


def trained_tokenizer(name: str):
    """A tokenizer of `name`'s pipeline trained on the books, cached as tokenizer.json."""
    import tokenizers
    from tokenizers import Regex, decoders, models, normalizers, pre_tokenizers, trainers

    from jaxcontam.ngram.tiktoken_twin import LLAMA3_PATTERN, QWEN2_PATTERN

    path = CACHE / "tokenizers" / name / "tokenizer.json"
    if path.exists():
        return tokenizers.Tokenizer.from_file(str(path))
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|endoftext|>"]
    if name == "llama2-style":
        tokenizer = tokenizers.Tokenizer(models.BPE(byte_fallback=True, fuse_unk=True, unk_token="<unk>"))
        # trained on words (Metaspace splitting), then run as Llama 2's tokenizer.json runs: the whole text one
        # piece after "▁" replaces spaces
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=True)
        tokenizer.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
        alphabet = [f"<0x{b:02X}>" for b in range(256)]
        trainer = trainers.BpeTrainer(vocab_size=BUDGETS[name], special_tokens=["<unk>", "<s>", "</s>", *alphabet],
                                      show_progress=False)
    else:
        tokenizer = tokenizers.Tokenizer(models.BPE(ignore_merges=name == "llama3-style"))
        pattern = LLAMA3_PATTERN if name == "llama3-style" else QWEN2_PATTERN
        if name == "qwen2-style":
            tokenizer.normalizer = normalizers.NFC()
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
        tokenizer.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=BUDGETS[name], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                      special_tokens=specials, show_progress=False)
    tokenizer.train_from_iterator(book_texts(), trainer)
    if name == "llama2-style":
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(path))
    return tokenizer


def units_of(name: str):
    from jaxcontam.ngram.units import TokenizerUnits, load_units

    if name == "smollm2":
        return load_units(SHARED / "smollm2_135m_instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf")
    return TokenizerUnits(name=name, sha256=name, tokenizer=trained_tokenizer(name))


def text_folder(copies: int) -> Path:
    folder = CACHE / f"books_txt_{copies}"
    if not (folder / "done").exists():
        folder.mkdir(parents=True, exist_ok=True)
        for copy in range(copies):
            for i, text in enumerate(book_texts()):
                (folder / f"copy{copy:02d}_{i:02d}.txt").write_text(text, encoding="utf-8")
        (folder / "done").touch()
    return folder


def measure(name: str, folder: Path) -> dict:
    from jaxcontam.data.corpus import open_corpus
    from jaxcontam.ngram.stream import CountView, count_corpus
    from jaxcontam.ngram.table import build_table, encode_items

    units = units_of(name)
    start = time.perf_counter()
    engine = units.encoder.engine
    built = time.perf_counter() - start
    vocab = units.tokenizer.get_vocab_size()
    views = [CountView(build_table(encode_items(benchmark_segments(), units), N))]
    smallest = min(folder.glob("*.txt"), key=lambda p: p.stat().st_size)
    count_corpus(views, open_corpus(smallest), units)  # compile the counter once

    cpu, start = cpu_seconds(), time.perf_counter()
    ours = count_corpus(views, open_corpus(folder), units)
    wall, busy = time.perf_counter() - start, cpu_seconds() - cpu
    tokens = int(ours.units_scanned[0])

    texts = [p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.txt"))]
    start = time.perf_counter()
    encodings = units.tokenizer.encode_batch_fast(texts, add_special_tokens=False)
    documents = [np.asarray(e.ids, np.int32) for e in encodings]  # the ids as arrays, as counting needs them
    peer_tokenize = time.perf_counter() - start
    offsets = np.concatenate([[0], np.cumsum([len(d) for d in documents])]).astype(np.int64)
    start = time.perf_counter()
    theirs = count_corpus(views, ArrayCorpus.from_arrays(np.concatenate(documents), offsets))
    peer_count = time.perf_counter() - start
    assert np.array_equal(ours.counts[0], theirs.counts[0]), f"{name}: counts differ from counts of the peer's ids"
    ids = units.encoder.encode_batch(texts)
    assert all(np.array_equal(a, b) for a, b in zip(ids, documents, strict=True)), f"{name}: ids differ"
    peer = peer_tokenize + peer_count
    return {"tokenizer": name, "vocab": vocab, "engine": engine, "twin_built_s": round(built, 2),
            "characters": sum(map(len, texts)), "tokens": tokens, "jaxcontam_s": round(wall, 2),
            "jaxcontam_tokens_per_s": round(tokens / wall), "cores_busy": round(busy / wall, 2),
            "peer_s": round(peer, 2), "peer_tokenize_s": round(peer_tokenize, 2), "peer_count_s": round(peer_count, 2),
            "peer_tokens_per_s": round(tokens / peer), "ratio": round(peer / wall, 2), "ids_equal": True}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=4, help="copies of the 15 books (4: 43M characters)")
    parser.add_argument("--tokenizers", default="smollm2,llama3-style,qwen2-style,llama2-style")
    parser.add_argument("--record", type=Path, default=Path(__file__).with_name("ngram_tokenizers.jsonl"))
    args = parser.parse_args()
    folder = text_folder(args.copies)
    print(f"{len(os.sched_getaffinity(0))} cores, load average {os.getloadavg()[0]:.1f}; "
          f"{sum(p.stat().st_size for p in folder.glob('*.txt')) / 1e6:.1f}M bytes of text")
    for name in args.tokenizers.split(","):
        row = measure(name, folder)
        row |= {"date": time.strftime("%Y-%m-%d %H:%M"), "load_average": round(os.getloadavg()[0], 1)}
        print(f"{name:13s} vocab {row['vocab']:>7,}  {row['engine']:10s} jaxcontam {row['jaxcontam_s']:6.2f} s "
              f"{row['jaxcontam_tokens_per_s'] / 1e6:5.2f}M tokens/s ({row['cores_busy']:.2f} cores busy)  peer "
              f"{row['peer_s']:6.2f} s {row['peer_tokens_per_s'] / 1e6:5.2f}M tokens/s (tokenize "
              f"{row['peer_tokenize_s']:.2f} s + count {row['peer_count_s']:.2f} s)  {row['ratio']:.2f}x; ids equal")
        with open(args.record, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
