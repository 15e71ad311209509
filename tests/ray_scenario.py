"""The Ray decontamination scenario, run by tests/test_decontaminate_ray.py inside its own network namespace
(`unshare --net`, loopback up), so every process it starts binds 127.0.0.1 and nothing outside is touched.

It starts the local S3 server the tests use (moto), a Ray cluster of two nodes (`ray start --block`, one CPU each,
ended by their process ids at exit), puts the corpus on the bucket, and runs the same decontamination three times:
the one-host engine, the Ray engine, and the Ray engine again while one of its workers is SIGKILLed mid-shard.
Prints one JSON line: the three runs' outputs as sorted rows, the objects' version counts, and the killed pid.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_node(args: list[str], env: dict) -> subprocess.Popen:
    ray = str(Path(sys.executable).parent / "ray")
    return subprocess.Popen(
        [ray, "start", "--block", "--node-ip-address=127.0.0.1", "--num-cpus=1", "--disable-usage-stats", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def task_workers() -> list[tuple[int, str]]:
    """(pid, shard) of the Ray workers running a decontamination task now (titled `ray::decontaminate:<shard>`)."""
    listing = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True).stdout
    found = []
    for line in listing.splitlines():
        pid, _, title = line.strip().partition(" ")
        if title.startswith("ray::decontaminate:"):
            found.append((int(pid), title.removeprefix("ray::decontaminate:").strip()))
    return found


def rows(fs, url: str) -> dict:
    """A run's outputs as sorted rows: matches, items, every cleaned shard's records, and the totals."""
    import io

    import pyarrow.parquet as pq
    import zstandard

    def table(name):
        return sorted(
            json.dumps(r, sort_keys=True) for r in pq.read_table(io.BytesIO(fs.cat(f"{url}/{name}"))).to_pylist()
        )

    cleaned = {}
    for path in sorted(fs.find(f"{url}/cleaned")):
        data = zstandard.ZstdDecompressor().decompressobj().decompress(fs.cat(path))
        cleaned[path.rsplit("/", 1)[1]] = sorted(data.decode().splitlines())
    summary = json.loads(fs.cat(f"{url}/summary.json"))
    return {
        "matches": table("matches.parquet"),
        "items": table("items.parquet"),
        "cleaned": cleaned,
        "total": summary["total"],
        "shards": summary["shards"],
    }


def main(corpus: str, gsm8k: str) -> None:
    # no token auth inside the namespace (and no ~/.ray/auth_token of another cluster read or written)
    os.environ["RAY_AUTH_MODE"] = "disabled"
    import boto3

    from experiments.object_stores import s3_server
    from jaxcontam.data import load_benchmark
    from jaxcontam.decontam import DecontIndex, benchmark_items
    from jaxcontam.decontam.run import RunSettings, decontaminate

    nodes: list[subprocess.Popen] = []
    with s3_server() as (direct, _proxy):
        endpoint = os.environ["AWS_ENDPOINT_URL"]
        direct.mkdir("corpus")
        direct.mkdir("out")
        s3 = boto3.client("s3", endpoint_url=endpoint)
        s3.put_bucket_versioning(Bucket="out", VersioningConfiguration={"Status": "Enabled"})
        direct.put(corpus.rstrip("/") + "/", "corpus/shards/", recursive=True)
        env = dict(os.environ, PYTHONPATH=str(REPO), JAX_PLATFORMS="cpu", RAY_USAGE_STATS_ENABLED="0")
        port = free_port()
        try:
            started = time.perf_counter()
            nodes.append(start_node(["--head", f"--port={port}", "--include-dashboard=false"], env))
            import ray

            for _ in range(120):
                try:
                    ray.init(address=f"127.0.0.1:{port}", log_to_driver=False)
                    break
                except Exception:
                    time.sleep(0.5)
            nodes.append(start_node([f"--address=127.0.0.1:{port}"], env))
            for _ in range(240):  # the second node joins
                if len([n for n in ray.nodes() if n["Alive"]]) >= 2:
                    break
                time.sleep(0.25)
            cluster_seconds = time.perf_counter() - started

            index = DecontIndex.build(benchmark_items([load_benchmark("gsm8k", path=gsm8k, split="test")]))
            settings = RunSettings(policy="spans")
            source = ["s3://corpus/shards"]
            timings = {"cluster": round(cluster_seconds, 1)}
            t = time.perf_counter()
            decontaminate(index, source, "s3://out/local", settings, engine="local", workers=1)
            timings["local"] = round(time.perf_counter() - t, 1)
            t = time.perf_counter()
            decontaminate(index, source, "s3://out/ray", settings, engine="ray")
            timings["ray"] = round(time.perf_counter() - t, 1)

            killed: list[tuple[int, str]] = []

            def kill_one() -> None:
                deadline = time.time() + 30
                while time.time() < deadline and not killed:
                    found = task_workers()
                    if found:
                        time.sleep(0.1)  # mid-shard: the task is reading or matching
                        if found[0] in task_workers():
                            os.kill(found[0][0], signal.SIGKILL)
                            killed.append(found[0])
                    time.sleep(0.02)

            killer = threading.Thread(target=kill_one)
            killer.start()
            t = time.perf_counter()
            decontaminate(index, source, "s3://out/killed", settings, engine="ray")
            timings["killed"] = round(time.perf_counter() - t, 1)
            killer.join()
            versions: dict[str, int] = {}
            for page in s3.get_paginator("list_object_versions").paginate(Bucket="out", Prefix="killed/"):
                for version in page.get("Versions", []):
                    versions[version["Key"]] = versions.get(version["Key"], 0) + 1
            markers = {p.rsplit("/", 1)[1][:-5]: json.loads(direct.cat(p)) for p in direct.find("out/killed/shards")}
            result = {
                "local": rows(direct, "out/local"),
                "ray": rows(direct, "out/ray"),
                "retried": rows(direct, "out/killed"),
                "versions": versions,
                "killed": killed[0] if killed else None,
                "marker_pids": {shard: m["pid"] for shard, m in markers.items()},
                "nodes": len([n for n in ray.nodes() if n["Alive"]]),
                "timings": timings,
            }
            ray.shutdown()
            t = time.perf_counter()
        finally:
            for node in reversed(nodes):  # the processes each `ray start` began share its session (process group)
                for sig in (signal.SIGTERM, signal.SIGKILL):
                    try:
                        os.killpg(node.pid, sig)
                        node.wait(timeout=3)
                        break
                    except ProcessLookupError:
                        break
                    except subprocess.TimeoutExpired:
                        continue
    result["timings"]["teardown"] = round(time.perf_counter() - t, 1)
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
