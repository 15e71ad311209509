"""`jaxcontam plan`: will a model's audit steps fit a TPU slice, and how fast might they run? Compiled, not run."""

from __future__ import annotations

import json

import click

from jaxcontam.commands.config_file import config_file_options
from jaxcontam.commands.mesh_options import dtype_option

GIB = 1 << 30


def read_spec(model: str):
    """A ModelSpec from a config.json file, a model directory or GGUF file, or a hub id (its config.json only),
    resolved as `load_model` resolves a model."""
    from jaxcontam.commands.mesh_options import attention_from_environment
    from jaxcontam.models.loading import read_config, resolve_path

    return read_config(resolve_path(model, patterns=("config.json",)), attention_from_environment())


def _gib(n) -> str:
    return "-" if n is None else f"{n / GIB:.2f}"


WHERE = {True: "crosses hosts, on ICI", False: "within a host", None: ""}


def _collective_lines(step: str, collectives: list[dict]) -> list[str]:
    grouped: dict[tuple[str, str, bool | None], list] = {}
    for c in collectives:
        entry = grouped.setdefault((c["kind"], c["shape"], c.get("crosses_hosts")), [c["bytes"], 0])
        entry[1] += c["count"]
    return [
        f"  {step:9s} {kind} {shape} ({size / (1 << 20):.1f} MiB) x {count}"
        + (f"  [{WHERE[cross]}]" if WHERE[cross] else "")
        for (kind, shape, cross), (size, count) in sorted(grouped.items(), key=lambda kv: -kv[1][0] * kv[1][1])
    ]


def step_record(plan, chip, devices: int, hosts: list[int] | None = None) -> dict:
    """One step's JSON: memory and costs per device; the roofline's lower bound on time with the upper bounds on
    tokens/s and MFU it gives; the efficiency-adjusted estimate (`planning.efficiency`); and whether each
    collective crosses hosts (`hosts`: the host of each device of the mesh, in the compiled program's order)."""
    from jaxcontam.planning.efficiency import ici_traffic
    from jaxcontam.planning.plan import crosses_hosts, estimate, mfu_upper_bound

    found = estimate(plan, chip, devices)
    return {
        "step": plan.step,
        "shape": plan.shape,
        "tokens_per_call": plan.tokens,
        "weights_bytes_per_device": plan.weights_bytes,
        "argument_bytes_per_device": plan.argument_bytes,
        "temp_bytes_per_device": plan.temp_bytes,
        "output_bytes_per_device": plan.output_bytes,
        "total_bytes_per_device": plan.total_bytes,
        "hbm_bytes_per_device": plan.hbm_bytes,
        "fits": plan.fits,
        "flops_per_device": plan.flops,
        "bytes_accessed_per_device": plan.bytes_accessed,
        "collective_bytes_per_device": sum(c.bytes * c.count for c in plan.collectives),
        "ici_traffic_bytes_per_device": ici_traffic(plan.collectives),
        "collectives": [
            {
                "kind": c.kind,
                "shape": c.shape,
                "bytes": c.bytes,
                "count": c.count,
                "crosses_hosts": crosses_hosts(c, hosts),
            }
            for c in plan.collectives
        ],
        "model_flops": plan.model_flops,
        "roofline_seconds_lower_bound": plan.roofline_seconds,
        "bound": plan.bound,
        "tokens_per_second_upper_bound": plan.tokens_per_second_upper_bound,
        "mfu_upper_bound": mfu_upper_bound(plan, chip, devices),
        "seconds_estimate": None if found is None else found.seconds,
        "tokens_per_second_estimate": None if found is None else found.tokens_per_second,
        "mfu_estimate": None if found is None else found.mfu,
        "best_published_mfu": None if found is None else found.best_published_mfu,
        "above_published": None if found is None else found.above_published,
        "loops_with_unknown_trip_count": plan.unknown_trip_loops,
    }


def efficiency_record(chip) -> dict | None:
    """The published efficiencies the estimate uses for `chip`, each with what was measured and its source."""
    from jaxcontam.planning.efficiency import MODEL, efficiency_for

    found = efficiency_for(chip)
    if found is None:
        return None
    figures = {
        name: {"value": f.value, "measured": f.measured, "source": f.source}
        for name, f in (
            ("compute", found.compute),
            ("hbm", found.hbm),
            ("ici", found.ici),
            ("best_mfu", found.best_mfu),
        )
    }
    return {"model": MODEL, **figures}


