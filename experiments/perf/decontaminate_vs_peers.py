"""Decontamination throughput: jaxcontam (word mode, both presets; token mode) vs lm-eval's Janitor, datatrove, decon
and corpus-assay; and the recall of planted copies by jaxcontam, decon and corpus-assay.

One process run, the same corpus and the same benchmarks for every tool:
  corpus      every MIMIR Pile document of ../shared/data and the 15 Gutenberg books cut into 5,000-character
              documents (~4.3M whitespace words; --corpus-words N keeps its first N, for a quick check);
  benchmarks  GSM8K test and MMLU test, each item as the model sees it (question + gold answer).
  jaxcontam   `find_batch` over 4 MB batches (word mode gpt3 13-grams, word mode datatrove 12-grams, token mode
              GPT-2 8-grams), and the whole one-host shard pipeline (`process_shard`: read a .jsonl.zst, match, write
              the cleaned shard, the matches and the marker) in word mode;
  Janitor     lm-eval's `Janitor.clean_python` per document (its C++ helper is not in the lm-eval wheel and its
              source is not shipped, so only the Python mode runs), on the first --peer-words words;
  datatrove   `NGramsDecontFilter.filter` per document (NLTK words, 12-grams, answer + overlap n-grams of the
              same items; its sha1 hash, as xxhash 4 refuses its str input), on the first --peer-words words.
  decon       allenai's decon (PyPI `decontaminate`, Rust), its documented Python API `decon.detect(decon.Config(
              training_dir, evals_dir, report_output_dir))` with every default: SIMPLE mode, cl100k tokens of text
              cleaned (lowercased, punctuation to spaces), question 5-grams sampled every 10 tokens, the answer
              required near the match, contamination score 0.8, items under 20 tokens skipped; each item a reference
              record {question, answer}; on the first --rust-peer-words words (default: --peer-words) as a JSONL file;
  corpus-assay  its documented CLI, `corpus-assay build-index` then `corpus-assay scan`, config defaults: word
              13-grams of NFKC-lowercased words less stop words and multiple-choice boilerplate, a document flagged at
              3 distinct hits covering 0.1% of its 13-grams; each benchmark a local JSON dataset of {question,
              answer} rows (its "Benchmarks from local files"); on the same first --rust-peer-words words.
              Both peers ship wheels for CPython >= 3.12 only, so they run from their own virtualenv (--peers-python,
              made by the commands below) as child processes, timed by the children's CPU time (getrusage). Each is
              timed end to end (its index built from the items, the corpus read from disk, its reports written), and
              again on a one-document corpus: that fixed cost (start-up, index) subtracted gives the scan's own rate
              (none where the difference is under 5% of the whole: too small to tell from noise).
Rates are whitespace words of the input per CPU-second of this process (all its threads), or of a peer's child
processes: words/s per core.
Recall: --planted-per-benchmark items of each benchmark, planted into corpus documents in the nine forms of
experiments/decontamination/recall.py (its functions, imported), flagged or not by decon, corpus-assay and, for
reference, jaxcontam's default word mode. A peer that cannot run is reported as "not run: <reason>".
Appends its result, one line per run, to experiments/perf/decontaminate_vs_peers.jsonl. Usage:
  python3.12 -m venv experiments/perf/cache/peers-venv  # any CPython >= 3.12
  experiments/perf/cache/peers-venv/bin/pip install decontaminate corpus-assay  # the peers extra's packages
  .venv/bin/python -m experiments.perf.decontaminate_vs_peers [--peer-words 300000] [--rust-peer-words N]
      [--corpus-words N] [--planted-per-benchmark 100] [--peers-python PATH]
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import json
import os
import platform
import random
import re
import resource
import subprocess
import tempfile
import time
import types
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("JAXCONTAM_SHARED_DATA", REPO.parent / "shared" / "data"))
BATCH = 1 << 22
PEERS_PYTHON = REPO / "experiments" / "perf" / "cache" / "peers-venv" / "bin" / "python"
DECON = "import sys, decon; decon.detect(decon.Config(*sys.argv[1:]))"  # its documented API, every default
CHUNK = 500  # planted documents per file: corpus-assay lists at most 500 flagged documents of a shard


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


def planted_copies(benchmarks, texts, per_benchmark: int) -> dict[str, list[str]]:
    """recall.py's nine forms of `per_benchmark` items of each benchmark (question, line break, answer as the dataset
    holds them), each planted into its own corpus document (its first 6,000 characters): one draw for every tool."""
    from experiments.decontamination import recall

    rng = random.Random(0)
    copies = [
        recall.dataset_copy(benchmark.items[k])
        for benchmark in benchmarks
        for k in sorted(rng.sample(range(len(benchmark.items)), per_benchmark))
    ]
    hosts = [t[:6000] for t in rng.sample(texts, len(copies) * len(recall.FORMS))]
    return {
        name: [
            recall.plant(hosts[f * len(copies) + k], recall.form(f"{q}\n{a}", q, a, name, k), rng)
            for k, (q, a) in enumerate(copies)
        ]
        for f, name in enumerate(recall.FORMS)
    }


def write_jsonl(path: Path, rows) -> Path:
    """`rows` as one JSON object a line: the input both peers read from disk."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def write_planted(folder: Path, planted: dict[str, list[str]]) -> Path:
    """The planted documents as JSONL files `<form>-<j>.jsonl` of CHUNK documents each, id = index in the form."""
    for name, docs in planted.items():
        for j in range(0, len(docs), CHUNK):
            rows = ({"id": str(k), "text": docs[k]} for k in range(j, min(j + CHUNK, len(docs))))
            write_jsonl(folder / f"{name}-{j // CHUNK}.jsonl", rows)
    return folder


