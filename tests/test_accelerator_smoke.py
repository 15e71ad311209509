"""The GPU check (experiments/accelerator) cannot rot before a GPU is at hand: `run.sh --smoke` runs every step of
it at tiny sizes on the CPU (about 45 s on the 2-core machine under load), with jaxcontam from this checkout, and
writes its JSON, every section measured without an error, and its markdown table."""

import json
import os
import pathlib
import subprocess
import sys

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
SECTIONS = ("device", "ceilings", "scoring", "generation", "attention", "audit", "numerics", "goals")


def run_smoke(out: pathlib.Path, *args: str, **environment: str) -> None:
    """`run.sh --smoke ARGS` writing to `out`, jaxcontam from this checkout, with `environment` added; fails the
    test on a non-zero exit."""
    env = dict(os.environ, OUT=str(out), PYTHON=sys.executable, PYTHONPATH=str(REPO_ROOT)) | environment
    env.pop("JAX_PLATFORMS", None)  # run.sh --smoke sets cpu
    done = subprocess.run(
        ["bash", str(REPO_ROOT / "experiments" / "accelerator" / "run.sh"), "--smoke", *args],
        cwd=out,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_the_gpu_check_runs_every_step_at_tiny_sizes(tmp_path):
    run_smoke(tmp_path)
    result = json.loads((tmp_path / "accelerator.json").read_text())
    assert set(SECTIONS) <= set(result) and result["smoke"]
    assert result["errors"] == [], result["errors"]
    for section in ("scoring", "generation", "attention"):
        rows = result[section]
        assert rows and not [row for row in rows if "skipped" in row], rows
    assert {(r["shape"], r["dtype"]) for r in result["scoring"]} == {
        (shape, dtype) for shape in ("SmolLM2-135M", "Llama-3.2-1B") for dtype in ("float32", "bfloat16")
    }
    for run in ("cold", "pacost"):
        assert result["audit"][run]["exit_code"] == 0, result["audit"][run]
    cold = result["audit"]["cold"]  # a fresh process with an empty compile cache: every program compiled and logged
    assert [s["stage"] for s in cold["stages"]][0].startswith("pacost tiny-contaminated")
    assert cold["programs"] == sum(p["count"] for p in cold["compiles"].values()) > 0, cold
    assert {"load", "compile"} <= set(cold["audit_stages"]), cold
    assert result["numerics"]["accelerator_vs_cpu"]["ok"]
    assert all(row["ok"] for row in result["numerics"]["against_torch"]), result["numerics"]["against_torch"]
    table = (tmp_path / "accelerator.md").read_text()
    assert table.startswith("# jaxcontam on ") and "| scoring Llama-3.2-1B bfloat16" in table
    assert "| bundled `jaxcontam audit`, cold: a fresh process, empty compile cache (exit 0)" in table


def test_the_compile_cache_runs_measure_a_filled_cache_at_tiny_sizes(tmp_path):
    """`run.sh --script compile_cache.py --smoke`: the bundled audit (limit 1) with the cache empty, then filled;
    every program stored in the first run (no compile-time floor), none compiled again in the second."""
    no_floor = {"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}  # (the script unsets conftest's own cache)
    run_smoke(tmp_path, "--script", "compile_cache.py", "--runs", "empty,filled", **no_floor)
    runs = json.loads((tmp_path / "compile_cache.json").read_text())["runs"]
    assert [run["name"] for run in runs] == ["cache on, empty", "cache on, filled"]
    assert all(run["exit_code"] == 0 and "compile" in run["stages"] for run in runs), runs
    assert runs[0]["cache_files"] > 0 and runs[1]["cache_files"] == runs[0]["cache_files"], runs
    assert (tmp_path / "compile_cache.md").read_text().startswith("# The bundled audit and the compile cache")
