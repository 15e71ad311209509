"""What the checkout on PYTHONPATH does with each hostile model file of issue 61 (`files.py`).

Each case is built in a temporary folder and loaded by `jaxcontam.load_model` in a process of its own (240 s, 6 GiB
of address space), which then scores two token sequences; the outcome is one of: clear error (a JaxcontamError,
its message shown), right result (the log-probs of the unmutated file), silent wrong (other log-probs, or NaN),
traceback (another exception), memory (MemoryError or the address-space limit), hang (the time limit).

    PYTHONPATH=<main's checkout> python -m experiments.hostile_models.cases      # what main does
    python -m experiments.hostile_models.cases                                   # what this checkout does

(This process imports no jaxcontam; each case's process runs in a temporary folder, so it imports the jaxcontam on
PYTHONPATH, else the installed one.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from experiments.hostile_models.files import SEQUENCES, model_cases, reference_path

ADDRESS_SPACE = 6 << 30
SECONDS = 240
_CHILD = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
import numpy as np
try:
    import jaxcontam
    from jaxcontam.errors import JaxcontamError
    try:
        model = jaxcontam.load_model(sys.argv[1])
        values = [np.asarray(v, np.float64).tolist() for v in model.logprobs({sequences})]
        print(json.dumps({{"logprobs": values}}))
    except JaxcontamError as error:
        print(json.dumps({{"error": str(error)}}))
except MemoryError:
    print(json.dumps({{"memory": True}}))
except BaseException as exc:
    print(json.dumps({{"traceback": type(exc).__name__ + ": " + str(exc)[:160]}}))
"""


def run(path: Path) -> dict:
    """The child's answer for `path` (its last line of output), or what stopped it."""
    code = _CHILD.format(limit=ADDRESS_SPACE, sequences=SEQUENCES)
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, str(path)],
            capture_output=True,
            text=True,
            timeout=SECONDS,
            env=env,
            cwd=path.parent,  # not this checkout: `python -c` imports from its working directory first
        )
    except subprocess.TimeoutExpired:
        return {"hang": True}
    lines = done.stdout.strip().splitlines()
    if not lines:
        tail = done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        return {"memory": True} if "MemoryError" in tail[0] or "bad_alloc" in tail[0] else {"traceback": tail[0]}
    return json.loads(lines[-1])


def outcome(answer: dict, reference: list) -> str:
    if "error" in answer:
        return "clear error: " + answer["error"][:150].replace("|", "/")
    if "logprobs" in answer:
        same = all(
            len(a) == len(b) and all(x == y for x, y in zip(a, b)) for a, b in zip(answer["logprobs"], reference)
        )
        return "right result" if same else "silent wrong"
    if "traceback" in answer:
        return "traceback: " + answer["traceback"].replace("|", "/")
    return "memory" if "memory" in answer else "hang"


def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        references = {}
        print("| case | outcome |\n|---|---|")
        for name, build in model_cases().items():
            kind = name.split(":")[0] != "GGUF"
            if kind not in references:
                answer = run(reference_path(name, Path(root) / f"reference-{kind}"))
                assert "logprobs" in answer, f"the unmutated file does not load: {answer}"
                references[kind] = answer["logprobs"]
            folder = Path(root) / f"case-{len(os.listdir(root))}"
            print(f"| {name} | {outcome(run(build(folder)), references[kind])} |", flush=True)


if __name__ == "__main__":
    main()