def recall_of(planted: dict[str, list[str]], flagged: set[tuple[str, int]]) -> dict[str, float]:
    """Share of each form's planted documents among `flagged` ((form, index) pairs)."""
    return {
        name: round(sum((name, k) in flagged for k in range(len(docs))) / len(docs), 4)
        for name, docs in planted.items()
    }


def run_child(command: list[str], env: dict[str, str] | None = None) -> tuple[str, float, float]:
    """Run a peer's command to its end: (stdout + stderr, wall seconds, CPU seconds of the child and all its
    descendants, from getrusage(RUSAGE_CHILDREN)). A failure raises with the command's last line of output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **(env or {})})
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    output = done.stdout + done.stderr
    if done.returncode:
        last = (output.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{Path(command[0]).name} {command[1]} exited {done.returncode}: {last}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return output, wall, cpu


def jaxcontam_flagged(index, planted: dict[str, list[str]]) -> set[tuple[str, int]]:
    """(form, index) of every planted document the index finds a match in."""
    from jaxcontam.decontam import find_batch

    return {(name, k) for name, docs in planted.items() for k, r in enumerate(find_batch(index, docs)) if r.matches}


def peer_version(python: Path, package: str) -> str:
    """The installed version of `package` in the peers' interpreter, importing its module (a failure says why)."""
    if not python.exists():
        raise RuntimeError(
            f"no interpreter at {python}: decontaminate and corpus-assay publish wheels for CPython >= 3.12 only "
            f"(this is {platform.python_version()}); make it with the commands of this script's docstring"
        )
    module = {"decontaminate": "decon", "corpus-assay": "corpus_assay"}[package]
    code = f"import importlib.metadata, {module}; print(importlib.metadata.version({package!r}))"
    return run_child([str(python), "-c", code])[0].strip().splitlines()[-1]


def peer_timing(words: int, full, fixed, extra: dict) -> dict:
    """A peer's row: end to end (wall, CPU, words/s per core) and less the fixed cost of a one-document run."""
    (_, wall, cpu), (_, fixed_wall, fixed_cpu) = full, fixed
    scan_cpu = cpu - fixed_cpu
    return {
        "words": words,
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "words_per_s_per_core": round(words / cpu),
        "fixed_wall_s": round(fixed_wall, 3),
        "fixed_cpu_s": round(fixed_cpu, 3),
        "words_per_s_per_core_less_fixed": round(words / scan_cpu) if scan_cpu > 0.05 * cpu else None,
    } | extra


