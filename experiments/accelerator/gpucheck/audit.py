"""End to end, as a user runs it: the bundled `jaxcontam audit` cold (a fresh process with an empty compile cache of
its own: wall, the audit's load and compile rows, and the programs XLA compiled with their seconds, from JAX's
compile log) and warm (the same cache, filled), each with a stage table read off its own progress lines; and
`jaxcontam pacost` over 64 bundled items (32 GSM8K + 32 COPA, with their rephrasings) on the 1B-shaped random model,
for throughput only (a random model's verdicts mean nothing), run only when its budget is left.

Each command runs in a child process, as a user's would. The smoke run has the cold audit only (a child process
too: a fresh process is what it measures) and calls PaCoST in this process instead (`in_process`; the imports are
already paid), on the bundled model: on 2 CPU cores the compiles, not the work, are what a smoke run waits for.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import threading
import time

SMOKE_SETTINGS = ("--set", "pacost.max_new_tokens=2", "--set", "pacost.judge_max_new_tokens=2")
CLI = "import sys; from jaxcontam.cli import main; sys.exit(main())"
CHUNK = re.compile(r"^\s+(?P<stage>.+): chunk (?P<done>\d+)/(?P<total>\d+) \((?P<seconds>\d+) s\)")
STAGE_ROW = re.compile(r"^(?P<stage>[a-z]+)\s+(?P<seconds>\d+\.\d)\s+(?P<share>\d+)%$")
COMPILED = re.compile(r"Finished XLA compilation of (?P<name>\S+) in (?P<seconds>[\d.e-]+) sec")


class _Lines(io.TextIOBase):
    """A text stream keeping each line (or carriage-return redraw) written to it, with the second it arrived at."""

    def __init__(self, start: float):
        self.start, self.lines, self.pending = start, [], ""

    def write(self, text: str) -> int:
        *done, self.pending = re.split(r"[\r\n]", self.pending + text)
        self.lines += [(round(time.perf_counter() - self.start, 2), part) for part in done if part.strip()]
        return len(text)


def run_in_process(args: list[str], cwd: pathlib.Path) -> dict:
    """`run_cli`, calling the command's `main` here (its output captured the same way)."""
    from jaxcontam.cli import main

    start = time.perf_counter()
    stream, code = _Lines(start), 0
    with contextlib.chdir(cwd), contextlib.redirect_stderr(stream), contextlib.redirect_stdout(stream):
        try:
            main(args)
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
    return {"wall_s": round(time.perf_counter() - start, 2), "exit_code": code, "lines": stream.lines}


def run_cli(
    args: list[str], timeout: float, cwd: pathlib.Path, in_process: bool = False, environment: dict | None = None
) -> dict:
    """Run `jaxcontam ARGS` in a child process (or `in_process`) with `environment` added to its own; its wall
    seconds, exit code, and each stderr line with the second it arrived at."""
    if in_process:
        return run_in_process(args, cwd)
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-c", CLI, *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(environment or {})},
    )
    lines = []
    watchdog = threading.Timer(max(timeout, 1.0), process.kill)  # a silent, stuck child is killed too
    watchdog.start()
    assert process.stdout is not None
    for line in process.stdout:
        for part in line.rstrip("\n").split("\r"):  # progress bars redraw with carriage returns
            if part.strip():
                lines.append((round(time.perf_counter() - start, 2), part))
    code = process.wait()
    watchdog.cancel()
    return {"wall_s": round(time.perf_counter() - start, 2), "exit_code": code, "lines": lines}


def stage_table(lines: list[tuple[float, str]], wall: float) -> list[dict]:
    """Each stage's seconds (its last chunk line's count), then what the stages leave of the wall time (start-up,
    loading, n-gram counting, compiles outside the stages, writing the report)."""
    stages: dict[str, int] = {}
    for _, line in lines:
        found = CHUNK.match(line)
        if found:
            stages[found["stage"].replace("|", "/")] = int(found["seconds"])
    table = [{"stage": name, "seconds": seconds} for name, seconds in stages.items()]
    table.append({"stage": "everything else", "seconds": round(wall - sum(stages.values()), 1)})
    return table


def stages(lines: list[tuple[float, str]]) -> dict[str, float]:
    """The audit's own "wall time per stage" table, stage -> seconds."""
    return {m["stage"]: float(m["seconds"]) for _, line in lines if (m := STAGE_ROW.match(line.strip()))}


