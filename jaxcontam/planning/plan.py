"""Capacity planning: compile the engine's hot steps for a device mesh without weights, and read their costs.

The weights are `jax.ShapeDtypeStruct`s laid out exactly as `models.loading` places real ones (the same
checkpoint table and sharding rules), so a TPU slice can be planned on a CPU machine with libtpu installed:
`jax.experimental.topologies` gives abstract TPU devices, `jit(...).lower(...).compile()` the TPU executable.
Per step: bytes per device (`memory_analysis`), loop-aware flops, bytes accessed and collectives
(`planning.hlo_costs`), and a roofline time max(flops / peak, bytes / HBM bandwidth, collective bytes / ICI
bandwidth) from the chip's published figures (`planning.tpu_chips`). The roofline assumes the chip runs at its
peak wherever a resource bounds: a lower bound on time, so the tokens/s and MFU it gives are upper bounds.
`planning.efficiency` turns the same costs into an estimate with the fractions of peak published measurements
reach. These are compiler estimates, not measurements.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import importlib.util
import math
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, SingleDeviceSharding

from jaxcontam.errors import JaxcontamError
from jaxcontam.mesh import make_mesh, parse_mesh  # noqa: F401  (parse_mesh: `--mesh`, shared with every command)
from jaxcontam.models.checkpoint_map import checkpoint_entries
from jaxcontam.models.sharding import LAYERS, weight_sharding
from jaxcontam.models.spec import ModelSpec
from jaxcontam.planning import efficiency
from jaxcontam.planning.hlo_costs import Collective, hlo_costs
from jaxcontam.planning.tpu_chips import EXAMPLE_TOPOLOGIES, Chip

STEPS = ("score", "generate", "p_true", "ngram")


@contextlib.contextmanager
def _quiet_stderr():
    """Hide what libtpu prints to the process's stderr while it starts on a host without a TPU."""
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def topology_devices(topology: str) -> list:
    """The devices of `topology`: "local" (this host's devices) or a TPU topology name such as "v5e:2x4"."""
    if topology == "local":
        return jax.devices()
    if importlib.util.find_spec("libtpu") is None:
        raise JaxcontamError(
            f"planning for TPU topology {topology!r} needs libtpu (XLA's TPU compiler): install the "
            "tpu extra, pip install 'jaxcontam[tpu]', or plan for this host's devices with "
            "--topology local"
        )
    from jax.experimental import topologies

    os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")  # several planners (or test workers) at once
    try:
        with _quiet_stderr():
            return list(topologies.get_topology_desc(platform="tpu", topology_name=topology).devices)
    except Exception as exc:  # libtpu raises a runtime error for names it does not know
        raise JaxcontamError(
            f"libtpu does not know TPU topology {topology!r} ({str(exc).splitlines()[0]}); use "
            f"CHIP:SHAPE, e.g. {', '.join(EXAMPLE_TOPOLOGIES)}, or 'local'"
        ) from exc


def devices_per_chip(devices) -> int:
    """How many devices share one chip (v4 shows each TensorCore as a device); 1 where chips have no coords."""
    coords = collections.Counter(tuple(getattr(d, "coords", (d.id,))) for d in devices)
    return max(coords.values())


def _sharded_dims(spec: ModelSpec) -> dict[str, int]:
    return {
        "attention heads": spec.num_heads,
        "key/value heads": spec.num_kv_heads,
        "vocabulary": spec.vocab_size,
        "MLP width": spec.intermediate_size,
    }


def default_model_axis(spec: ModelSpec, device_count: int) -> int:
    """The largest model axis dividing the devices and every dimension split over it."""
    return max(
        m
        for m in range(1, device_count + 1)
        if device_count % m == 0 and all(n % m == 0 for n in _sharded_dims(spec).values())
    )


def plan_mesh(spec: ModelSpec, devices, data: int, model: int):
    """A ("data", "model") mesh over `devices`, refusing axes that do not divide the devices or the model."""
    if data * model != len(devices):
        raise JaxcontamError(
            f"mesh data={data},model={model} needs {data * model} devices but the topology has "
            f"{len(devices)}: choose data x model = {len(devices)}"
        )
    for what, n in _sharded_dims(spec).items():
        if n % model:
            fits = [m for m in range(1, len(devices) + 1) if len(devices) % m == 0 and n % m == 0]
            raise JaxcontamError(
                f"model={model} does not divide the model's {n} {what}: choose a model axis "
                f"among {fits} (that divides {n} and the {len(devices)} devices)"
            )
    return make_mesh(data, model, devices=devices)


def abstract_params(spec: ModelSpec, dtype, mesh, fsdp: bool = False) -> dict:
    """The weights pytree as ShapeDtypeStructs, sharded as `models.loading.place_params` places real weights
    (`fsdp`: each weight also split over "data")."""
    params: dict = {}
    for entry in checkpoint_entries(spec):
        shape = (spec.num_layers, *entry.shape) if entry.per_layer else entry.shape
        axes = (LAYERS, *entry.axes) if entry.per_layer else entry.axes
        node = params
        for key in entry.path[:-1]:
            node = node.setdefault(key, {})
        node[entry.path[-1]] = jax.ShapeDtypeStruct(shape, dtype, sharding=weight_sharding(mesh, shape, axes, fsdp))
    return params


def per_device_bytes(tree) -> int:
    """Bytes one device holds of a pytree of sharded ShapeDtypeStructs (the largest shard, for uneven splits)."""
    return sum(math.prod(x.sharding.shard_shape(x.shape)) * np.dtype(x.dtype).itemsize for x in jax.tree.leaves(tree))


