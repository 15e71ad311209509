"""`jaxcontam decontaminate` past a few hundred MB: a corpus of --gigabytes of real text (the shared Pile records and
book pieces, repeated, each record with its own id), zstd-compressed JSONL shards of about 256 MB of text each, with
100 GSM8K test items planted as plain copies (question, line break, answer) at known records. Then the command as a
user runs it (GSM8K and MMLU test, the default settings, every core), timed end to end, and its recall on the planted
copies, and its peak memory (the summed resident set of the command and its workers, sampled every 0.2 s); with
--kill, a second run is killed (SIGKILL of the whole process group) partway and rerun to the end, and its outputs
compared with the uninterrupted run's; with --ray, the same command on a local Ray cluster of two nodes (one CPU
each) whose second node is SIGKILLed (its raylet, agents and workers: every process of its session) once a third
of the shards are done, and its outputs compared with the one-host run's. The Ray run starts itself inside a
network namespace of its own (`unshare --net`, loopback up), so every Ray process binds 127.0.0.1.

    .venv/bin/python -m experiments.decontamination.scale --gigabytes 10 --out /tmp/scale [--kill] [--ray]

Writes scale.json beside this file (or --result) (the corpus and the outputs stay under --out).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import random
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("JAXCONTAM_SHARED_DATA", REPO.parent / "shared" / "data"))
SHARD_BYTES = 256 << 20
PLANTED = 100
UNSHARE = ["unshare", "--net", "--pid", "--fork", "--kill-child", "--mount-proc"]
IN_NAMESPACE = "JAXCONTAM_SCALE_NAMESPACE"


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


def tree_rss(pid: int) -> int:
    """Resident bytes of a process and all its descendants now (0 once it is gone)."""
    import psutil

    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for process in processes:
        try:
            total += process.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def run(
    command: list[str], kill_after: float | None = None, env: dict | None = None, whole_tree: bool = False
) -> tuple[float, int]:
    """(seconds, peak summed resident bytes) of `command` run to its end, or SIGKILLed after `kill_after` seconds.
    Memory is the command's process tree, or with `whole_tree` this script's (a Ray cluster's nodes are its children,
    not the command's)."""
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=REPO, start_new_session=True, env=env)
    peak = 0
    while process.poll() is None:
        peak = max(peak, tree_rss(os.getpid() if whole_tree else process.pid))
        if kill_after is not None and time.perf_counter() - started > kill_after:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return time.perf_counter() - started, peak
        time.sleep(0.2)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed")
    return time.perf_counter() - started, peak


