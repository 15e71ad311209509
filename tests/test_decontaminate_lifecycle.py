"""Nothing left running, nothing lost: the pool's workers end when the run's process is SIGKILLed (and commit no
more shards), a rerun removes the killed run's `.partial-*` folders and gives the bytes of an uninterrupted run, a
run ends with none of its own dead attempts' folders, and `--on-bad-line skip` keeps every skipped line, byte for
byte, in a rejects file named in summary.json."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import zstandard

from helpers import run_cli as run

# the run's script: every shard is read slowly (0.05 s a document), in the workers too (the spawn start method runs
# this file again in each, as __mp_main__)
SLOW_RUN = """
import sys, time
import jaxcontam.decontam.run as run

real = run.read_records

def slow(*args, **kwargs):
    for record in real(*args, **kwargs):
        time.sleep(0.05)
        yield record

run.read_records = slow

if __name__ == "__main__":
    from jaxcontam.cli import main

    main(sys.argv[1:])
"""


def _children(pid: int) -> list[int]:
    """Live (not zombie) processes whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def _corpus(shared_data, folder: Path) -> None:
    """Eight .jsonl shards of 60 Pile documents; the first of each holds a GSM8K question and answer."""
    rows = [json.loads(line) for line in (shared_data / "gsm8k" / "test.jsonl").read_text().splitlines()[:8]]
    with gzip.open(next((shared_data / "mimir_pile_nonmembers" / "wikipedia_en").rglob("*.jsonl.gz")), "rt") as f:
        pile = [json.loads(line)["text"][:1500] for _, line in zip(range(480), f)]
    folder.mkdir()
    for s in range(8):
        lines = []
        for k, text in enumerate(pile[s * 60 : (s + 1) * 60]):
            if k == 0:
                text = f"{text}\n{rows[s]['question']}\n{rows[s]['answer']}"
            lines.append(json.dumps({"id": f"s{s}-{k}", "text": text}) + "\n")
        (folder / f"part-{s}.jsonl").write_text("".join(lines))


