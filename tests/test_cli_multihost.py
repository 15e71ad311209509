"""`jaxcontam` run as several processes, as on a TPU pod or a GPU cluster (one process per host), here local CPU
processes joined by `jax.distributed` over gloo: a coordinator that never answers, or a peer that never joins, is a
clear error in bounded time; incomplete settings are refused before any work; --distributed auto joins only the
clusters JAX detects."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import jaxcontam
from conftest import MODEL_LOAD_REACHED
from jaxcontam import cluster

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = Path(jaxcontam.__file__).parent / "examples" / "tiny_contaminated"
CLUSTER_VARIABLES = ("SLURM_JOB_ID", "SLURM_STEP_NODELIST", "SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


@pytest.fixture
def texts(tmp_path) -> Path:
    path = tmp_path / "texts.jsonl"
    path.write_text("".join((EXAMPLE / "copa_test_sample.jsonl").read_text().splitlines(keepends=True)[:7]))
    return path


def test_unreachable_coordinator_and_missing_peer_are_clear_errors_in_bounded_time(texts, tmp_path):
    """Process 1 with no process 0 (the default timeout), and process 0 with no process 1 (a timeout from
    JAXCONTAM_DISTRIBUTED_TIMEOUT): each stops with one error line naming the problem and the fix."""
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
        ["--coordinator", no_coordinator, "--num-processes", 2, "--process-id", 1, *score], tmp_path / "host1"
    )
    no_peer_log = no_peer.communicate(timeout=60)[0]
    no_peer_seconds = time.monotonic() - began
    unreachable_log = unreachable.communicate(timeout=90)[0]
    unreachable_seconds = time.monotonic() - began
    assert unreachable.returncode == 2, unreachable_log
    assert unreachable_seconds < 60
    assert f"error: cannot reach the coordinator {no_coordinator} within 45 s" in unreachable_log
    assert "--process-id 0" in unreachable_log and "firewall" in unreachable_log
    assert no_peer.returncode == 2, no_peer_log
    assert no_peer_seconds < 30
    assert f"error: process 0 waited at {lonely_coordinator} for the other 1 process(es)" in no_peer_log
    assert "within 5 s" in no_peer_log and "--distributed-timeout" in no_peer_log
    assert files_under(tmp_path / "host0") == files_under(tmp_path / "host1") == []


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
    assert cluster.detected_cluster() == ("SlurmCluster", 1)
    cluster.start(cluster.ClusterSettings())
    assert calls == []
    monkeypatch.setenv("SLURM_NTASKS", "2")
    assert cluster.detected_cluster() == ("SlurmCluster", 2)
    cluster.start(cluster.ClusterSettings(distributed="off"))
    assert calls == []
    cluster.start(cluster.ClusterSettings(timeout=7))
    assert calls == [{"initialization_timeout": 7 + 30}]