def digest(folder: Path) -> dict[str, str]:
    """sha256 of every output but the ones that hold timings."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name not in ("summary.json", "report.html") and p.parent.name != "shards"
    }


def timed(cli: list[str], out: Path, env: dict | None = None, whole_tree: bool = False) -> dict:
    """Run `cli --out out` once (a finished run is read back, not rerun): its seconds and peak memory."""
    record = out.parent / f"{out.name}.timing.json"
    if not record.exists():
        seconds, peak = run([*cli, "--out", str(out)], env=env, whole_tree=whole_tree)
        record.write_text(json.dumps({"seconds": round(seconds, 1), "peak_rss_gb": round(peak / 1e9, 2)}))
    return json.loads(record.read_text())


def start_node(args: list[str], env: dict) -> subprocess.Popen:
    ray = str(Path(sys.executable).parent / "ray")
    command = [ray, "start", "--block", "--node-ip-address=127.0.0.1", "--num-cpus=1", "--disable-usage-stats", *args]
    quiet = subprocess.DEVNULL
    return subprocess.Popen(command, env=env, stdout=quiet, stderr=quiet, start_new_session=True)


def node_processes(node: subprocess.Popen) -> list[tuple[int, str]]:
    """(pid, title) of every process a node runs: its `ray start` began a session, and its raylet, agents and workers
    stay in it (workers lead process groups of their own, so the session, not the group, is the node)."""
    listing = subprocess.run(["ps", "-eo", "pid=,sid=,stat=,args="], capture_output=True, text=True).stdout
    found = []
    for line in listing.splitlines():
        pid, sid, state, title = (line.strip().split(None, 3) + [""])[:4]
        if int(sid) == node.pid and not state.startswith("Z"):  # a zombie has ended; only its parent is gone
            found.append((int(pid), title))
    return found


def stop(node: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    """End a node, every process of its session."""
    for pid, _ in node_processes(node):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    try:
        node.wait(timeout=10)
    except subprocess.TimeoutExpired:
        stop(node, signal.SIGKILL)


def shards_in_flight(node: subprocess.Popen) -> list[str]:
    """The shards a node's workers are decontaminating now: Ray titles each such worker
    `ray::decontaminate:<shard>`."""
    titles = [title for _, title in node_processes(node)]
    return sorted(t.removeprefix("ray::decontaminate:").strip() for t in titles if t.startswith("ray::decontaminate:"))


def ray_run(cli: list[str], out: Path, shards: int) -> dict:
    """The command on a two-node local Ray cluster whose second node is SIGKILLed a third of the way through."""
    import ray

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = dict(
        os.environ, PYTHONPATH=str(REPO), JAX_PLATFORMS="cpu", RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled"
    )
    os.environ["RAY_AUTH_MODE"] = "disabled"
    head = start_node(["--head", f"--port={port}", "--include-dashboard=false"], env)
    nodes = [head]
    try:
        for _ in range(240):
            try:
                ray.init(address=f"127.0.0.1:{port}", log_to_driver=False)
                break
            except Exception:
                time.sleep(0.5)
        second = start_node([f"--address=127.0.0.1:{port}"], env)
        nodes.append(second)
        while len([n for n in ray.nodes() if n["Alive"]]) < 2:
            time.sleep(0.25)
        ray.shutdown()
        killed: dict = {}

        def kill_second_node() -> None:
            started = time.perf_counter()
            while not (out / "shards").is_dir() or len(list((out / "shards").glob("*.json"))) < shards / 3:
                if time.perf_counter() - started > 7200:
                    return
                time.sleep(0.5)
            killed["shards_done"] = len(list((out / "shards").glob("*.json")))
            killed["after_seconds"] = round(time.perf_counter() - started, 1)
            killed["shards_in_flight_on_it"] = shards_in_flight(second)
            stop(second, signal.SIGKILL)
            killed["processes_left_on_it"] = len(node_processes(second))

        killer = threading.Thread(target=kill_second_node, daemon=True)
        killer.start()
        result = timed([*cli, "--engine", "ray", "--address", f"127.0.0.1:{port}"], out, env, whole_tree=True)
        killer.join(timeout=1)
        ray.init(address=f"127.0.0.1:{port}", log_to_driver=False)
        for _ in range(120):  # the cluster marks the node dead once it misses its health checks
            alive = len([n for n in ray.nodes() if n["Alive"]])
            if alive == 1 or not killed:
                break
            time.sleep(0.5)
        ray.shutdown()
        return result | {"second_node_killed": killed, "nodes_alive_at_end": alive}
    finally:
        for node in reversed(nodes):
            stop(node)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gigabytes", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=Path("/tmp/jaxcontam-scale"))
    parser.add_argument("--kill", action="store_true", help="also a run killed partway, then resumed")
    parser.add_argument("--ray", action="store_true", help="also a two-node Ray run with its second node killed")
    parser.add_argument("--build-only", action="store_true", help="write the corpus and stop")
    parser.add_argument("--result", type=Path, default=Path(__file__).parent / "scale.json")
    args = parser.parse_args()
    if args.ray and not os.environ.get(IN_NAMESPACE):  # Ray binds the machine's address outside a namespace
        again = shlex.join([sys.executable, *sys.argv])
        namespace = [*UNSHARE, "sh", "-c", f"ip link set lo up && exec {again}"]
        os.execvpe(namespace[0], namespace, dict(os.environ, **{IN_NAMESPACE: "1"}))
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
    result |= timed(cli, out)
    summary = json.loads((out / "summary.json").read_text())
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
        result["killed_after_seconds"] = round(run([*cli, "--out", str(again)], kill_after=result["seconds"] / 2)[0], 1)
        time.sleep(2)
        left = subprocess.run(["pgrep", "-f", "jaxcontam.cli decontaminate"], capture_output=True, text=True)
        result["processes_left_after_kill"] = len(left.stdout.split())
        result["resumed_seconds"] = round(run([*cli, "--out", str(again)])[0], 1)
        result["killed_then_resumed_equals_uninterrupted"] = digest(again) == digest(out)
    if args.ray:
        ray_out = args.out / "ray"
        result["ray"] = ray_run(cli, ray_out, built["shards"])
        result["ray"]["equals_one_host_run"] = digest(ray_out) == digest(out)
    previous = json.loads(args.result.read_text()) if args.result.exists() else {}
    args.result.write_text(json.dumps(previous | result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