@dataclasses.dataclass(frozen=True)
class StepPlan:
    """One compiled step: per-device memory and costs, and the roofline time (a lower bound) for the slice."""

    step: str
    shape: str  # the workload of one call, e.g. "8 x 2048"
    tokens: int  # tokens one call processes (scored, generated, judged or counted) over the slice
    weights_bytes: int
    argument_bytes: int
    temp_bytes: int
    output_bytes: int
    hbm_bytes: int | None
    flops: float
    bytes_accessed: float
    collectives: tuple[Collective, ...]
    model_flops: float | None  # useful model flops of one call over the slice (None: not a model step)
    roofline_seconds: float | None  # roofline time of one call: a lower bound, the chip at peak
    bound: str | None  # "compute", "hbm" or "ici": the resource whose roofline time is the longest
    unknown_trip_loops: int

    @property
    def total_bytes(self) -> int:
        return self.argument_bytes + self.temp_bytes + self.output_bytes

    @property
    def fits(self) -> bool | None:
        return None if self.hbm_bytes is None else self.total_bytes <= self.hbm_bytes

    @property
    def tokens_per_second_upper_bound(self) -> float | None:
        return None if not self.roofline_seconds else self.tokens / self.roofline_seconds


def mfu_upper_bound(plan: StepPlan, chip: Chip | None, devices: int) -> float | None:
    """Model flops of a call over the slice's peak flops for the call's roofline time: an upper bound on MFU."""
    if chip is None or plan.model_flops is None or not plan.roofline_seconds:
        return None
    return plan.model_flops / (plan.roofline_seconds * chip.peak_flops * devices)


def estimate(plan: StepPlan, chip: Chip | None, devices: int) -> efficiency.Estimate | None:
    """The efficiency-adjusted estimate of a call over the slice (`planning.efficiency`); None for a chip without
    published efficiencies."""
    if chip is None:
        return None
    return efficiency.estimate(
        chip,
        devices,
        plan.tokens,
        plan.model_flops,
        plan.flops,
        plan.bytes_accessed,
        efficiency.ici_traffic(plan.collectives),
    )


def program_text(compiled) -> str:
    """The optimized HLO with every constant written out (`as_text()` elides large ones as {...}, and the splash
    kernel's block masks are constants `hlo_costs` reads); `as_text()` where jaxlib has no print options."""
    try:
        from jaxlib import _hlo  # pyright: ignore[reportAttributeAccessIssue]  (not in jaxlib's stubs)

        options = _hlo.HloPrintOptions()
        options.print_large_constants = True
        return compiled.runtime_executable().hlo_modules()[0].to_string(options)
    except (ImportError, AttributeError, IndexError):
        return compiled.as_text()


def compile_step(
    step: str,
    shape: str,
    tokens: int,
    jitted,
    args,
    kwargs,
    *,
    weights,
    mesh,
    chip: Chip | None,
    model_flops: float | None,
) -> StepPlan:
    """Lower and compile `jitted(*args, **kwargs)` on `mesh`; read memory, loop-aware costs and the roofline."""
    with jax.set_mesh(mesh):
        lowered = jitted.lower(*args, **kwargs)
        try:
            compiled = lowered.compile()
        except jax.errors.JaxRuntimeError as exc:  # XLA refuses a program whose buffers exceed the device's HBM
            if "RESOURCE_EXHAUSTED" not in str(exc):
                raise
            raise JaxcontamError(
                f"{step} ({shape}) does not fit: XLA's compiler says "
                f"{str(exc).splitlines()[0].split('RESOURCE_EXHAUSTED:')[-1].strip()} Use a smaller "
                "--batch or --seq, a larger model axis, or --fsdp."
            ) from exc
    memory = compiled.memory_analysis()
    costs = hlo_costs(program_text(compiled))
    roofline_seconds = bound = None
    if chip is not None:
        times = {"compute": costs.flops / chip.peak_flops, "hbm": costs.bytes_accessed / chip.hbm_bandwidth}
        if chip.ici_bandwidth is not None:
            times["ici"] = costs.collective_bytes / chip.ici_bandwidth
        bound = max(times, key=lambda kind: times[kind])
        roofline_seconds = times[bound]
    return StepPlan(
        step=step,
        shape=shape,
        tokens=tokens,
        weights_bytes=per_device_bytes(weights),
        argument_bytes=memory.argument_size_in_bytes,
        temp_bytes=memory.temp_size_in_bytes,
        output_bytes=memory.output_size_in_bytes - memory.alias_size_in_bytes,
        hbm_bytes=None if chip is None else chip.hbm_bytes,
        flops=costs.flops,
        bytes_accessed=costs.bytes_accessed,
        collectives=costs.collectives,
        model_flops=model_flops,
        roofline_seconds=roofline_seconds,
        bound=bound,
        unknown_trip_loops=costs.unknown_trip_loops,
    )


def rows(mesh, shape, dtype=jnp.int32):
    """A batch input: leading axis over "data"."""
    return jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(mesh, jax.P("data", *([None] * (len(shape) - 1)))))


def replicated(mesh, shape, dtype):
    return jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(mesh, jax.P()))


def on_device(device, shape, dtype):
    return jax.ShapeDtypeStruct(shape, dtype, sharding=SingleDeviceSharding(device))


def crosses_hosts(collective, hosts: list[int] | None) -> bool | None:
    """Whether `collective` exchanges data between devices of different hosts (`hosts[i]`: the host of the
    device at position i of the compiled program's device assignment); None when not known."""
    if hosts is None:
        return None
    if collective.groups is None:  # every device in one group
        return len(set(hosts)) > 1
    return any(len({hosts[i] for i in group if i < len(hosts)}) > 1 for group in collective.groups)
