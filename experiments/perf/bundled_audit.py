"""The README's main job, timed as a user runs it: `jaxcontam audit` (the bundled example) 3 times, each in a fresh
output folder (nothing resumed), printing min, median and max wall time and the median run's stage table.

The runs share a compile cache of their own, empty at the start: the first run is a user's first (it compiles
everything and fills the cache), the later ones are every run after it. Both are printed and recorded apart, since
the command line's cache (`jaxcontam.compile_cache`) makes them differ by the compile time.

`--fresh-venv DIR` first makes a new virtual environment with `pip install .` from this checkout (timed too) and
runs its `jaxcontam`, as the README's first command does; without it, the `jaxcontam` beside this Python runs.
Each run appends a row to bundled_audit.jsonl beside this script (date, commit, machine, the walls, the stages).

    python -m experiments.perf.bundled_audit
    python -m experiments.perf.bundled_audit --fresh-venv /tmp/fresh --runs 3
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def fresh_venv(folder: pathlib.Path) -> tuple[pathlib.Path, float]:
    """A new virtual environment with jaxcontam installed from this checkout; its `jaxcontam` and the seconds taken."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(folder)], check=True)
    subprocess.run([str(folder / "bin" / "pip"), "install", "-q", str(ROOT)], check=True)
    return folder / "bin" / "jaxcontam", time.perf_counter() - started


def one_audit(command: pathlib.Path, out: pathlib.Path, compile_cache: pathlib.Path) -> tuple[float, dict]:
    """Wall seconds of `jaxcontam audit --out OUT` run from an empty folder with its compiled programs cached in
    `compile_cache`, and its summary's stage timings."""
    started = time.perf_counter()
    environment = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
    subprocess.run(
        [str(command), "audit", "--out", str(out)],
        check=True,
        cwd=out.parent,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**environment, "JAX_PLATFORMS": "cpu", "JAXCONTAM_COMPILE_CACHE": str(compile_cache)},
    )
    wall = time.perf_counter() - started
    return wall, json.loads((out / "summary.json").read_text())["timings"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--fresh-venv", type=pathlib.Path, default=None)
    args = parser.parse_args()
    install = None
    command = pathlib.Path(sys.executable).parent / "jaxcontam"
    if args.fresh_venv is not None:
        command, install = fresh_venv(args.fresh_venv)
        print(f"fresh install: {install:.0f} s", flush=True)
    walls, stages = [], []
    with tempfile.TemporaryDirectory() as scratch:
        for run in range(args.runs):
            wall, timings = one_audit(command, pathlib.Path(scratch) / f"run{run}", pathlib.Path(scratch) / "xla")
            walls.append(wall)
            stages.append(timings)
            print(f"run {run + 1}: {wall:.1f} s ({'empty' if run == 0 else 'filled'} compile cache)", flush=True)
    median = statistics.median(walls)
    later = statistics.median(walls[1:]) if len(walls) > 1 else None
    print(
        f"jaxcontam audit (bundled example), {args.runs} runs: min {min(walls):.1f} s, median {median:.1f} s, "
        f"max {max(walls):.1f} s; first run (empty compile cache) {walls[0]:.1f} s"
        + ("" if later is None else f", later runs median {later:.1f} s")
    )
    middle = stages[sorted(range(len(walls)), key=walls.__getitem__)[len(walls) // 2]]
    print("the median run's stages (seconds):")
    for name, seconds in middle.items():
        if seconds >= 0.05:
            print(f"  {name:<9} {seconds:7.1f}")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    row = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "commit": commit.strip(),
        "machine": f"{os.cpu_count()} cores, {platform.machine()}",
        "fresh_install_s": install,
        "walls_s": [round(w, 1) for w in walls],
        "median_s": round(median, 1),
        "compile_cache": "empty at the first run",
        "first_run_s": round(walls[0], 1),
        "later_runs_median_s": None if later is None else round(later, 1),
        "median_run_stages_s": middle,
    }
    with open(HERE / "bundled_audit.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
