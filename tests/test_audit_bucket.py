"""The bundled audit with everything in a bucket: its config, model, benchmark, rephrasing, ground-truth and corpus
files (named relative to the config, as the bundled config names them) and its `--out`, on a local S3 server.
It must give the summary.json of the same audit run from local files, and a run killed mid-way must resume from
what the bucket holds on a machine without the first run's local files."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from experiments.object_stores import s3_server
from helpers import without_timings
from jaxcontam.audit.config import EXAMPLE_CONFIG

EXAMPLE = EXAMPLE_CONFIG.parent
EXCHANGEABILITY = "\n[exchangeability]\nchunks = 2\npermutations = 2\n"


def config_text(out: str) -> str:
    """The bundled audit.toml cut to 8 items per benchmark and short generations, writing to `out`; its file
    names stay relative to the config's own folder."""
    text = EXAMPLE_CONFIG.read_text()
    text = text.replace('split = "test"', 'split = "test"\nlimit = 8')
    text = text.replace("max_new_tokens = 200", "max_new_tokens = 48")
    text = text.replace('out = "jaxcontam-audit"', f"out = {json.dumps(out)}\nchunk_size = 4")
    assert f"out = {json.dumps(out)}" in text
    return text + EXCHANGEABILITY


def audit(config: str, cache, **popen):
    command = [sys.executable, "-m", "jaxcontam.cli", "audit", "--config", config]
    env = dict(os.environ, JAXCONTAM_CACHE=str(cache))
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **popen)


def finish(process) -> str:
    log = process.communicate(timeout=600)[0]
    assert process.returncode == 0, log[-3000:]
    return log


def comparable(summary: dict) -> dict:
    """The summary without the corpus and counts paths (local files here, objects in the bucket there)."""
    settings = {k: v for k, v in summary["settings"].items() if k not in ("corpora", "counts")}
    return {**without_timings(summary), "settings": settings}


@pytest.fixture(scope="module")
def bucket():
    """A local S3 server with a bucket "audits" holding the bundled example under example/. The whole audit runs
    on S3 only: storage goes through fsspec for every scheme, and tests/test_storage.py reads a corpus and a
    model from a GCS emulator."""
    with s3_server() as (direct, _):
        direct.mkdir("audits")
        direct.put(str(EXAMPLE) + "/", "audits/example/", recursive=True)
        yield direct


@pytest.fixture(scope="module")
def local_summary(tmp_path_factory):
    folder = tmp_path_factory.mktemp("local")
    for path in EXAMPLE.iterdir():  # the same files side by side, so the same relative names resolve
        (folder / path.name).symlink_to(path)
    (folder / "audit.toml").unlink()
    (folder / "audit.toml").write_text(config_text(str(folder / "out")))
    finish(audit(str(folder / "audit.toml"), folder / "cache"))
    return json.loads((folder / "out" / "summary.json").read_text())


def test_an_audit_read_from_and_written_to_a_bucket_equals_the_local_one(bucket, local_summary, tmp_path):
    bucket.pipe("audits/example/audit.toml", config_text("s3://audits/out").encode())
    log = finish(audit("s3://audits/example/audit.toml", tmp_path / "cache"))
    assert "corpus s3://audits/example/corpus.jsonl.gz" in log
    summary = json.loads(bucket.cat("audits/out/summary.json"))
    assert summary["settings"]["corpora"] == ["s3://audits/example/corpus.jsonl.gz"]
    assert comparable(summary) == comparable(local_summary)
    written = {path.removeprefix("audits/out/") for path in bucket.find("audits/out")}
    assert {"items.parquet", "report.html", "summary.json"} <= written
    assert any(name.startswith("state/pacost-") for name in written)
    assert len([name for name in written if name.startswith("plots/")]) == 5


def test_a_killed_bucket_audit_resumes_from_the_bucket_on_a_fresh_machine(local_summary, tmp_path):
    with s3_server() as (bucket, _):
        bucket.mkdir("audits")
        bucket.put(str(EXAMPLE) + "/", "audits/example/", recursive=True)
        killed_and_resumed(bucket, local_summary, tmp_path)


def killed_and_resumed(bucket, local_summary, tmp_path) -> None:
    text = config_text("s3://audits/resumed").replace(  # and the n-gram counts in a folder of their own there
        'paths = ["corpus.jsonl.gz"]', 'paths = ["corpus.jsonl.gz"]\ncounts = "s3://audits/counts"'
    )
    assert "counts =" in text
    bucket.pipe("audits/example/audit.toml", text.encode())
    process = audit("s3://audits/example/audit.toml", tmp_path / "first")
    deadline = time.time() + 300
    while time.time() < deadline and process.poll() is None:
        if any(bucket.size(p) > 0 for p in bucket.glob("audits/resumed/state/pacost-*.jsonl")):
            break
        time.sleep(0.2)
        bucket.invalidate_cache()
    assert process.poll() is None, "the audit finished before it could be killed"
    os.kill(process.pid, signal.SIGKILL)
    process.communicate()
    bucket.invalidate_cache()
    assert not bucket.exists("audits/resumed/summary.json")
    log = finish(audit("s3://audits/example/audit.toml", tmp_path / "second"))  # another cache: a fresh machine
    assert "reused" in log or "resum" in log, log[-2000:]
    bucket.invalidate_cache()
    assert comparable(json.loads(bucket.cat("audits/resumed/summary.json"))) == comparable(local_summary)
    assert any(path.endswith(".npz") for path in bucket.find("audits/counts"))