def decon_flagged(report: Path) -> set[tuple[str, int]]:
    """(training file, line) of every document decon's report calls contaminated."""
    flagged = set()
    for path in report.glob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            flagged.add((record["training_file"], int(record["training_line"])))
    return flagged


def run_decon(python: Path, items, words: int, corpus: Path, one_doc: Path, planted: Path, folder: Path):
    """decon end to end on the corpus, on one document and on the planted copies (each a folder of JSONL files):
    (row, flagged planted copies as (form, index))."""
    evals = folder / "decon_evals"
    for benchmark in dict.fromkeys(i.benchmark for i in items):
        rows = (
            {"doc_id": k, "eval_key": benchmark, "question": i.question, "answer": i.answer, "split": "test"}
            for k, i in enumerate(items)
            if i.benchmark == benchmark
        )
        write_jsonl(evals / f"{benchmark}.jsonl", rows)

    def detect(training: Path, report: str):
        return run_child([str(python), "-c", DECON, str(training), str(evals), str(folder / report)])

    fixed = detect(one_doc, "decon_fixed")
    full = detect(corpus, "decon_corpus")
    indexed = re.search(r"Lines indexed\s+([\d,]+)", full[0])
    extra = {
        "flagged": len(decon_flagged(folder / "decon_corpus")),
        "items_indexed": int(indexed.group(1).replace(",", "")) if indexed else None,
    }
    detect(planted, "decon_planted")
    flagged = set()
    for file, line in decon_flagged(folder / "decon_planted"):
        name, chunk = file.removesuffix(".jsonl").rsplit("-", 1)
        flagged.add((name, int(chunk) * CHUNK + line))
    return peer_timing(words, full, fixed, extra), flagged


def assay_flagged(out: Path) -> set[tuple[str, int]]:
    """(file stem, id) of every document a corpus-assay scan lists as contaminated (`<id>-part-<k>` records)."""
    flagged = set()
    for path in (out / "contaminated_docs").glob("*.ndjson"):
        stem = path.name.removesuffix(".decontam.sample.ndjson")
        for line in path.read_text(encoding="utf-8").splitlines():
            flagged.add((stem, int(json.loads(line)["doc_id"].rsplit("-part-", 1)[0])))
    return flagged


