"""The README's "Inside your training loop" example runs as written and prints what the README says it prints."""

import os
import re
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def test_the_training_loop_example_runs_and_the_audit_sees_the_contamination(shared_data):
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("\n## Inside your training loop\n", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    env = {k: v for k, v in os.environ.items() if k != "JAXCONTAM_DATA"} | {"JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    aucs = [float(a) for a in re.findall(r"^step \d+: Min-K%\+\+ AUC seen vs unseen = ([0-9.]+)$", proc.stdout, re.M)]
    assert len(aucs) == 4 and aucs[-1] >= 0.9 > aucs[0], proc.stdout