def run_plan(model, topology, mesh, dtype, steps, workload, fsdp: bool = False) -> dict:
    """Compile the requested steps and return the JSON-ready report."""
    import jax.numpy as jnp

    from jaxcontam.planning import plan as planning
    from jaxcontam.planning import steps as plan_steps
    from jaxcontam.planning.tpu_chips import chip_for

    spec = read_spec(model)
    devices = planning.topology_devices(topology)
    published = chip_for(devices[0].device_kind)
    chip = None if published is None else published.per_device(planning.devices_per_chip(devices))
    if mesh is None:
        model_axis = planning.default_model_axis(spec, len(devices))
        data, model_axis = len(devices) // model_axis, model_axis
    else:
        data, model_axis = planning.parse_mesh(mesh)
    device_mesh = planning.plan_mesh(spec, devices, data, model_axis)
    hosts = [int(getattr(d, "process_index", 0)) for d in device_mesh.devices.flat]
    plans = plan_steps.plan_model_steps(spec, device_mesh, jnp.dtype(dtype), chip, steps, workload, fsdp)
    if "ngram" in steps:
        plans.append(plan_steps.plan_ngram_step(devices, chip, workload))
    return {
        "note": "compiler estimates (XLA's compiled program and published chip figures), not measurements",
        "roofline": "max(flops / peak, bytes / HBM bandwidth, collective bytes / ICI bandwidth): a lower bound on "
        "time, so its tokens/s and MFU are upper bounds",
        "model": model,
        "model_type": spec.model_type,
        "topology": topology,
        "devices": len(devices),
        "device_kind": devices[0].device_kind,
        "mesh": {"data": data, "model": model_axis, "fsdp": fsdp},
        "dtype": dtype,
        "chip": None
        if published is None or chip is None  # chip is None exactly when published is
        else {
            "name": published.name,
            "source": published.source,
            "peak_flops_per_device": chip.peak_flops,
            "hbm_bytes_per_device": chip.hbm_bytes,
            "hbm_bandwidth_per_device": chip.hbm_bandwidth,
            "ici_bandwidth_per_device": chip.ici_bandwidth,
        },
        "efficiency": efficiency_record(published),
        "hosts": len(set(hosts)),
        "devices_per_host": len(devices) // len(set(hosts)),
        "network": "one slice: every collective runs on ICI, the chips' own links, between hosts too; none uses "
        "the data-center network (DCN), which only links slices",
        "steps": [step_record(p, chip, len(devices), hosts) for p in plans],
    }


def print_report(report: dict) -> None:
    chip = report["chip"]
    click.echo(
        f"{report['model']} ({report['model_type']}, {report['dtype']}) on {report['topology']}: "
        f"{report['devices']} x {report['device_kind']}, mesh data={report['mesh']['data']} x "
        f"model={report['mesh']['model']}" + (", fsdp" if report["mesh"].get("fsdp") else "")
    )
    if chip is None:
        click.echo("no published figures for this device: memory and costs only, no roofline")
    else:
        ici = "-" if chip["ici_bandwidth_per_device"] is None else f"{chip['ici_bandwidth_per_device'] / 1e9:.0f}"
        click.echo(
            f"per device: {chip['peak_flops_per_device'] / 1e12:.0f} TFLOP/s bf16, "
            f"{_gib(chip['hbm_bytes_per_device'])} GiB HBM at {chip['hbm_bandwidth_per_device'] / 1e9:.0f} GB/s, "
            f"ICI {ici} GB/s ({chip['source']})"
        )
    click.echo(
        f"{report['hosts']} host(s) x {report['devices_per_host']} devices: {report['network']}"
        if report.get("hosts", 1) > 1
        else "one host"
    )
    click.echo(f"{report['note']}\nroofline = {report['roofline']}")
    efficiency = report.get("efficiency")
    if efficiency is not None and chip is not None:
        best = efficiency["best_mfu"]
        click.echo(
            f"estimate = max(flops / (peak x {efficiency['compute']['value']:.2f}), bytes / (HBM bandwidth x "
            f"{efficiency['hbm']['value']:.2f})) + ICI traffic / (ICI bandwidth x {efficiency['ici']['value']:.2f}): "
            "fractions of peak from published measurements (--json names each source); best published MFU on "
            f"{chip['name']}: {best['value']:.1%} ({best['measured'].split(':')[0]}, {best['source'].split(',')[0]})"
        )
    click.echo()
    header = (
        "step",
        "call",
        "weights",
        "temps",
        "total",
        "HBM",
        "fits",
        "TFLOP",
        "GB moved",
        "coll. GB",
        "bound",
        "tokens/s upper bound",
        "MFU upper bound",
        "est. tokens/s",
        "est. MFU",
    )
    table: list[tuple] = [header]
    for s in report["steps"]:
        tps, mfu = s["tokens_per_second_upper_bound"], s["mfu_upper_bound"]
        est_tps, est_mfu = s["tokens_per_second_estimate"], s["mfu_estimate"]
        table.append(
            (
                s["step"],
                s["shape"],
                _gib(s["weights_bytes_per_device"]),
                _gib(s["temp_bytes_per_device"]),
                _gib(s["total_bytes_per_device"]),
                _gib(s["hbm_bytes_per_device"]),
                {True: "yes", False: "NO", None: "?"}[s["fits"]],
                f"{s['flops_per_device'] / 1e12:.3f}",
                f"{s['bytes_accessed_per_device'] / 1e9:.2f}",
                f"{s['collective_bytes_per_device'] / 1e9:.2f}",
                s["bound"] or "-",
                "-" if tps is None else f"{tps:,.0f}",
                "-" if mfu is None else f"{mfu:.0%}",
                "-" if est_tps is None else f"{est_tps:,.0f}",
                "-" if est_mfu is None else f"{est_mfu:.0%}" + ("!" if s["above_published"] else ""),
            )
        )
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    for row in table:
        click.echo("  ".join(str(v).ljust(n) for v, n in zip(row, widths)).rstrip())
    click.echo("(bytes per device in GiB; TFLOP, GB moved and collective GB per device per call)")
    if chip is not None and any(s["above_published"] for s in report["steps"]):
        click.echo(
            f"! an estimated MFU above the best published for {chip['name']} "
            f"({report['efficiency']['best_mfu']['value']:.1%}): no published measurement supports it"
        )
    click.echo("\ncollectives:")
    for s in report["steps"]:
        for line in _collective_lines(s["step"], s["collectives"]) or [f"  {s['step']:9s} none"]:
            click.echo(line)


