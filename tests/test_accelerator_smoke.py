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


def test_the_gpu_check_runs_every_step_at_tiny_sizes(tmp_path):
    env = dict(os.environ, OUT=str(tmp_path), PYTHON=sys.executable, PYTHONPATH=str(REPO_ROOT))
    env.pop("JAX_PLATFORMS", None)  # run.sh --smoke sets cpu
    done = subprocess.run(
        ["bash", str(REPO_ROOT / "experiments" / "accelerator" / "run.sh"), "--smoke"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads((tmp_path / "accelerator.json").read_text())
    assert set(SECTIONS) <= set(result) and result["smoke"]
    assert result["errors"] == [], result["errors"]
    for section in ("scoring", "generation", "attention"):
        rows = result[section]
        assert rows and not [row for row in rows if "skipped" in row], rows
    assert {(r["shape"], r["dtype"]) for r in result["scoring"]} == {
        (shape, dtype) for shape in ("SmolLM2-135M", "Llama-3.2-1B") for dtype in ("float32", "bfloat16")
    }
    for run in ("bundled", "pacost"):
        assert result["audit"][run]["exit_code"] == 0, result["audit"][run]
    assert [s["stage"] for s in result["audit"]["bundled"]["stages"]][0].startswith("pacost tiny-contaminated")
    assert result["numerics"]["accelerator_vs_cpu"]["ok"]
    assert all(row["ok"] for row in result["numerics"]["against_torch"]), result["numerics"]["against_torch"]
    table = (tmp_path / "accelerator.md").read_text()
    assert table.startswith("# jaxcontam on ") and "| scoring Llama-3.2-1B bfloat16" in table