def compiles(lines: list[tuple[float, str]]) -> dict[str, dict]:
    """Per program name: how many XLA compiles and their seconds (JAX_LOG_COMPILES lines), costliest first."""
    found: dict[str, dict] = {}
    for _, line in lines:
        match = COMPILED.search(line)
        if match:
            entry = found.setdefault(match["name"], {"count": 0, "seconds": 0.0})
            entry["count"] += 1
            entry["seconds"] = round(entry["seconds"] + float(match["seconds"]), 2)
    return dict(sorted(found.items(), key=lambda kv: -kv[1]["seconds"]))


def bundled_audit(work: pathlib.Path, smoke: bool, timeout: float, cold: bool = False) -> dict:
    """The bundled audit, warm (the compile cache `cold_audit` filled; in this process in a smoke run) or `cold`:
    a child process, an empty compile cache of its own and JAX's compile log on."""
    out = work / "bundled-audit"
    shutil.rmtree(out, ignore_errors=True)
    args = ["audit", "--out", str(out)]
    if smoke:
        args += ["--limit", "1", *SMOKE_SETTINGS]
    cache = work / "audit-xla"
    if cold:
        shutil.rmtree(cache, ignore_errors=True)
    environment = {"JAXCONTAM_COMPILE_CACHE": str(cache)} | ({"JAX_LOG_COMPILES": "1"} if cold else {})
    environment |= {"JAX_COMPILATION_CACHE_DIR": ""}  # the check's own setting would win over the audit's cache
    run = run_cli(args, timeout, work, in_process=smoke and not cold, environment=environment)
    result = {"command": "jaxcontam " + " ".join(args), "wall_s": run["wall_s"], "exit_code": run["exit_code"]}
    result["stages"] = stage_table(run["lines"], run["wall_s"])
    result["audit_stages"] = stages(run["lines"])
    if cold:
        programs = compiles(run["lines"])
        result["compiles"] = programs
        result["programs"] = sum(p["count"] for p in programs.values())
        result["compile_s"] = round(sum(p["seconds"] for p in programs.values()), 1)
    result["log_tail"] = [line for _, line in run["lines"][-12:] if not COMPILED.search(line)][-12:]
    return result


def pacost_config(
    model: pathlib.Path, work: pathlib.Path, names: tuple[str, ...], per_benchmark: int, new_tokens: int
) -> pathlib.Path:
    """An audit config of the first `per_benchmark` items of each bundled benchmark of `names`, on `model`."""
    from jaxcontam.audit.config import EXAMPLE_CONFIG

    example = EXAMPLE_CONFIG.parent
    for name in ("tokenizer.json", "tokenizer_config.json"):  # the random model speaks the bundled tokenizer
        if not (model / name).exists():
            shutil.copy(example / "model" / name, model / name)
    benchmarks = "".join(
        f'[[benchmark]]\nname = "{name}"\nsplit = "test"\npath = "{example / f"{name}_test_sample.jsonl"}"\n'
        f'paraphrases = "{example / f"{name}_rephrasings.jsonl"}"\nlimit = {per_benchmark}\n\n'
        for name in names
    )
    text = (
        f'out = "{work / "pacost-out"}"\n\n[[model]]\npath = "{model}"\nname = "random"\n\n{benchmarks}'
        f'[pacost]\nconfidence = "answer_logprob"\nmax_new_tokens = {new_tokens}\njudge_max_new_tokens = {new_tokens}\n'
    )
    path = work / "pacost.toml"
    path.write_text(text)
    return path


def pacost_run(
    model: pathlib.Path | None,
    work: pathlib.Path,
    names: tuple[str, ...],
    items: int,
    new_tokens: int,
    timeout: float,
    smoke: bool,
) -> dict:
    """`jaxcontam pacost` over `items` items split evenly over the bundled benchmarks `names`, on `model` (None:
    the bundled model, as the smoke run does)."""
    from jaxcontam.audit.config import EXAMPLE_CONFIG

    shutil.rmtree(work / "pacost-out", ignore_errors=True)
    model = model or EXAMPLE_CONFIG.parent / "model"
    config = pacost_config(model, work, names, items // len(names), new_tokens)
    run = run_cli(["pacost", "--config", str(config)], timeout, work, in_process=smoke)
    result = {
        "model": str(model),
        "items": items,
        "max_new_tokens": new_tokens,
        "wall_s": run["wall_s"],
        "exit_code": run["exit_code"],
        "items_per_s": round(items / run["wall_s"], 2),
        "stages": stage_table(run["lines"], run["wall_s"]),
        "log_tail": [line for _, line in run["lines"][-8:]],
    }
    summary = work / "pacost-out" / "summary.json"
    if summary.exists():
        result["runs"] = [run.get("benchmark") for run in json.loads(summary.read_text()).get("runs", [])]
    return result
