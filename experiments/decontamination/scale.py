"""`jaxcontam decontaminate` past a few hundred MB: a corpus of --gigabytes of real text (the shared Pile records and
book pieces, repeated, each record with its own id), zstd-compressed JSONL shards of about 256 MB of text each, with
100 GSM8K test items planted as plain copies (question, line break, answer) at known records. Then the command as a
user runs it (GSM8K and MMLU test, the default settings, every core), timed end to end, and its recall on the planted
copies; with --kill, a second run is killed (SIGKILL of the whole process group) partway and rerun to the end, and
its outputs compared with the uninterrupted run's.

    .venv/bin/python experiments/decontamination/scale.py --gigabytes 10 --out /tmp/scale [--kill]

Writes scale.json beside this file (the corpus and the outputs stay under --out).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("JAXCONTAM_SHARED_DATA", REPO.parent / "shared" / "data"))
SHARD_BYTES = 256 << 20
PLANTED = 100


def texts() -> list[str]:
    out = []
    for path in sorted((DATA / "mimir_pile_nonmembers").rglob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            out += [json.loads(line)["text"] for line in f]
    for path in sorted((DATA / "corpus_gutenberg" / "books").glob("*.txt")):
        book = path.read_text(encoding="utf-8", errors="replace")
        out += [book[i : i + 5000] for i in range(0, len(book), 5000)]
    return [t for t in out if t.strip()]


def build(folder: Path, gigabytes: float) -> dict:
    """The corpus: shards of JSONL records, zstd level 3; returns what was planted where."""
    import zstandard

    sys.path.insert(0, str(REPO))
    from jaxcontam.data import load_benchmark

    gsm8k = load_benchmark("gsm8k", path=DATA, split="test")
    rng = random.Random(0)
    pool = texts()
    total = int(gigabytes * 1e9)
    shards = max(1, -(-total // SHARD_BYTES))
    chosen = rng.sample(range(len(gsm8k.items)), PLANTED)
    records_per_shard = SHARD_BYTES // (sum(map(len, pool)) // len(pool))
    placements = [(rng.randrange(shards), rng.randrange(records_per_shard)) for _ in range(PLANTED)]
    where = dict(zip(placements, chosen))
    folder.mkdir(parents=True, exist_ok=True)
    planted = []
    compressor = zstandard.ZstdCompressor(level=3)
    written = 0
    for s in range(shards):
        path = folder / f"shard-{s:04d}.jsonl.zst"
        size, r = 0, 0
        with path.open("wb") as raw, compressor.stream_writer(raw) as out:
            while size < SHARD_BYTES and written + size < total:
                text = pool[(s * 7919 + r) % len(pool)]
                k = where.get((s, r))
                if k is not None:
                    item = gsm8k.items[k]
                    text = f"{text}\n{item.question}\n{item.meta.get('solution', item.answer_text)}\n"
                    planted.append({"shard": path.name, "record": r, "item": item.id})
                line = json.dumps({"id": f"{s}-{r}", "text": text}) + "\n"
                out.write(line.encode())
                size += len(text.encode())
                r += 1
        written += size
    return {"shards": shards, "text_bytes": written, "planted": planted}


def run(command: list[str], kill_after: float | None = None) -> float:
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=REPO, start_new_session=True)
    if kill_after is not None:
        try:
            process.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return time.perf_counter() - started
    if process.wait() != 0:
        raise SystemExit(f"{' '.join(command)} failed")
    return time.perf_counter() - started


def digest(folder: Path) -> dict[str, str]:
    """sha256 of every output but the ones that hold timings."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name not in ("summary.json", "report.html") and p.parent.name != "shards"
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gigabytes", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=Path("/tmp/jaxcontam-scale"))
    parser.add_argument("--kill", action="store_true", help="also a run killed partway, then resumed")
    parser.add_argument("--build-only", action="store_true", help="write the corpus and stop")
    args = parser.parse_args()
    corpus = args.out / "corpus"
    plan = args.out / "planted.json"
    if not plan.exists():
        started = time.perf_counter()
        built = build(corpus, args.gigabytes)
        built["build_seconds"] = round(time.perf_counter() - started, 1)
        plan.write_text(json.dumps(built))
    built = json.loads(plan.read_text())
    if args.build_only:
        return
    cli = [sys.executable, "-m", "jaxcontam.cli", "decontaminate", "--benchmark", "gsm8k", "--benchmark", "mmlu"]
    cli += ["--split", "test", "--corpus", str(corpus), "--policy", "annotate"]
    result = {"gigabytes_of_text": built["text_bytes"] / 1e9, "shards": built["shards"], "cores": os.cpu_count()}
    out = args.out / "run"
    if not (out / "summary.json").exists():
        result["seconds"] = round(run([*cli, "--out", str(out)]), 1)
    summary = json.loads((out / "summary.json").read_text())
    result["seconds"] = result.get("seconds", summary["seconds"])
    import pyarrow.parquet as pq

    matches = pq.read_table(out / "matches.parquet").to_pylist()
    found = {(m["shard"], m["document"], m["item"]) for m in matches}
    hits = sum((p["shard"], p["record"], p["item"]) in found for p in built["planted"])
    result |= {
        "words": summary["total"]["units"],
        "words_per_second": round(summary["total"]["units"] / result["seconds"]),
        "documents": summary["total"]["documents"],
        "matched_documents": summary["total"]["matched"],
        "planted": len(built["planted"]),
        "planted_found": hits,
    }
    if args.kill:
        again = args.out / "killed"
        result["killed_after_seconds"] = round(run([*cli, "--out", str(again)], kill_after=result["seconds"] / 2), 1)
        time.sleep(2)
        left = subprocess.run(["pgrep", "-f", "jaxcontam.cli decontaminate"], capture_output=True, text=True)
        result["processes_left_after_kill"] = len(left.stdout.split())
        result["resumed_seconds"] = round(run([*cli, "--out", str(again)]), 1)
        result["killed_then_resumed_equals_uninterrupted"] = digest(again) == digest(out)
    (Path(__file__).parent / "scale.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
