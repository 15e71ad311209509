"""`jaxcontam` run as several processes, as on a TPU pod or a GPU cluster (one process per host), here two local CPU
processes joined by `jax.distributed` over gloo, each in its own folder as on hosts with their own disks: the
outputs equal one process's and only process 0 writes them; a coordinator that never answers, or a peer that
never joins, is a clear error in bounded time; incomplete settings are refused before any work."""

import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import jaxcontam
from helpers import MODEL_LOAD_REACHED, free_port, without_timings
from jaxcontam import cluster
from jaxcontam.cli import main

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = Path(jaxcontam.__file__).parent / "examples" / "tiny_contaminated"
CLUSTER_VARIABLES = ("SLURM_JOB_ID", "SLURM_STEP_NODELIST", "SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID")


def start_cli(args, cwd: Path, env: dict | None = None) -> subprocess.Popen:
    """`jaxcontam ARGS` in a fresh process, in `cwd`, on one CPU device, importing this checkout."""
    cwd.mkdir(parents=True, exist_ok=True)
    environment = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        JAX_PLATFORMS="cpu",
        XLA_FLAGS="--xla_force_host_platform_device_count=1",
        **(env or {}),
    )
    return subprocess.Popen(
        [sys.executable, "-m", "jaxcontam.cli", *map(str, args)],
        cwd=cwd,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish(processes, timeout=150) -> list[str]:
    logs = [p.communicate(timeout=timeout)[0] for p in processes]
    assert [p.returncode for p in processes] == [0] * len(processes), "\n----\n".join(logs)
    return logs


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


@pytest.fixture
def texts(tmp_path) -> Path:
    path = tmp_path / "texts.jsonl"
    path.write_text("".join((EXAMPLE / "copa_test_sample.jsonl").read_text().splitlines(keepends=True)[:7]))
    return path


@pytest.mark.parametrize("count", [2, 4])
def test_score_on_several_processes_equals_one_process_and_process_0_alone_writes(texts, tmp_path, count):
    score = ["score", "--model", EXAMPLE / "model", "--data", texts, "--field", "text=premise", "--batch-rows", "2"]
    cluster_args = ["--coordinator", f"127.0.0.1:{free_port()}", "--num-processes", count]
    processes = [
        start_cli([*cluster_args, "--process-id", i, *score, "--out", "out.jsonl"], tmp_path / f"host{i}")
        for i in range(count)
    ]
    main([*map(str, score), "--out", str(tmp_path / "single.jsonl")])
    logs = finish(processes, timeout=240)
    assert f"process {count - 1} of {count}" in logs[-1]
    for other in range(1, count):
        assert files_under(tmp_path / f"host{other}") == []  # the other hosts computed their share, wrote nothing
    assert files_under(tmp_path / "host0") == ["out.jsonl"]
    single = [json.loads(line) for line in (tmp_path / "single.jsonl").read_text().splitlines()]
    joined = [json.loads(line) for line in (tmp_path / "host0" / "out.jsonl").read_text().splitlines()]
    assert [(r["id"], r["num_tokens"]) for r in joined] == [(r["id"], r["num_tokens"]) for r in single]
    assert len(joined) == 7
    for a, b in zip(joined, single):
        np.testing.assert_allclose(a["token_logprobs"], b["token_logprobs"], rtol=1e-5, atol=1e-5)
        for key in ("mean_logprob", "zlib_ratio", "min_k", "min_k_plus_plus"):
            assert a[key] == pytest.approx(b[key], rel=1e-5, abs=1e-6)


def ngram_args(tmp_path: Path) -> list:
    """`jaxcontam ngram` over the bundled corpus split into three files (one per process, or none for some)."""
    lines = gzip.open(EXAMPLE / "corpus.jsonl.gz", "rt").read().splitlines(keepends=True)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for part in range(3):
        (corpus / f"part{part}.jsonl").write_text("".join(lines[part::3]))
    ngram = ["ngram", "--benchmark", "copa", "--path", EXAMPLE / "copa_test_sample.jsonl", "--split", "test"]
    return ngram + ["--corpus", corpus, "--tokenizer", EXAMPLE / "model", "--chunk-tokens", 4096, "--out", "ngram"]


def test_ngram_on_two_processes_from_environment_variables_counts_once_and_reuses_process_0s_counts(
    tmp_path, monkeypatch
):
    """Each process counts its own corpus files; process 0 writes counts and items; a rerun reads process 0's
    counts although the other host's folder has none."""
    ngram = ngram_args(tmp_path)

    def started(*extra) -> list[subprocess.Popen]:
        port = free_port()
        return [
            start_cli(
                [*ngram, *extra],
                tmp_path / f"host{i}",
                {
                    "JAXCONTAM_COORDINATOR": f"127.0.0.1:{port}",
                    "JAXCONTAM_NUM_PROCESSES": "2",
                    "JAXCONTAM_PROCESS_ID": str(i),
                },
            )
            for i in range(2)
        ]

    def on_two_processes(*extra) -> list[str]:
        return finish(started(*extra))

    def items(folder: Path) -> list[dict]:
        return pq.read_table(folder / "ngram" / "items.parquet").to_pylist()

    (tmp_path / "single").mkdir()
    monkeypatch.chdir(tmp_path / "single")
    main([*map(str, ngram)])
    logs = on_two_processes()
    assert "counted ngram/counts" in logs[0]
    assert files_under(tmp_path / "host1") == []
    assert files_under(tmp_path / "host0") == files_under(tmp_path / "single")
    assert items(tmp_path / "host0") == items(tmp_path / "single")
    for view in ("raw", "normalized"):
        joined, single = (np.load(tmp_path / f / "ngram" / "counts" / f"{view}.npz") for f in ("host0", "single"))
        np.testing.assert_array_equal(joined["counts"], single["counts"])
        assert joined["counts"].sum() > 0

    main([*map(str, ngram), "--mincount", "2"])
    logs = on_two_processes("--mincount", "2")
    assert "reused counts from ngram/counts" in logs[0]
    assert files_under(tmp_path / "host1") == []
    assert items(tmp_path / "host0") == items(tmp_path / "single")

    (tmp_path / "host0" / "ngram" / "counts" / "raw.npz").write_bytes(b"not npz")  # process 0's error stops both
    processes = started()
    logs = [p.communicate(timeout=120)[0] for p in processes]
    assert [p.returncode for p in processes] == [2, 2], logs
    assert "counts/raw.npz: not a readable jaxcontam n-gram file" in logs[0]
    assert "error: process 0: ngram/counts/raw.npz: not a readable jaxcontam n-gram file" in logs[1]


def test_ngram_on_four_processes_counts_as_one_process(tmp_path, monkeypatch):
    """Four processes split three corpus files (one process has none) and count as one process does."""
    ngram = ngram_args(tmp_path)
    cluster_args = ["--coordinator", f"127.0.0.1:{free_port()}", "--num-processes", 4]
    processes = [start_cli([*cluster_args, "--process-id", i, *ngram], tmp_path / f"host{i}") for i in range(4)]
    (tmp_path / "single").mkdir()
    monkeypatch.chdir(tmp_path / "single")
    main([*map(str, ngram)])
    finish(processes, timeout=240)
    assert all(files_under(tmp_path / f"host{i}") == [] for i in (1, 2, 3))
    assert files_under(tmp_path / "host0") == files_under(tmp_path / "single")
    for view in ("raw", "normalized"):
        joined, single = (np.load(tmp_path / f / "ngram" / "counts" / f"{view}.npz") for f in ("host0", "single"))
        np.testing.assert_array_equal(joined["counts"], single["counts"])
    table = (pq.read_table(tmp_path / f / "ngram" / "items.parquet").to_pylist() for f in ("host0", "single"))
    assert next(table) == next(table)


def assert_close(joined, single, where="summary"):
    """Equal JSON trees, floats to float32 rounding (the processes split each batch over their devices, and since
    short texts are packed into rows of at least 256 tokens a process packs its share into other rows than one
    process does: P(True) effect sizes moved 1.2e-6 to 1.9e-6 between the two, log-probs up to 1.3e-5)."""
    if isinstance(single, dict):
        assert sorted(joined) == sorted(single), where
        for key in single:
            assert_close(joined[key], single[key], f"{where}.{key}")
    elif isinstance(single, list):
        assert len(joined) == len(single), where
        for i, (a, b) in enumerate(zip(joined, single)):
            assert_close(a, b, f"{where}[{i}]")
    elif isinstance(single, float):
        assert joined == pytest.approx(single, rel=1e-4, abs=5e-6), where
    else:
        assert joined == single, where


# the bundled example cut to 8 items per benchmark and 24 generated tokens (the whole example takes over 10
# minutes on one process of the 2-core test machine)
AUDIT = ["audit", "--limit", "8", "--set", "pacost.max_new_tokens=24", "--set", "chunk_size=4"]


@pytest.fixture(scope="module")
def one_process_audit(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("single") / "audit"
    main([*AUDIT, "--out", str(out)])
    return out


def test_audit_on_two_processes_survives_a_killed_process_and_equals_one_process(tmp_path, one_process_audit):
    """Process 1 is SIGKILLed once process 0 has stored a chunk: process 0 stops with a clear error in bounded
    time; the group rerun finishes from the stored chunks (process 1, which stores nothing, reuses them from
    process 0's state) and equals one process."""
    audit = AUDIT

    def on_two_processes() -> list[subprocess.Popen]:
        port = free_port()
        cluster_args = ["--coordinator", f"127.0.0.1:{port}", "--num-processes", 2, "--distributed-timeout", 20]
        return [
            start_cli([*cluster_args, "--process-id", i, *audit, "--out", "audit"], tmp_path / f"host{i}")
            for i in range(2)
        ]

    processes = on_two_processes()
    state = tmp_path / "host0" / "audit" / "state"
    deadline = time.monotonic() + 240
    while not any(path.read_text().count("\n") for path in state.glob("*.jsonl")):
        assert time.monotonic() < deadline and processes[0].poll() is None, processes[0].communicate()[0]
        time.sleep(0.2)
    processes[1].kill()
    killed = time.monotonic()
    survivor_log = processes[0].communicate(timeout=90)[0]
    processes[1].communicate()
    assert time.monotonic() - killed < 60, survivor_log
    assert processes[0].returncode == 3, survivor_log
    assert "another process of the group stopped" in survivor_log and "rerun every process" in survivor_log

    logs = finish(on_two_processes(), timeout=240)
    assert all("(reused from an earlier run)" in log for log in logs)  # the chunks stored before the kill
    assert "report: audit/report.html" in logs[0] and "report:" not in logs[1]
    assert files_under(tmp_path / "host1") == []
    assert_same_audit(tmp_path / "host0" / "audit", one_process_audit)


def assert_same_audit(joined: Path, single: Path) -> None:
    """The same files, summary (to float32 rounding) and item order as the one-process audit."""
    assert files_under(joined) == files_under(single)
    summary = json.loads((joined / "summary.json").read_text())
    assert_close(without_timings(summary), without_timings(json.loads((single / "summary.json").read_text())))
    order = [
        [(r["benchmark"], r["id"]) for r in pq.read_table(f / "items.parquet").to_pylist()] for f in (joined, single)
    ]
    assert order[0] == order[1]


def test_audit_on_four_processes_equals_one_process(tmp_path, one_process_audit):
    cluster_args = ["--coordinator", f"127.0.0.1:{free_port()}", "--num-processes", 4]
    processes = [
        start_cli([*cluster_args, "--process-id", i, *AUDIT, "--out", "audit"], tmp_path / f"host{i}") for i in range(4)
    ]
    logs = finish(processes, timeout=360)
    assert "report: audit/report.html" in logs[0] and not any("report:" in log for log in logs[1:])
    assert all(files_under(tmp_path / f"host{i}") == [] for i in (1, 2, 3))
    assert_same_audit(tmp_path / "host0" / "audit", one_process_audit)


def test_unreachable_coordinator_and_missing_peer_are_clear_errors_in_bounded_time(texts, tmp_path):
    """Process 1 with no process 0, process 0 with no process 1 (timeouts from JAXCONTAM_DISTRIBUTED_TIMEOUT),
    and task 1 of a 2-task SLURM step alone (--distributed-timeout, --distributed auto): each stops with one error
    line naming the problem and the fix."""
    score = ["score", "--model", EXAMPLE / "model", "--data", texts, "--out", "out.jsonl"]
    lonely_coordinator = f"127.0.0.1:{free_port()}"
    no_coordinator = f"127.0.0.1:{free_port()}"
    began = time.monotonic()
    no_peer = start_cli(
        ["--coordinator", lonely_coordinator, "--num-processes", 2, "--process-id", 0, *score],
        tmp_path / "host0",
        {"JAXCONTAM_DISTRIBUTED_TIMEOUT": "5"},
    )
    unreachable = start_cli(
        ["--coordinator", no_coordinator, "--num-processes", 2, "--process-id", 1, *score],
        tmp_path / "host1",
        {"JAXCONTAM_DISTRIBUTED_TIMEOUT": "8"},
    )
    slurm = dict(zip(CLUSTER_VARIABLES, ("77", "localhost", "2", "1", "0")))
    alone_in_slurm = start_cli(
        ["--distributed-timeout", 5, *score],
        tmp_path / "slurm",
        {**slurm, "JAX_COORDINATOR_PORT": str(free_port()), "JAXCONTAM_DISTRIBUTED": "auto"},
    )
    slurm_log = alone_in_slurm.communicate(timeout=60)[0]
    assert alone_in_slurm.returncode == 2, slurm_log
    assert "error: JAX detected a cluster of 2 processes (Slurm), but they did not all join within 5 s" in slurm_log
    assert "--distributed off" in slurm_log
    no_peer_log = no_peer.communicate(timeout=60)[0]
    no_peer_seconds = time.monotonic() - began
    unreachable_log = unreachable.communicate(timeout=60)[0]
    unreachable_seconds = time.monotonic() - began
    assert unreachable.returncode == 2, unreachable_log
    assert unreachable_seconds < 30
    assert f"error: cannot reach the coordinator {no_coordinator} within 8 s" in unreachable_log
    assert "--process-id 0" in unreachable_log and "firewall" in unreachable_log
    assert no_peer.returncode == 2, no_peer_log
    assert no_peer_seconds < 30
    assert f"error: process 0 waited at {lonely_coordinator} for the other 1 process(es)" in no_peer_log
    assert "within 5 s" in no_peer_log and "--distributed-timeout" in no_peer_log
    assert files_under(tmp_path / "host0") == files_under(tmp_path / "host1") == files_under(tmp_path / "slurm") == []


@pytest.mark.parametrize(
    "args, env, message",
    [
        (["--coordinator", "10.0.0.1:8476"], {}, "--num-processes (JAXCONTAM_NUM_PROCESSES) and --process-id"),
        ([], {"JAXCONTAM_COORDINATOR": "10.0.0.1:8476", "JAXCONTAM_PROCESS_ID": "1"}, "--num-processes"),
        (["--num-processes", "2", "--process-id", "0"], {}, "--coordinator (JAXCONTAM_COORDINATOR) missing"),
        (["--coordinator", "10.0.0.1", "--num-processes", "2", "--process-id", "0"], {}, "expected HOST:PORT"),
        (["--coordinator", "10.0.0.1:8476", "--num-processes", "2", "--process-id", "2"], {}, "ids are 0..1"),
        (
            ["--distributed", "off", "--coordinator", "h:1", "--num-processes", "2", "--process-id", "0"],
            {},
            "--distributed off with --coordinator",
        ),
    ],
)
def test_incomplete_or_contradictory_cluster_settings_are_refused_before_any_work(
    jaxcontam_cli, monkeypatch, tmp_path, args, env, message
):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code, err = jaxcontam_cli(*args, "score", "--model", "m", "--data", "missing.jsonl", "--out", tmp_path / "o.jsonl")
    assert code == 2
    assert message in err and err.startswith("error: ")
    assert MODEL_LOAD_REACHED not in err and "missing.jsonl" not in err
    assert not (tmp_path / "o.jsonl").exists()


def test_a_one_process_command_refuses_the_cluster_settings(jaxcontam_cli, tmp_path):
    code, err = jaxcontam_cli(
        "--coordinator", "10.0.0.1:8476", "--num-processes", "2", "--process-id", "0", "epg", "--items", tmp_path
    )
    assert code == 2
    assert "jaxcontam epg runs as one process: drop --coordinator" in err


def test_auto_joins_only_a_detected_cluster_of_several_processes(monkeypatch):
    """--distributed auto asks JAX's own cluster detection: nothing on one machine or a one-task SLURM job (no
    initialize); a SLURM job of 2 tasks is joined through `jax.distributed.initialize()` with JAX filling in the
    coordinator and process ids, and a bounded timeout."""
    import jax

    for name in (*CLUSTER_VARIABLES, "KUBERNETES_SERVICE_HOST", "OMPI_MCA_orte_hnp_uri"):
        monkeypatch.delenv(name, raising=False)
    calls = []
    monkeypatch.setattr(jax.distributed, "initialize", lambda **kwargs: calls.append(kwargs))
    assert cluster.detected_cluster() is None
    cluster.start(cluster.ClusterSettings())
    slurm = dict(zip(CLUSTER_VARIABLES, ("123", "node[1-2]", "1", "0", "0")))
    for name, value in slurm.items():
        monkeypatch.setenv(name, value)
    assert cluster.detected_cluster() == ("Slurm", 1)
    cluster.start(cluster.ClusterSettings())
    assert calls == []
    monkeypatch.setenv("SLURM_NTASKS", "2")
    assert cluster.detected_cluster() == ("Slurm", 2)
    cluster.start(cluster.ClusterSettings(distributed="off"))
    assert calls == []
    cluster.start(cluster.ClusterSettings(timeout=7))
    assert calls == [{"initialization_timeout": 7 + 30, "heartbeat_timeout_seconds": 7}]
