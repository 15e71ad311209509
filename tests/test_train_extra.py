"""The training loop sits behind the `train` extra (optax, orbax): without it the loop's import names the extra,
and the audit side (including `jaxcontam.AuditCallback` at its old and new paths) still imports."""

import os
import subprocess
import sys

WITHOUT_TRAIN_EXTRA = "import sys\nsys.modules['optax'] = None\nsys.modules['orbax'] = None\n"


def run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_TRAIN_EXTRA + code],
        capture_output=True,
        text=True,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )


def test_without_the_train_extra_the_loop_names_it_and_the_callback_still_imports():
    result = run(
        "import jaxcontam\n"
        "from jaxcontam.detect.audit_callback import AuditCallback\n"
        "from jaxcontam.training.audit_callback import AuditCallback as old\n"
        "assert jaxcontam.AuditCallback is AuditCallback is old\n"
        "from jaxcontam.training import init_hf_tensors\n"
        "try:\n"
        "    from jaxcontam.training import train\n"
        "except jaxcontam.JaxcontamError as error:\n"
        "    print(error)\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == 'the training loop needs optax and orbax: pip install "jaxcontam[train]"'
