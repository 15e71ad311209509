"""Peak resident memory of `jaxcontam decontaminate` and `jaxcontam ngram` on decompression bombs (issue 61.5).

    python -m experiments.perf.corpus_bombs [--jaxcontam /path/to/checkout] [--cap-gb 6] [--valid-mb 100 400]

Builds, in a temporary folder: valid JSONL (one ~1 KB line repeated) as .zst of each --valid-mb size, 10 GiB of
NULs without a line break as .zst (~330 KB) and 2 GiB of NULs as .gz (~2 MB), then runs each command on each
file with the checkout's jaxcontam first on PYTHONPATH, polling the resident memory of the command and its
children every 0.1 s; a run past --cap-gb is killed (so a runaway run cannot take the machine) and reported as
such. Prints one JSON line per run: exit code, killed, peak RSS (MB), seconds, the last line it printed. Slow on
a shared machine: the valid files are decompressed and counted in full.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import zstandard

REPO = pathlib.Path(__file__).resolve().parents[2]
TEXT = "The quick brown fox jumps over the lazy dog near the river bank. " * 15
LINE = (json.dumps({"id": "doc", "text": TEXT}) + "\n").encode()


def build(folder: pathlib.Path, valid_mb: list[int]) -> list[pathlib.Path]:
    def zst(name: str, chunk: bytes, count: int) -> pathlib.Path:
        path = folder / name
        with open(path, "wb") as raw, zstandard.ZstdCompressor(level=3).stream_writer(raw) as writer:
            for _ in range(count):
                writer.write(chunk)
        return path

    block = LINE * ((1 << 20) // len(LINE))
    files = [zst(f"valid{mb}m.jsonl.zst", block, mb) for mb in valid_mb]
    files.append(zst("nul10g.jsonl.zst", b"\0" * (1 << 24), 640))
    path = folder / "nul2g.jsonl.gz"
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as writer:
        for _ in range(128):
            writer.write(b"\0" * (1 << 24))
    return [*files, path]


def resident(pid: int) -> int:
    """Bytes resident in `pid` and its children."""
    children = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout.split()
    total = 0
    for process in [pid, *map(int, children)]:
        try:
            status = pathlib.Path(f"/proc/{process}/status").read_text()
        except OSError:
            continue
        total += next((int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return total


def measure(command: list[str], env: dict, cap: float, log: pathlib.Path) -> dict:
    started, peak, killed = time.time(), 0, False
    with open(log, "w") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, env=env)
        while process.poll() is None:
            peak = max(peak, resident(process.pid))
            if peak > cap:
                process.kill()
                killed = True
            time.sleep(0.1)
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    return {
        "rc": process.returncode,
        "killed": killed,
        "peak_rss_mb": round(peak / 2**20),
        "seconds": round(time.time() - started, 1),
        "last": (lines[-1] if lines else "")[:300],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jaxcontam", type=pathlib.Path, default=REPO, help="checkout whose jaxcontam runs")
    parser.add_argument("--cap-gb", type=float, default=6.0)
    parser.add_argument("--valid-mb", type=int, nargs="+", default=[100, 400])
    parser.add_argument("--data", type=pathlib.Path, default=REPO.parent / "shared" / "data")
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=str(args.jaxcontam), JAX_PLATFORMS="cpu")
    benchmark = ["--benchmark", "gsm8k", "--path", str(args.data / "gsm8k"), "--split", "test"]
    with tempfile.TemporaryDirectory(prefix="jaxcontam-bombs-") as scratch:
        folder = pathlib.Path(scratch)
        for corpus in build(folder, args.valid_mb):
            for name, extra in (("decontaminate", ["--workers", "1"]), ("ngram", ["--tokenizer", "words"])):
                out = folder / f"out-{name}-{corpus.name}"
                command = [sys.executable, "-m", "jaxcontam.cli", name, *benchmark, "--corpus", str(corpus)]
                result = measure([*command, "--out", str(out), *extra], env, args.cap_gb * 2**30, folder / "log")
                print(json.dumps({"command": name, "corpus": corpus.name, "bytes": corpus.stat().st_size} | result))


if __name__ == "__main__":
    main()