def run_assay(python: Path, items, words: int, corpus: Path, one_doc: Path, planted: Path, folder: Path):
    """corpus-assay's CLI: build-index from the items as local JSON benchmarks, then scan the corpus, one document and
    the planted copies (each a folder of JSONL files): (row, flagged planted copies as (form, index)). Its config is
    JSON (a subset of YAML) and sets nothing but the benchmarks."""
    specs = []
    for benchmark in dict.fromkeys(i.benchmark for i in items):
        rows = ({"question": i.question, "answer": i.answer} for i in items if i.benchmark == benchmark)
        data = write_jsonl(folder / "assay_benchmarks" / f"{benchmark}.jsonl", rows)
        files = {"dataset": "json", "data_files": {"test": str(data)}, "splits": ["test"]}
        specs.append({"name": benchmark, **files, "fields": ["question", "answer"]})
    config = folder / "assay_config.yaml"
    config.write_text(json.dumps({"benchmarks": specs}))
    cli = str(python.with_name("corpus-assay"))
    env = {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "HF_DATASETS_CACHE": str(folder / "hf_cache")}
    index = str(folder / "assay_bench.native")
    build = run_child([cli, "build-index", "--config", str(config), "--out-index", index, "--allow-unpinned"], env)

    def scan(inputs: Path, out: str):
        command = [cli, "scan", "--config", str(config), "--index", index, "--input", str(inputs), "--id-key", "id"]
        return run_child([*command, "--out-dir", str(folder / out)], env)

    fixed = scan(one_doc, "assay_fixed")
    full = scan(corpus, "assay_corpus")
    summary = json.loads((folder / "assay_corpus" / "_FINAL_SUMMARY.json").read_text())
    ngrams = re.search(r"retained after filtering: ([\d,]+)", build[0])
    extra = {
        "flagged": summary["total_contaminated"],
        "index_wall_s": round(build[1], 3),
        "index_cpu_s": round(build[2], 3),
        "ngrams": int(ngrams.group(1).replace(",", "")) if ngrams else None,
    }
    end_to_end = (full[0], full[1] + build[1], full[2] + build[2])
    fixed = (fixed[0], fixed[1] + build[1], fixed[2] + build[2])
    scan(planted, "assay_planted")
    flagged = {(stem.rsplit("-", 1)[0], k) for stem, k in assay_flagged(folder / "assay_planted")}
    return peer_timing(words, end_to_end, fixed, extra), flagged


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--peer-words", type=int, default=300_000)
    parser.add_argument("--rust-peer-words", type=int, help="words for decon and corpus-assay (default: --peer-words)")
    parser.add_argument("--corpus-words", type=int, default=0, help="the corpus cut to its first N words (0: whole)")
    parser.add_argument("--planted-per-benchmark", type=int, default=100)
    parser.add_argument("--peers-python", default=str(PEERS_PYTHON), help="a CPython >= 3.12 with both peers")
    parser.add_argument("--out", default=str(Path(__file__).with_suffix(".jsonl")), help="the JSONL file appended to")
    args = parser.parse_args()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    from jaxcontam.data import load_benchmark
    from jaxcontam.decontam import DecontIndex, IndexSettings, benchmark_items

    whole = corpus()
    texts = prefix(whole, args.corpus_words) if args.corpus_words else whole
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

    planted = planted_copies(benchmarks, whole, args.planted_per_benchmark)
    recall = {"jaxcontam words gpt3": recall_of(planted, jaxcontam_flagged(gpt3, planted))}
    print("recall jaxcontam words gpt3", recall["jaxcontam words gpt3"])
    rust_texts = prefix(texts, args.rust_peer_words or args.peer_words)
    rust_words = sum(len(t.split()) for t in rust_texts)
    python = Path(args.peers_python)
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        write_jsonl(folder / "corpus" / "corpus.jsonl", ({"id": str(k), "text": t} for k, t in enumerate(rust_texts)))
        write_jsonl(folder / "one" / "one.jsonl", [{"id": "0", "text": rust_texts[0]}])
        write_planted(folder / "planted", planted)
        for name, package, run in (("decon", "decontaminate", run_decon), ("corpus-assay", "corpus-assay", run_assay)):
            try:
                version = peer_version(python, package)
                row, flagged = run(
                    python, items, rust_words, *(folder / f for f in ("corpus", "one", "planted")), folder
                )
            except Exception as error:  # a peer that fails is reported, and the run goes on
                rows[name] = {"not_run": str(error)}
                print(f"{name}: not run: {error}")
                continue
            rows[name] = row | {"version": version}
            recall[name] = recall_of(planted, flagged)
            print(name, rows[name])
            print("recall", name, recall[name])

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
    for name in ("decon", "corpus-assay"):  # scan against scan: find_batch's rate leaves the index out too
        if rows[name].get("words_per_s_per_core_less_fixed"):
            label = f"ratio_vs_{name.replace('-', '_')}_less_fixed"
            summary[label] = round(ours / rows[name]["words_per_s_per_core_less_fixed"], 1)
    print(summary)
    result = {
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f} at the end",
        "corpus_documents": len(texts),
        "corpus_words": words,
        "items": len(items),
        "rust_peer_words": rust_words,
        "planted_per_form": len(planted["verbatim"]),
        "rows": rows,
        "recall": recall,
        "summary": summary,
    }
    with open(args.out, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
