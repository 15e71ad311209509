"""Which XLA programs the bundled `jaxcontam audit` compiles, and the seconds each takes (issue 63: a cold run on a
GPU was mostly compiling, 37 programs).

The audit runs in a fresh process with JAX's compile log on and a compile cache of its own, empty, so every program
it needs is compiled once and logged ("Finished XLA compilation of NAME in S sec"). Prints each program name with
how many times it was compiled (one per distinct shape) and their seconds, the totals, and the audit's own stage
table's load and compile rows; appends a dated JSON line to audit_programs.jsonl beside this script.

    JAX_PLATFORMS=cpu python -m experiments.perf.audit_programs
    python -m experiments.perf.audit_programs --no-record --out /tmp/a   # print only, keep the audit's outputs
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
RESULTS = HERE / "audit_programs.jsonl"
CLI = "import sys; from jaxcontam.cli import main; sys.exit(main())"
COMPILED = re.compile(r"Finished XLA compilation of (?P<name>\S+) in (?P<seconds>[\d.e-]+) sec")


def programs(log: str) -> dict[str, dict]:
    """Per program name: its compiles (one per distinct shape or setting) and their seconds, costliest first."""
    found: dict[str, dict] = {}
    for match in COMPILED.finditer(log):
        entry = found.setdefault(match["name"], {"count": 0, "seconds": 0.0})
        entry["count"] += 1
        entry["seconds"] += float(match["seconds"])
    return dict(sorted(found.items(), key=lambda kv: -kv[1]["seconds"]))


def run_audit(scratch: pathlib.Path, out: pathlib.Path) -> tuple[float, str, dict]:
    """The bundled audit into `out` in a child process with an empty private compile cache: wall seconds, its log,
    and its summary's stage timings."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
    environment |= {
        "JAX_PLATFORMS": environment.get("JAX_PLATFORMS", "cpu"),
        "JAXCONTAM_COMPILE_CACHE": str(scratch / "xla"),
        "JAX_LOG_COMPILES": "1",
    }
    shutil.rmtree(out, ignore_errors=True)  # an audit resumes from a folder it finds: this one starts afresh
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CLI, "audit", "--out", str(out)],
        cwd=scratch,
        env=environment,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"the audit failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    return wall, done.stderr, json.loads((out / "summary.json").read_text())["timings"]


def commit() -> str | None:
    """The commit of the jaxcontam the audit ran (found without importing it: that would start JAX here)."""
    import importlib.util

    spec = importlib.util.find_spec("jaxcontam")
    if spec is None or spec.origin is None:
        return None
    source = pathlib.Path(spec.origin).resolve().parents[1]
    found = subprocess.run(["git", "-C", str(source), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return found.stdout.strip() or None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--no-record", action="store_true", help=f"do not append to {RESULTS.name}")
    parser.add_argument("--out", type=pathlib.Path, help="keep the audit's outputs here (to compare them)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="jaxcontam-programs-") as scratch:
        out = (args.out or pathlib.Path(scratch) / "audit").resolve()
        wall, log, timings = run_audit(pathlib.Path(scratch), out)
    found = programs(log)
    width = max((len(name) for name in found), default=10)
    print(f"{'program':<{width}}  count  compile s")
    for name, entry in found.items():
        print(f"{name:<{width}}  {entry['count']:>5}  {entry['seconds']:>9.2f}")
    count, seconds = sum(e["count"] for e in found.values()), sum(e["seconds"] for e in found.values())
    print(f"{'total':<{width}}  {count:>5}  {seconds:>9.2f}")
    print(
        f"wall {wall:.1f} s; the audit's stage table: load {timings.get('load', float('nan')):.2f} s, "
        f"compile {timings.get('compile', float('nan')):.2f} s"
    )
    if not args.no_record:
        row = {
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "commit": commit(),
            "machine": f"{os.cpu_count()} cores, {platform.machine()}",
            "load_average": ", ".join(f"{x:.1f}" for x in os.getloadavg()),
            "command": "jaxcontam audit (bundled), empty compile cache, JAX_LOG_COMPILES=1",
            "programs": count,
            "compile_s": round(seconds, 2),
            "wall_s": round(wall, 1),
            "load_s": timings.get("load"),
            "stage_compile_s": timings.get("compile"),
            "per_program": {n: {"count": e["count"], "seconds": round(e["seconds"], 2)} for n, e in found.items()},
        }
        with RESULTS.open("a") as results:
            results.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
