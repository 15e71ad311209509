"""The bundled `jaxcontam audit` of this checkout against another commit's, interleaved: each round runs every
commit once with an empty compile cache (a user's first audit) and once more with the cache that run filled (every
later audit), each a fresh process and output folder, so a slower machine minute hits both sides alike. Prints the
median of each and appends a row to audit_interleaved.jsonl beside this script.

The other commit runs from a detached worktree of it (`git worktree add`, removed after), on this Python's installed
dependencies, with `PYTHONPATH` naming each checkout (this one too, so both start the same way).

    python -m experiments.perf.audit_interleaved --against f421a9d --rounds 3
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
LAUNCH = "import sys; from jaxcontam.cli import main; sys.exit(main(sys.argv[1:]))"


def short(revision: str, cwd: pathlib.Path = ROOT) -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", revision], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


def audit_wall(checkout: pathlib.Path, out: pathlib.Path, cache: pathlib.Path) -> float:
    """Wall seconds of the bundled audit of `checkout` into the new folder `out`, programs cached in `cache`."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
    environment |= {"JAX_PLATFORMS": "cpu", "JAXCONTAM_COMPILE_CACHE": str(cache), "PYTHONPATH": str(checkout)}
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", LAUNCH, "audit", "--out", str(out)],
        check=True,
        cwd=out.parent,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", required=True, help="the other commit (e.g. the one before a change)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    commits = {short("HEAD"): ROOT}
    walls: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = pathlib.Path(scratch_name)
        other = scratch / "other"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(other), args.against], cwd=ROOT, check=True, capture_output=True
        )
        commits[short(args.against)] = other
        try:
            for round_number in range(args.rounds):
                for commit, checkout in commits.items():
                    cache = scratch / f"xla-{commit}-{round_number}"
                    for kind in ("first", "later"):
                        out = scratch / f"{commit}-{round_number}-{kind}"
                        out.mkdir()
                        wall = audit_wall(checkout, out / "audit", cache)
                        walls.setdefault(commit, {}).setdefault(kind, []).append(round(wall, 1))
                        print(f"round {round_number + 1} {commit} {kind} run: {wall:.1f} s", flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=ROOT, check=True)
    medians = {c: {k: statistics.median(v) for k, v in kinds.items()} for c, kinds in walls.items()}
    for commit, kinds in medians.items():
        print(
            f"{commit}: median first run {kinds['first']:.1f} s, median later run {kinds['later']:.1f} s "
            f"(walls {walls[commit]})"
        )
    row = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": f"{os.cpu_count()} cores, {platform.machine()}",
        "rounds": args.rounds,
        "walls_s": walls,
        "median_s": medians,
    }
    with open(HERE / "audit_interleaved.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