@config_file_options
@click.command("plan")
@click.option("--model", required=True, help="config.json file, model directory, GGUF file or hub id (no weights).")
@click.option(
    "--topology",
    default="v5e:2x4",
    show_default=True,
    help="TPU topology known to libtpu (v5e:2x2, v5e:2x4, v5p:2x2x1, v4:2x2x1, ...) or 'local'.",
)
@click.option("--mesh", default=None, help="data=D,model=M (default: the largest model axis that divides).")
@click.option("--fsdp", is_flag=True, help='Split every weight over "data" too (as `load_model(..., fsdp=True)`).')
@dtype_option("bfloat16")
@click.option("--batch", type=click.IntRange(min=1), default=8, show_default=True, help="Rows per call.")
@click.option(
    "--seq", type=click.IntRange(min=2), default=2048, show_default=True, help="Tokens per row for score and p_true."
)
@click.option("--prompt-len", type=click.IntRange(min=1), default=512, show_default=True)
@click.option("--new-tokens", type=click.IntRange(min=1), default=64, show_default=True)
@click.option(
    "--chunk-tokens",
    type=click.IntRange(min=1),
    default=1 << 20,
    show_default=True,
    help="Corpus windows per n-gram count call.",
)
@click.option(
    "--table-rows",
    type=click.IntRange(min=1),
    default=1 << 20,
    show_default=True,
    help="Benchmark n-grams in the count table.",
)
@click.option("--steps", default="score,generate,p_true,ngram", show_default=True, help="Comma-separated steps.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def plan(
    model, topology, mesh, fsdp, dtype, batch, seq, prompt_len, new_tokens, chunk_tokens, table_rows, steps, as_json
):
    """Compile the audit's hot steps for a TPU slice (no TPU, no weights needed) and estimate memory and speed."""
    from jaxcontam.errors import JaxcontamError
    from jaxcontam.planning.plan import STEPS
    from jaxcontam.planning.steps import Workload

    chosen = tuple(s.strip() for s in steps.split(",") if s.strip())
    unknown = [s for s in chosen if s not in STEPS]
    if unknown or not chosen:
        raise JaxcontamError(f"--steps {steps!r}: unknown step(s) {unknown}; choose from {', '.join(STEPS)}")
    workload = Workload(
        batch=batch,
        seq=seq,
        prompt_len=prompt_len,
        new_tokens=new_tokens,
        chunk_tokens=chunk_tokens,
        table_rows=table_rows,
    )
    report = run_plan(model, topology, mesh, dtype, chosen, workload, fsdp)
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        print_report(report)
