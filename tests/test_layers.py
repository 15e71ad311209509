"""The package's layers: engine and detect take models as arguments and import nothing above them."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "jaxcontam"
FORBIDDEN = {
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
    offending = {f"{path.relative_to(PACKAGE)}: {name}" for path in (PACKAGE / layer).rglob("*.py")
                 for name in imported_modules(path) if name.startswith(FORBIDDEN[layer])}
    assert not offending, sorted(offending)


def test_one_mesh_builder_and_one_batch_sharding_helper():
    defining = {path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")
                for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                if isinstance(node, ast.FunctionDef) and node.name in ("make_mesh", "batch_sharding", "default_mesh")}
    assert defining == {"mesh.py"}
