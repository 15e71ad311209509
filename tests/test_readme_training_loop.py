"""The README's Python examples (the library and the training loop) and docs/your_model.md's run as written and
print what the docs say they print."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def python_blocks(page: str, heading: str | None = None) -> list[str]:
    """The ```python blocks of `page` (a path from the repository root), of its `## heading` section if given."""
    text = (REPO_ROOT / page).read_text()
    if heading is not None:
        text = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", text, re.S)


def section_examples() -> list[str]:
    """The training-loop example (README), then the Linen and pure-function ones (docs/your_model.md)."""
    return python_blocks("README.md", "Inside your training loop")[:1] + python_blocks("docs/your_model.md")


def run(code: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "JAXCONTAM_DATA"} | {"JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_the_training_loop_example_runs_and_the_audit_sees_the_contamination(shared_data):
    out = run(section_examples()[0])
    aucs = [float(a) for a in re.findall(r"^step \d+: Min-K%\+\+ AUC seen vs unseen = ([0-9.]+)$", out, re.M)]
    assert len(aucs) == 4 and aucs[-1] >= 0.9 > aucs[0], out


@pytest.mark.parametrize("example", [1, 2], ids=["linen", "pure-function"])
def test_the_own_model_examples_score_as_the_models_own_forward(example):
    """The Linen and pure-function examples: the engine's log-probs equal log_softmax of the model's logits."""
    out = run(section_examples()[example])
    gaps = [float(g) for g in re.findall(r"^\d+ tokens: max \|engine - own log_softmax\| = (\S+)$", out, re.M)]
    assert len(gaps) == 3 and max(gaps) <= 1e-5, out
    if example == 1:
        assert re.search(r"^greedy continuation of the first: \[(\d+, ){4}\d+\]$", out, re.M), out


def test_the_library_example_separates_the_bundled_examples_halves():
    out = run(python_blocks("README.md", "Library")[0])
    aucs = dict(re.findall(r"^(\w+): AUC contaminated vs clean = ([0-9.]+)$", out, re.M))
    assert set(aucs) == {"mean_logprob", "zlib_ratio", "min_k", "min_k_plus_plus", "gap_k"}, out
    assert all(float(auc) >= 0.99 for auc in aucs.values()), out
