"""Multi-host runs: one jaxcontam process per host, all running the same command (JAX's multi-controller model),
joined by JAX's own runtime, `jax.distributed.initialize`.

`ClusterSettings` holds the command line's choice (`--distributed auto|off`, or the explicit `--coordinator
HOST:PORT --num-processes N --process-id I`, or their JAXCONTAM_* variables), refused when incomplete before any
work. `start` joins the processes: the explicit triple, else (auto) the cluster JAX's own detection finds (a TPU
pod, SLURM, Open MPI, Kubernetes) when it has several processes, else nothing (one process, as always). Joining
is bounded by `timeout`: a coordinator that cannot be reached or a peer that never joins is a ClusterError that
names the problem and the fix, never a hang.

Once joined, the engine splits batch rows by process (`engine.distributed`) and corpus counting splits shards
(`ngram.stream`); process 0 alone writes outputs (`is_writer`), and what a rerun reads back from them reaches
every process from process 0 (`from_writer`), so all take the same decisions whether or not hosts share a disk.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import sys
import threading
from collections.abc import Callable
from typing import Any

from jaxcontam import errors
from jaxcontam.errors import ClusterError, JaxcontamError

DISTRIBUTED_MODES = ("auto", "off")
DEFAULT_TIMEOUT = 45.0  # seconds for every process to join
_JAX_GRACE = 30  # JAX's own connect timeout is ours + this, so our error comes first, never JAX's abort


def _split_address(address: str) -> tuple[str, int] | None:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        return None
    return host.strip("[]"), int(port)


@dataclasses.dataclass(frozen=True)
class ClusterSettings:
    """How this process joins the others; checked when made."""

    distributed: str = "auto"
    coordinator: str | None = None
    num_processes: int | None = None
    process_id: int | None = None
    timeout: float = DEFAULT_TIMEOUT

    def __post_init__(self):
        if self.distributed not in DISTRIBUTED_MODES:
            raise JaxcontamError(f"--distributed {self.distributed!r}: choose auto or off")
        given = {
            "--coordinator (JAXCONTAM_COORDINATOR)": self.coordinator,
            "--num-processes (JAXCONTAM_NUM_PROCESSES)": self.num_processes,
            "--process-id (JAXCONTAM_PROCESS_ID)": self.process_id,
        }
        missing = [name for name, value in given.items() if value is None]
        if missing and len(missing) < len(given):
            raise JaxcontamError(
                f"{' and '.join(missing)} missing: a multi-host run gives every process all three, "
                "--coordinator HOST:PORT (process 0's host and a free port), --num-processes N and its own "
                "--process-id 0..N-1 (or none of them: one process, or the cluster --distributed auto finds)"
            )
        if self.coordinator is None:
            return
        if self.distributed == "off":
            raise JaxcontamError("--distributed off with --coordinator: drop one of them")
        if _split_address(self.coordinator) is None:
            raise JaxcontamError(
                f"--coordinator {self.coordinator!r}: expected HOST:PORT of process 0, e.g. 10.0.0.1:8476"
            )
        assert self.num_processes is not None and self.process_id is not None  # all three given (checked above)
        if self.num_processes < 1 or not 0 <= self.process_id < self.num_processes:
            raise JaxcontamError(
                f"--process-id {self.process_id} with --num-processes {self.num_processes}: "
                f"process ids are 0..{self.num_processes - 1}, one per process"
            )
        if self.timeout <= 0:
            raise JaxcontamError(f"--distributed-timeout {self.timeout}: give a positive number of seconds")

    @property
    def explicit(self) -> bool:
        return self.coordinator is not None


def detected_cluster() -> tuple[str, int] | None:
    """(name, process count) of the cluster JAX's automatic detection would join here, or None.

    Asks the cluster environments `jax.distributed.initialize()` itself consults (TPU pod metadata, SLURM, Open MPI,
    Kubernetes; mpi4py only on request) in its order; each first checks its variables, so a single machine answers
    at once. JAX has no public API for this registry: if a JAX release moves it, nothing is detected (the explicit
    triple still works).
    """
    try:
        from jax._src.clusters import ClusterEnv

        environments = list(ClusterEnv._cluster_types)
    except (ImportError, AttributeError):
        return None
    for env in environments:
        if not env.opt_in_only_method and env.is_env_present():
            return env.__name__.removesuffix("Cluster"), int(env.get_process_count())
    return None


def start(settings: ClusterSettings) -> None:
    """Join the other processes (see the module docstring); nothing to do for one process or when already joined."""
    import jax

    if jax.distributed.is_initialized():
        return
    if settings.explicit:
        if settings.num_processes == 1:
            return
        where = {
            "coordinator_address": settings.coordinator,
            "num_processes": settings.num_processes,
            "process_id": settings.process_id,
        }
    elif settings.distributed == "auto":
        found = detected_cluster()
        if found is None or found[1] < 2:
            return
        where = {}
    else:
        return
    if "JAX_CPU_COLLECTIVES_IMPLEMENTATION" not in os.environ:  # CPU processes exchange results over gloo
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    _join(where, settings, None if settings.explicit else found)


def _join(where: dict, settings: ClusterSettings, detected: tuple[str, int] | None) -> None:
    """`jax.distributed.initialize(**where)` on a thread, waited for at most `settings.timeout` seconds."""
    import jax

    failure: list[BaseException] = []

    def initialize():
        try:
            jax.distributed.initialize(
                **where,
                initialization_timeout=int(settings.timeout) + _JAX_GRACE,
                heartbeat_timeout_seconds=int(settings.timeout),  # a dead peer is noticed in bounded time
            )
        except Exception as error:
            failure.append(error)

    what = f"the cluster JAX detected ({detected[0]})" if detected else f"the coordinator {settings.coordinator}"
    thread = threading.Thread(target=initialize, name="jax.distributed.initialize", daemon=True)
    thread.start()
    thread.join(settings.timeout)
    if thread.is_alive():
        raise ClusterError(_not_joined(settings, detected))
    if failure:
        raise ClusterError(
            f"joining {what} failed: {failure[0]}; start every process before JAX runs anything "
            "(--distributed off runs this process alone)"
        ) from failure[0]
    print(f"process {jax.process_index()} of {jax.process_count()}, joined through {what}", file=sys.stderr)


def _reachable(address: str) -> bool:
    split = _split_address(address)
    if split is None:
        return False
    host, port = split
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def _not_joined(settings: ClusterSettings, detected: tuple[str, int] | None) -> str:
    waited = f"within {settings.timeout:g} s"
    slow = "; if hosts start slowly, raise --distributed-timeout (JAXCONTAM_DISTRIBUTED_TIMEOUT)"
    if detected is not None:
        name, count = detected
        return (
            f"JAX detected a cluster of {count} processes ({name}), but they did not all join {waited}: run the "
            "command on every host of the job at once (srun, or gcloud ... ssh --worker=all), or give "
            f"--distributed off to run on this host alone{slow}"
        )
    coordinator, count = settings.coordinator, settings.num_processes
    assert coordinator is not None and count is not None  # an explicit group: validated when the options were read
    every = (
        f"start the same command on all {count} hosts with --coordinator {coordinator} --num-processes {count} "
        f"and each its own --process-id 0..{count - 1}"
    )
    if settings.process_id == 0:
        return (
            f"process 0 waited at {coordinator} for the other {count - 1} process(es), which did not all join "
            f"{waited}: {every}, and check that they can reach {coordinator} (address, firewall){slow}"
        )
    if not _reachable(coordinator):
        return (
            f"cannot reach the coordinator {coordinator} {waited}: process 0 (--process-id 0) must run on that "
            f"host with the same --coordinator, and this host must reach that port (address, firewall); {every}"
        )
    return f"the coordinator {coordinator} answers, but not all {count} processes joined {waited}: {every}{slow}"


PEER_LOST_SIGNS = ("Connection closed by peer", "Connection reset by peer", "heartbeat", "Gloo", "UNAVAILABLE")


def peer_lost(error: BaseException) -> str | None:
    """The clear error for a JAX runtime error that says another process of the group stopped (a collective's
    connection closed, a missed heartbeat), or None when `error` is not that or this process runs alone."""
    import jax

    if not jax.distributed.is_initialized() or jax.process_count() < 2:
        return None
    # a failed collective reaches Python as a JaxRuntimeError, or as a ValueError from jax's multihost utilities
    if not isinstance(error, (jax.errors.JaxRuntimeError, ValueError)) or not any(
        s in str(error) for s in PEER_LOST_SIGNS
    ):
        return None
    cause = str(error).strip().splitlines()[0][:300]
    return (
        f"process {jax.process_index()} of {jax.process_count()}: another process of the group stopped ({cause}). "
        "Nothing finished is lost: rerun every process with the same command, and finished chunks are read back "
        "from process 0's output folder"
    )


def is_writer() -> bool:
    """Whether this process writes outputs: process 0 of a multi-host run, or the only process."""
    import jax

    return jax.process_index() == 0


def from_writer(read: Callable[[], Any]) -> Any:
    """`read()` as process 0 returns it, on every process (a JSON value; only process 0 calls `read`).

    For state read back from the outputs (resume chunks, saved counts): every process then takes the same
    decisions, whether or not the hosts share a filesystem. An error in `read` is raised on every process.
    """
    import jax

    if jax.process_count() == 1:
        return read()
    import numpy as np
    from jax.experimental import multihost_utils

    message, raised = None, None
    if is_writer():
        try:
            message = {"value": read()}
        except Exception as error:  # raised here, and as a JaxcontamError on the others: none waits for it
            message, raised = {"error": str(error), "type": type(error).__name__}, error
    payload = np.frombuffer(json.dumps(message).encode(), np.uint8) if is_writer() else np.zeros(0, np.uint8)
    size = int(multihost_utils.broadcast_one_to_all(np.int32(payload.size)))
    if not is_writer():
        payload = np.zeros(size, np.uint8)
    message = json.loads(np.asarray(multihost_utils.broadcast_one_to_all(payload)).tobytes())
    if raised is not None:
        raise raised
    if "error" in message:
        kind = getattr(errors, message["type"], None)
        kind = kind if isinstance(kind, type) and issubclass(kind, JaxcontamError) else JaxcontamError
        raise kind(f"process 0: {message['error']}")
    return message["value"]
