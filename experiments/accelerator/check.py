"""The GPU check of jaxcontam: every measurement against its physical limit and against torch in this process.

Writes OUT/accelerator.json (sections: device, ceilings, scoring, generation, attention, audit, numerics, goals) and
OUT/accelerator.md (one table). Run through run.sh, which installs jaxcontam first where it is missing. The work
runs in the order that matters most within `--budget` seconds (the 1B shape, then attention, numerics, the audit,
then the 135M shape); what the budget leaves no time for is recorded as skipped, so the check always ends in time.

  python -m experiments.accelerator.check --out OUT            # the real sizes (a GPU)
  python -m experiments.accelerator.check --out OUT --smoke    # every step at tiny sizes (CPU, under a minute)
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import functools
import json
import pathlib
import sys
import tempfile
import time
import traceback

from experiments.accelerator.gpucheck import attention, audit, device, generation, numerics, report, scoring, shapes


@dataclasses.dataclass(frozen=True)
class Sizes:
    """Every size of the check; `SMOKE` shrinks each for the CPU."""

    score_rows: int = 16
    score_length: int = 2048
    score_repeats: int = 3
    prompts: int = 64
    prompt_length: int = 128
    new_tokens: int = 256
    generate_repeats: int = 2
    attention_lengths: tuple[int, ...] = (2048, 8192, 32768)
    attention_tokens: int = 32768
    attention_repeats: int = 5
    pacost_items: int = 64  # 256 items of 64 new tokens never ran within the budget (2026-11-28)
    pacost_new_tokens: int = 32
    pacost_need_s: float = 120.0  # start-up, the 1B model's load and cold compiles, then the work: run only if left
    numerics_texts: int = 16
    dtypes: tuple[str, ...] = ("bfloat16", "float32")  # bf16 first: the goals are bf16 figures
    generate_dtypes: tuple[str, ...] = ("bfloat16", "float32")
    generate_shapes: int = 2  # how many of the shapes generate (in the order run)
    pacost_benchmarks: tuple[str, ...] = ("gsm8k", "copa")


SMOKE = Sizes(
    score_rows=2,
    score_length=64,
    score_repeats=1,
    prompts=2,
    prompt_length=8,
    new_tokens=4,
    generate_repeats=1,
    attention_lengths=(256,),
    attention_tokens=256,
    attention_repeats=1,
    pacost_items=1,
    pacost_new_tokens=2,
    pacost_need_s=10.0,
    numerics_texts=2,
    generate_dtypes=("float32",),
    generate_shapes=1,
    pacost_benchmarks=("gsm8k",),
)


class Clock:
    """Seconds left of the budget; `spare` is kept back for writing the results."""

    def __init__(self, budget: float, spare: float = 5.0):
        self.start, self.budget, self.spare = time.perf_counter(), budget, spare

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def left(self) -> float:
        return self.budget - self.spare - self.elapsed


def guarded(clock: Clock, need: float, what: str, work, log: list):
    """work() when `need` seconds are left, else a skipped record; an exception becomes an error record."""
    if clock.left() < need:
        return {"what": what, "skipped": f"time budget ({clock.left():.0f} s left, about {need:.0f} s needed)"}
    began = time.perf_counter()
    try:
        result = work()
    except Exception as error:  # one failed measurement must not lose the others
        log.append(f"{what}: {traceback.format_exc()}")
        return {"what": what, "skipped": f"error: {type(error).__name__}: {str(error)[:300]}"}
    print(f"[{clock.elapsed:6.1f} s] {what}: {time.perf_counter() - began:.1f} s", flush=True)
    return result


def measure_shape(
    name: str, generates: bool, sizes: Sizes, smoke: bool, work: pathlib.Path, clock: Clock, result: dict, log: list
):
    """Scoring then (when `generates`) generation of one shape, in each dtype, jaxcontam and torch on the same
    random weights."""
    import jaxcontam

    shape = shapes.load(name, smoke)
    target = "cuda" if result["device"]["platform"] == "gpu" else "cpu"
    folder = work / name
    module = guarded(clock, 30, f"{name}: random weights", lambda: shapes.build(shape, folder, target), log)
    if isinstance(module, dict):
        result["scoring"].append(module)
        return None
    peaks = result["device"].get("peaks")
    batch = scoring.tokens(shape, sizes.score_rows, sizes.score_length)
    truth = guarded(clock, 20, f"{name}: float32 reference", lambda: scoring.torch_logprobs(module, batch, target), log)
    if isinstance(truth, dict):
        result["scoring"].append(truth)
        return None
    for dtype in sizes.dtypes:
        reference = module if dtype == "float32" else _cast(module, dtype)
        load = functools.partial(jaxcontam.load_model, str(folder), dtype=dtype)
        model = guarded(clock, 30, f"{name} {dtype}: load", load, log)
        if isinstance(model, dict):
            result["scoring"].append(model)
            continue
        same = (shape, model, reference, dtype)
        score = functools.partial(
            scoring.measure, *same, sizes.score_rows, sizes.score_length, sizes.score_repeats, peaks, target, truth
        )
        row = guarded(clock, 40, f"{name} {dtype}: scoring", score, log)
        if "error" in row.get("skipped", "") and model.config.execution.attention == "auto":
            # one GPU session is all there is: if the platform's path (cuDNN) failed, measure the portable one too
            result["scoring"].append(row)
            model = jaxcontam.load_model(str(folder), dtype=dtype, attention="jnp")
            same = (shape, model, reference, dtype)
            score = functools.partial(
                scoring.measure, *same, sizes.score_rows, sizes.score_length, sizes.score_repeats, peaks, target, truth
            )
            row = guarded(clock, 40, f"{name} {dtype}: scoring (attention jnp)", score, log)
        result["scoring"].append(row)
        decode = functools.partial(
            generation.measure,
            *same,
            sizes.prompts,
            sizes.prompt_length,
            sizes.new_tokens,
            sizes.generate_repeats,
            peaks,
        )
        if dtype in sizes.generate_dtypes and generates:
            result["generation"].append(guarded(clock, 60, f"{name} {dtype}: generation", decode, log))
    return folder


def _cast(module, dtype: str):
    import copy

    return copy.deepcopy(module).to(shapes.torch_dtype(dtype))


def goals(result: dict) -> dict:
    """The issue's goals, from the rows that ran: scoring MFU >= 50% in bf16 at the 1B shape, decode >= 60% of the
    bandwidth limit, and at least torch's speed on every row."""
    rows = [r for r in result["scoring"] + result["generation"] if "skipped" not in r]
    found = {}
    big = [r for r in result["scoring"] if r.get("shape") == "Llama-3.2-1B" and r.get("dtype") == "bfloat16"]
    mfu = [r["mfu_bf16"] for r in big if "mfu_bf16" in r]
    if mfu:
        found["scoring MFU >= 50% (1B, bf16)"] = max(mfu) >= 0.5
    shares = [r["bandwidth_share"] for r in result["generation"] if "bandwidth_share" in r]
    if shares:
        found["decode >= 60% of the HBM limit (every row)"] = min(shares) >= 0.6
    attention_ratios = [r["ratio_to_torch"] for r in result["attention"] if r.get("ratio_to_torch")]
    if rows:
        ratios = [r["ratio_to_torch"] for r in rows] + attention_ratios
        found["at least torch's speed (every row)"] = min(ratios) >= 1.0
    return found


