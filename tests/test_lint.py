"""Code hygiene in CI: ruff (lint and format) and pyright (basic, configured in pyproject.toml) pass, and no test
module imports another (shared helpers live in tests/helpers.py, fixtures in tests/conftest.py).

ruff and pyright come from the `test` extra and run from this interpreter's environment. pyright's pip package
(1.1.414) bundles its npm package and runs it with the system's node: its first run took 1.3 s here, no download.
Without node on the PATH, or for a version it does not bundle, the first run downloads node (nodeenv) and/or the
npm package first, hence the generous timeout. The check of jaxcontam/ takes about 40 s alone on
the 2-core machine, 2-3.5 min beside the rest of the suite under `-n 2`; ruff takes under a second.
"""

import os
import pathlib
import re
import subprocess
import sys

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
TESTS = REPO_ROOT / "tests"
BIN = pathlib.Path(sys.executable).parent
LINTED = ("jaxcontam", "tests")


def _run(tool: str, *args: str, timeout: float) -> None:
    """Run `tool` from this environment's bin folder in the repository root; fail with its output unless it
    exits 0."""
    executable = BIN / tool
    if not executable.exists():
        pytest.fail(f"{executable} not found: install the test extra (pip install -e '.[test]')")
    env = dict(os.environ, PYRIGHT_PYTHON_IGNORE_WARNINGS="1")  # no network check for a newer pyright
    done = subprocess.run(
        [str(executable), *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, env=env
    )
    assert done.returncode == 0, f"{tool} {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"


def test_ruff_check():
    _run("ruff", "check", *LINTED, timeout=300)


def test_ruff_format():
    _run("ruff", "format", "--check", *LINTED, timeout=300)


def test_pyright():
    # [tool.pyright] in pyproject.toml: jaxcontam and kernels, basic mode; the packages of this interpreter
    _run("pyright", "--pythonpath", sys.executable, timeout=1800)


# `import test_x`, `from test_x import ...`, `from conftest import ...`, also inside subprocess scripts' strings
CROSS_IMPORT = re.compile(r"^\s*(?:from|import)\s+(test_\w+|conftest)\b", re.MULTILINE)


def test_no_test_module_imports_another():
    found = {
        path.name: sorted(set(CROSS_IMPORT.findall(path.read_text(encoding="utf-8"))))
        for path in sorted(TESTS.glob("test_*.py"))
    }
    found = {name: modules for name, modules in found.items() if modules}
    assert not found, f"test modules importing other test modules (move the shared code to tests/helpers.py): {found}"


def test_the_pattern_catches_cross_imports():
    text = "import os\nfrom test_training import TINY\n    import test_engine_scoring as s\nfrom conftest import X\n"
    assert CROSS_IMPORT.findall(text) == ["test_training", "test_engine_scoring", "conftest"]
    assert CROSS_IMPORT.findall("from helpers import toy_model\nimport testing\n") == []