def test_sigkill_of_the_run_ends_its_workers_and_the_rerun_cleans_up(shared_data, tmp_path, capsys):
    corpus, out = tmp_path / "corpus", tmp_path / "out"
    _corpus(shared_data, corpus)
    script = tmp_path / "slow_run.py"
    script.write_text(SLOW_RUN)
    args = ["decontaminate", "--benchmark", "gsm8k", "--path", shared_data / "gsm8k", "--split", "test"]
    args += ["--corpus", corpus, "--policy", "drop"]
    env = os.environ | {"JAX_PLATFORMS": "cpu"}
    process = subprocess.Popen(
        [sys.executable, str(script), *map(str, args), "--out", str(out), "--workers", "2"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while len(list(out.glob(".partial-*"))) < 2:  # both workers inside a shard
            assert process.poll() is None, process.stderr.read().decode()[-3000:] if process.stderr else ""
            assert time.monotonic() < deadline, "the workers never started a shard"
            time.sleep(0.05)
        workers = _children(process.pid)
        assert len(workers) >= 2
        process.send_signal(signal.SIGKILL)  # the run's process alone
        process.wait(10)
        killed = time.monotonic()
        while any(_alive(w) for w in workers):
            assert time.monotonic() - killed < 5, f"workers {[w for w in workers if _alive(w)]} outlived the run"
            time.sleep(0.05)
        committed = sorted(p.name for p in (out / "shards").glob("*.json")) if (out / "shards").exists() else []
        assert len(committed) < 8
        time.sleep(1.0)
        after = sorted(p.name for p in (out / "shards").glob("*.json")) if (out / "shards").exists() else []
        assert after == committed  # nothing committed after the kill
    finally:
        if process.poll() is None:
            process.kill()
        for pid in workers:  # should the test fail: none is left behind
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    left = sorted(p.name for p in out.glob(".partial-*"))
    assert left  # the killed workers' scratch folders (each was inside a shard at the kill)

    code, text = run([*args, "--out", out, "--workers", 1], capsys)  # the rerun resumes
    assert code == 0, text
    assert not list(out.glob(".partial-*")) and not list(out.rglob(".partial-*"))
    code, text = run([*args, "--out", tmp_path / "whole", "--workers", 1], capsys)  # an uninterrupted run
    assert code == 0, text
    for name in [f"cleaned/part-{s}.jsonl" for s in range(8)] + ["matches.parquet", "items.parquet"]:
        assert (out / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name
    assert pq.read_table(out / "matches.parquet").num_rows >= 8


def test_a_dead_attempts_scratch_is_removed_when_the_run_ends(shared_data, tmp_path, capsys, monkeypatch):
    """A shard attempt that dies mid-write (a Ray node lost, its task retried elsewhere) leaves a `.partial-*` folder
    in OUT during the run; the run ends with none, and with the bytes of a run that lost nothing."""
    import jaxcontam.decontam.run as decontam_run
    from jaxcontam.decontam.shards import SCRATCH_MARKER

    corpus, out = tmp_path / "corpus", tmp_path / "out"
    _corpus(shared_data, corpus)
    real = decontam_run.run_local

    def losing_an_attempt(index, shards, settings, where, workers, work=decontam_run.process_shard):
        dead = Path(where) / ".partial-lost-attempt"  # what a SIGKILLed attempt leaves: half of a cleaned shard
        dead.mkdir(parents=True)
        (dead / SCRATCH_MARKER).touch()  # in its scratch folder since the attempt began
        (dead / "part").write_bytes(b'{"id": "s0-0", "te')
        return real(index, shards, settings, where, workers, work)

    monkeypatch.setattr(decontam_run, "run_local", losing_an_attempt)
    args = ["decontaminate", "--benchmark", "gsm8k", "--path", shared_data / "gsm8k", "--split", "test"]
    args += ["--corpus", corpus, "--policy", "drop", "--workers", 1]
    code, text = run([*args, "--out", out], capsys)
    assert code == 0, text
    assert not list(out.rglob(".partial-*"))
    monkeypatch.setattr(decontam_run, "run_local", real)
    code, text = run([*args, "--out", tmp_path / "whole"], capsys)
    assert code == 0, text
    made = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file() and p.name != "summary.json")
    assert made == sorted(
        p.relative_to(tmp_path / "whole")
        for p in (tmp_path / "whole").rglob("*")
        if p.is_file() and p.name != "summary.json"
    )
    for name in [f"cleaned/part-{s}.jsonl" for s in range(8)] + ["matches.parquet", "items.parquet"]:
        assert (out / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name


def test_skip_keeps_every_skipped_line_byte_for_byte_in_a_rejects_file(shared_data, tmp_path, capsys):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    good = [json.dumps({"id": f"g{k}", "text": f"plain words number {k}"}).encode() + b"\n" for k in range(6)]
    bad = [
        b'{"id": "x", "text": "broken\n',
        b'{"id": "u", "text": "caf\xe9 \xff"}\r\n',
        b'["a list", "not an object"]\n',
        b'{"id": "n", "text": 5}\n',
        b'{"id": "last", "no newline": tru',
    ]
    lines = [good[0], bad[0], good[1], bad[1], bad[2], good[2], good[3], bad[3], good[4], bad[4]]
    (corpus / "a.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(b"".join(lines)))
    (corpus / "b.jsonl").write_bytes(b"".join(good))  # no bad line: no rejects file
    pq.write_table(
        pa.Table.from_pylist([{"id": "p0", "text": "fine"}, {"id": "p1", "text": None}, {"id": "p2", "text": "ok"}]),
        corpus / "c.parquet",
    )
    (corpus / "d.txt").write_bytes(b"a text file with \xff\xfe in it\n")
    out = tmp_path / "out"
    base = ["decontaminate", "--benchmark", "gsm8k", "--path", shared_data / "gsm8k", "--split", "test"]
    code, text = run([*base, "--corpus", corpus, "--out", out, "--on-bad-line", "skip", "--workers", 1], capsys)
    assert code == 0, text
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rejects"] == {
        "a.jsonl.zst": "rejects/a.jsonl.zst.rejects",
        "c.parquet": "rejects/c.parquet.rejects",
        "d.txt": "rejects/d.txt.rejects",
    }
    assert (out / summary["rejects"]["a.jsonl.zst"]).read_bytes() == b"".join(bad)  # byte for byte, in order
    assert json.loads((out / summary["rejects"]["c.parquet"]).read_bytes()) == {"id": "p1", "text": None}
    assert (out / summary["rejects"]["d.txt"]).read_bytes() == (corpus / "d.txt").read_bytes()
    assert summary["shards"]["a.jsonl.zst"]["bad_lines"] == 5 and summary["total"]["bad_lines"] == 7
    assert not (out / "rejects" / "b.jsonl.rejects").exists()
    assert "rejects/a.jsonl.zst.rejects" in (out / "report.html").read_text()
    kept = zstandard.ZstdDecompressor().decompressobj().decompress((out / "cleaned" / "a.jsonl.zst").read_bytes())
    assert kept == b"".join(good[:5])  # every good line kept, every bad one in the rejects: nothing lost
