"""The Ray engine on a local two-node cluster, corpus and outputs on the local S3 server, inside a network namespace
(and process ids) of its own (tests/ray_scenario.py): the same rows as the one-host engine, and again after a worker
is SIGKILLed mid-run, with no output object written twice (the bucket keeps every version)."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

pytest.importorskip("ray")

# its own network (loopback only) and its own process ids: when the scenario ends, or is killed at the timeout,
# the kernel ends every process left in the namespace (Ray's daemons included)
UNSHARE = ["unshare", "--net", "--pid", "--fork", "--kill-child", "--mount-proc"]


def _namespace_works() -> bool:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    probe = subprocess.run([*UNSHARE, "sh", "-c", "ip link set lo up"], capture_output=True)
    return probe.returncode == 0


def _corpus(shared_data, folder: Path) -> None:
    """Six .jsonl.zst shards of Pile text, every fourth record holding a GSM8K test item."""
    from jaxcontam.data import load_benchmark
    from jaxcontam.decontam import benchmark_items

    items = benchmark_items([load_benchmark("gsm8k", path=shared_data / "gsm8k", split="test")])
    texts = []
    for path in sorted((shared_data / "mimir_pile_nonmembers").rglob("*.jsonl.gz"))[:6]:
        with gzip.open(path, "rt") as f:
            texts += [json.loads(line)["text"][:4000] for _, line in zip(range(400), f)]
    folder.mkdir()
    per = len(texts) // 6
    for s in range(6):
        lines = []
        for k, text in enumerate(texts[s * per : (s + 1) * per]):
            if k % 4 == 0:
                text = f"{text[:500]}\n{items[(s * per + k) % len(items)].whole}\n{text[500:]}"
            lines.append(json.dumps({"id": f"s{s}-{k}", "text": text}))
        (folder / f"part-{s}.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress("\n".join(lines).encode()))


@pytest.mark.skipif(not _namespace_works(), reason="needs unshare --net (root) and ip")
def test_ray_matches_one_host_and_survives_a_killed_worker(shared_data, tmp_path):
    _corpus(shared_data, tmp_path / "corpus")
    script = Path(__file__).with_name("ray_scenario.py")
    command = f"ip link set lo up && exec {sys.executable} {script} {tmp_path / 'corpus'} {shared_data / 'gsm8k'}"
    done = subprocess.run([*UNSHARE, "sh", "-c", command], capture_output=True, text=True, timeout=240)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-6000:]
    result = json.loads(lines[-1][len("RESULT ") :])
    assert result["nodes"] == 2
    local = result["local"]
    assert local["total"]["matched"] >= 100 and len(local["cleaned"]) == 6
    for run in ("ray", "retried"):
        for key in ("matches", "items", "cleaned", "total"):
            assert result[run][key] == local[key], (run, key)
    pid, shard = result["killed"]  # a worker SIGKILLed while it ran this shard; a retry on another worker wrote it
    assert result["marker_pids"][shard] != pid
    assert result["versions"] and set(result["versions"].values()) == {1}  # no object written twice
    assert len([k for k in result["versions"] if "/shards/" in k]) == 6
