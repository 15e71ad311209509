"""The bundled `jaxcontam audit` before and after the command line's compile cache (jaxcontam/compile_cache.py), on
one machine in one run: the first GPU check found 95 of its 116 s spent compiling.

Each run is a child process, as a user's: (1) the cache off, as before the fix, with JAX's compile log, so each
program's compile time is recorded; (2) the cache on, its folder empty: a user's first run; (3) the same again: every
later run; (4) the cache off with XLA's GPU autotuning off (information for the next session, not a default). A run
is killed where the budget ends (exit -9: it needs more than its wall time); one with under 30 s left is skipped.
Writes compile_cache.json and compile_cache.md to --out.

  experiments/accelerator/run.sh --script compile_cache.py     # the GPU machine (installs first, as the check does;
                                                               # about 7 minutes: give the call a 480 s timeout)
  python -m experiments.accelerator.compile_cache --out OUT --smoke   # the CPU, a limit-1 audit
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import sys
import tempfile
import time

from experiments.accelerator.gpucheck import audit, device

RUNS = {  # key: name, environment, what it stands for
    "off": ("cache off", {"JAXCONTAM_COMPILE_CACHE": "off", "JAX_LOG_COMPILES": "1"}, "before the fix"),
    "empty": ("cache on, empty", {"JAXCONTAM_COMPILE_CACHE": "{cache}"}, "a user's first run after it"),
    "filled": ("cache on, filled", {"JAXCONTAM_COMPILE_CACHE": "{cache}"}, "every later run"),
    "autotune0": (
        "cache off, autotune 0",
        {"JAXCONTAM_COMPILE_CACHE": "off", "XLA_FLAGS": "--xla_gpu_autotune_level=0"},
        "info",
    ),
}


def table(result: dict) -> str:
    rows = [
        f"# The bundled audit and the compile cache, {result['device'].get('name', '?')}, {result['date']}",
        "",
        "| run | stands for | wall s | compile s | load s | exit |",
        "|---|---|---|---|---|---|",
    ]
    for run in result["runs"]:
        if "skipped" in run:
            rows.append(f"| {run['name']} | {run['for']} | skipped: {run['skipped']} | | | |")
            continue
        seconds = run["stages"]
        rows.append(
            f"| {run['name']} | {run['for']} | {run['wall_s']:.1f} | {seconds.get('compile', float('nan')):.1f} "
            f"| {seconds.get('load', float('nan')):.1f} | {run['exit_code']} |"
        )
    programs = next((run["compiles"] for run in result["runs"] if run.get("compiles")), {})
    if programs:
        rows += ["", "Programs compiled with the cache off (count, seconds):", ""]
        rows += [f"- {name}: {p['count']}, {p['seconds']:.1f} s" for name, p in programs.items()]
    return "\n".join(rows) + "\n"


def save(result: dict, out: pathlib.Path) -> None:
    (out / "compile_cache.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "compile_cache.md").write_text(table(result))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path(os.environ.get("OUT", "accelerator-out")))
    parser.add_argument("--smoke", action="store_true", help="a limit-1 audit on the CPU")
    parser.add_argument("--budget", type=float, default=420.0, help="seconds for every run together")
    parser.add_argument("--runs", default=",".join(RUNS), help=f"which runs, in this order (of {', '.join(RUNS)})")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ.pop("JAX_COMPILATION_CACHE_DIR", None)  # JAX's own setting would win over the one each run names
    start = time.perf_counter()
    result = {"date": time.strftime("%Y-%m-%d"), "device": device.describe(), "runs": []}
    with tempfile.TemporaryDirectory(prefix="jaxcontam-cc-") as scratch:
        work, cache = pathlib.Path(scratch), pathlib.Path(scratch) / "xla"
        for key in args.runs.split(","):
            name, environment, stands_for = RUNS[key.strip()]
            left = args.budget - (time.perf_counter() - start)
            if left < 30:  # a run cut short still says it takes longer than it was given (exit -9, its wall)
                result["runs"].append({"name": name, "for": stands_for, "skipped": f"budget ({left:.0f} s left)"})
                continue
            os.environ.update({variable: value.format(cache=cache) for variable, value in environment.items()})
            out = work / "audit"
            shutil.rmtree(out, ignore_errors=True)  # an audit resumes from a folder it finds: each starts afresh
            cli = ["audit", "--out", str(out)]
            if args.smoke:
                cli += ["--limit", "1", *audit.SMOKE_SETTINGS]
            run = audit.run_cli(cli, left, work)
            for variable in environment:
                os.environ.pop(variable, None)
            result["runs"].append(
                {
                    "name": name,
                    "for": stands_for,
                    "environment": environment,
                    "wall_s": run["wall_s"],
                    "exit_code": run["exit_code"],
                    "stages": audit.stages(run["lines"]),
                    "compiles": audit.compiles(run["lines"]),
                    "cache_files": sum(1 for _ in cache.glob("*")) if cache.exists() else 0,
                    "log_tail": [line for _, line in run["lines"][-6:]],
                }
            )
            print(f"[{time.perf_counter() - start:6.1f} s] {name}: {run['wall_s']:.1f} s, exit {run['exit_code']}")
            save(result, args.out)  # after each run, so a call cut short still brings back what ran
    save(result, args.out)
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
