"""docs/tpu.md's capacity table: `jaxcontam plan` scoring estimates for five models on v5e-4, v5e-8 and v5p-8.

Compiler estimates, not measurements (no TPU is used: libtpu compiles for the named topology on this CPU host).
Per (model, slice, scoring length) two compiles of `score_step`, at 2 and 16 rows per "data" shard: the figures
(fits, tokens/s, MFU, what bounds the roofline) are the 16-row program's, with the 2-row MFU beside them; the max
batch per slice is where the bytes per device, growing by the two compiles' difference per row, reach the HBM.
Two speeds per row: the roofline's (the chip at peak: upper bounds) and the efficiency-adjusted estimate
(`jaxcontam.planning.efficiency`), which the table computes from each compile's stored per-device costs, so a
change of the published efficiencies needs no new compile. Slow: ~30 s per compile on 2 cores; rows are appended
to --out as they finish, and a Markdown table is printed at the end.

    JAX_PLATFORMS=cpu .venv/bin/python -m experiments.plan.readme_table [--models Llama-3.1-8B,...]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HERE = Path(__file__).parent
MODELS = ("Llama-3.1-8B", "Llama-3.2-1B", "Qwen2.5-7B", "Gemma-2-9B", "Mistral-7B-v0.3")
SLICES = {"v5e-4": "v5e:2x2", "v5e-8": "v5e:2x4", "v5p-8": "v5p:2x2x1"}
SEQS = (2048, 8192)
SHARD_ROWS = (2, 16)  # rows per "data" shard of the two compiles: memory per row from their difference


def compile_score(spec_path: str, topology: str, data: int, model_axis: int, batch: int, seq: int) -> dict:
    from jaxcontam.commands.plan import run_plan
    from jaxcontam.planning.steps import Workload

    report = run_plan(spec_path, topology, f"data={data},model={model_axis}", "bfloat16", ("score",),
                      Workload(batch=batch, seq=seq))
    return report["steps"][0]


COSTS = ("tokens_per_call", "model_flops", "flops_per_device", "bytes_accessed_per_device",
         "ici_traffic_bytes_per_device")


def one_row(model: str, slice_name: str, seq: int) -> dict:
    from jaxcontam.commands.plan import read_spec
    from jaxcontam.planning import plan as planning
    from jaxcontam.planning.tpu_chips import chip_for

    topology = SLICES[slice_name]
    devices = planning.topology_devices(topology)
    spec_path = str(HERE / "configs" / f"{model}.json")
    model_axis = planning.default_model_axis(read_spec(spec_path), len(devices))
    data = len(devices) // model_axis
    small, large = (compile_score(spec_path, topology, data, model_axis, rows * data, seq) for rows in SHARD_ROWS)
    per_row = (large["total_bytes_per_device"] - small["total_bytes_per_device"]) / (SHARD_ROWS[1] - SHARD_ROWS[0])
    fixed = small["total_bytes_per_device"] - per_row * SHARD_ROWS[0]
    max_batch = int((large["hbm_bytes_per_device"] - fixed) // per_row) * data if per_row > 0 else None
    return {"model": model, "slice": slice_name, "topology": topology, "seq": seq,
            "chip": chip_for(devices[0].device_kind).name, "devices": len(devices),
            "mesh": {"data": data, "model": model_axis}, "batch": SHARD_ROWS[1] * data, "fits": large["fits"],
            "max_batch": max_batch, "total_gib_per_device": large["total_bytes_per_device"] / (1 << 30),
            "weights_gib_per_device": large["weights_bytes_per_device"] / (1 << 30),
            "tokens_per_second_upper_bound": large["tokens_per_second_upper_bound"],
            "mfu_upper_bound": large["mfu_upper_bound"], "bound": large["bound"],
            "small_batch_mfu_upper_bound": small["mfu_upper_bound"],
            "collective_gb_per_device": large["collective_bytes_per_device"] / 1e9,
            "costs": {"large": {k: large[k] for k in COSTS}, "small": {k: small[k] for k in COSTS}}}


def estimate(row: dict, which: str):
    """The efficiency-adjusted estimate of one of a row's two compiles, from its stored per-device costs."""
    from jaxcontam.planning.efficiency import estimate as from_costs
    from jaxcontam.planning.tpu_chips import CHIPS

    chip = next(c for c in CHIPS.values() if c.name == row["chip"])
    costs = row["costs"][which]
    return from_costs(chip, row["devices"], costs["tokens_per_call"], costs["model_flops"], costs["flops_per_device"],
                      costs["bytes_accessed_per_device"], costs["ici_traffic_bytes_per_device"])


def _mfu(found) -> str:
    return f"{found.mfu:.0%}" + ("!" if found.above_published else "")


def markdown(rows: list[dict]) -> str:
    lines = ["| model | slice | mesh (data x model) | tokens | fits at 16 rows/data shard | max batch "
             "| tokens/s, upper bound | MFU, upper bound (at 2 rows) | roofline bound | est. tokens/s "
             "| est. MFU (at 2 rows) |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    flagged = set()
    for r in rows:
        large, small = estimate(r, "large"), estimate(r, "small")
        if large.above_published or small.above_published:
            flagged.add((r["chip"], large.best_published_mfu))
        lines.append(f"| {r['model']} | {r['slice']} | {r['mesh']['data']} x {r['mesh']['model']} | {r['seq']} | "
                     f"{'yes' if r['fits'] else 'no'} ({r['total_gib_per_device']:.1f} GiB/device) | "
                     f"{r['max_batch']} | {r['tokens_per_second_upper_bound']:,.0f} | "
                     f"{r['mfu_upper_bound']:.0%} ({r['small_batch_mfu_upper_bound']:.0%}) | {r['bound']} | "
                     f"{large.tokens_per_second:,.0f} | {_mfu(large)} ({_mfu(small)}) |")
    if flagged:
        best = ", ".join(f"{chip} {mfu:.1%}" for chip, mfu in sorted(flagged))
        lines.append(f"\n! above the best MFU published for the chip ({best}): no published measurement supports it")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--slices", default=",".join(SLICES))
    parser.add_argument("--seqs", default=",".join(map(str, SEQS)))
    parser.add_argument("--out", default=str(HERE / "readme_table.jsonl"))
    args = parser.parse_args()
    rows = []
    with open(args.out, "a", encoding="utf-8") as handle:
        for model in args.models.split(","):
            for slice_name in args.slices.split(","):
                for seq in map(int, args.seqs.split(",")):
                    row = one_row(model, slice_name, seq)
                    rows.append(row)
                    handle.write(json.dumps(row) + "\n")
                    handle.flush()
                    print(json.dumps(row), flush=True)
    print(markdown(rows))


if __name__ == "__main__":
    main()