def save(result: dict, out: pathlib.Path, clock: Clock, log: list) -> None:
    """Write the JSON and the table as they stand (after every section, so a killed run still leaves them)."""
    result["numerics"]["against_torch"] = numerics.against_torch([r for r in result["scoring"] if "skipped" not in r])
    result["goals"] = goals(result)
    result["wall_s"] = round(clock.elapsed, 1)
    result["errors"] = log
    (out / "accelerator.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
    (out / "accelerator.md").write_text(report.table(result))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("accelerator-out"))
    parser.add_argument("--smoke", action="store_true", help="every step at tiny sizes (CPU)")
    parser.add_argument("--budget", type=float, default=None, help="seconds for it all (default 430; smoke 300)")
    parser.add_argument("--shapes", default=",".join(reversed(shapes.NAMES)), help="shapes, in the order run")
    args = parser.parse_args(argv)
    sizes = SMOKE if args.smoke else Sizes()
    clock = Clock(args.budget or (300.0 if args.smoke else 430.0))
    args.out.mkdir(parents=True, exist_ok=True)
    log: list[str] = []
    result: dict = {
        "date": datetime.date.today().isoformat(),
        "smoke": args.smoke,
        "sizes": dataclasses.asdict(sizes),
        "device": device.describe(),
        "scoring": [],
        "generation": [],
        "attention": [],
        "audit": {},
        "numerics": {},
    }
    print(json.dumps(result["device"]), flush=True)
    result["ceilings"] = guarded(clock, 10, "ceilings", lambda: device.measured_ceilings(args.smoke), log)
    names = [n.strip() for n in args.shapes.split(",") if n.strip()]
    peaks = result["device"].get("peaks")
    with tempfile.TemporaryDirectory(prefix="jaxcontam-check-") as scratch:
        work = pathlib.Path(scratch)
        big = measure_shape(names[0], True, sizes, args.smoke, work, clock, result, log) if names else None
        device.release()  # the torch modules are gone: give their cached GPU memory back to the child processes
        save(result, args.out, clock, log)
        dtype = "bfloat16" if result["device"]["platform"] == "gpu" else "float32"  # cuDNN takes 16-bit inputs
        one_b = shapes.load("Llama-3.2-1B", args.smoke)
        found = guarded(
            clock,
            30,
            "attention",
            lambda: attention.measure(
                one_b, sizes.attention_lengths, sizes.attention_tokens, dtype, sizes.attention_repeats, peaks
            ),
            log,
        )
        result["attention"] = found if isinstance(found, list) else [found]
        save(result, args.out, clock, log)
        result["numerics"]["accelerator_vs_cpu"] = guarded(
            clock, 15, "numerics", lambda: numerics.accelerator_vs_cpu(sizes.numerics_texts), log
        )
        result["audit"]["cold"] = guarded(
            clock,
            40,
            "bundled audit, cold",
            lambda: audit.bundled_audit(work, args.smoke, clock.left() - 30, cold=True),
            log,
        )
        save(result, args.out, clock, log)
        if not args.smoke:  # (a smoke run's PaCoST, in this process, stands for the warm run: its work is the same)
            result["audit"]["bundled"] = guarded(
                clock, 30, "bundled audit, warm", lambda: audit.bundled_audit(work, False, clock.left() - 30), log
            )
            save(result, args.out, clock, log)
        if big is not None or args.smoke:
            model = None if args.smoke else big
            result["audit"]["pacost"] = guarded(  # after the audits: it never cuts them, and is skipped, not cut
                clock,
                sizes.pacost_need_s,
                "pacost",
                lambda: audit.pacost_run(
                    model,
                    work,
                    sizes.pacost_benchmarks,
                    sizes.pacost_items,
                    sizes.pacost_new_tokens,
                    clock.left() - 5,
                    args.smoke,
                ),
                log,
            )
            save(result, args.out, clock, log)
        for index, name in enumerate(names[1:], 1):
            measure_shape(name, index < sizes.generate_shapes, sizes, args.smoke, work, clock, result, log)
    save(result, args.out, clock, log)
    print(report.table(result), flush=True)
    for entry in log:
        print(entry, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
