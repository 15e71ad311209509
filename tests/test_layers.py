"""The package's layers: engine and detect take models as arguments and import nothing above them; the kernels
import nothing of the engine."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "jaxcontam"
FORBIDDEN = {
    "kernels": (
        "jaxcontam.engine",
        "jaxcontam.models",
        "jaxcontam.detect",
        "jaxcontam.audit",
        "jaxcontam.training",
        "jaxcontam.commands",
    ),  # the engine imports the kernels, never the reverse
    "engine": ("jaxcontam.models", "jaxcontam.detect", "jaxcontam.audit", "jaxcontam.training", "jaxcontam.commands"),
    "detect": ("jaxcontam.models", "jaxcontam.audit", "jaxcontam.training", "jaxcontam.commands"),
    "stats": ("jaxcontam.engine", "jaxcontam.models", "jaxcontam.detect", "jaxcontam.audit", "jaxcontam.training"),
}


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at the top or inside functions."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_imports_nothing_above_it(layer):
    directory = PACKAGE / layer
    offending = {
        f"{path.relative_to(PACKAGE.parent)}: {name}"
        for path in directory.rglob("*.py")
        for name in imported_modules(path)
        if name.startswith(FORBIDDEN[layer])
    }
    assert not offending, sorted(offending)


def test_one_mesh_builder_and_one_batch_sharding_helper():
    defining = {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef) and node.name in ("make_mesh", "batch_sharding", "default_mesh")
    }
    assert defining == {"mesh.py"}


def test_no_command_imports_another():
    """A helper two commands share lives in a helper module of `jaxcontam.commands` (mesh options, text files,
    verdict lines), never in one of the command modules the command line registers."""
    from jaxcontam.cli import COMMANDS

    commands = {target.partition(":")[0] for target in COMMANDS.values()}
    offending = {
        f"{path.name}: {name}"
        for path in (PACKAGE / "commands").glob("*.py")
        for name in imported_modules(path)
        if name in commands
    }
    assert not offending, sorted(offending)
