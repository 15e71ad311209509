"""The modules of jaxcontam.models import each other without a circle: a layered package (config at the bottom,
the shared decoder core and the family modules above it, spec / loading / gguf on top).

Every import statement of every module counts, top-level or inside a function: a function-level import that closes
a circle is a circle too, only hidden until the function runs.
"""

import ast
import pathlib

import jaxcontam.models

PACKAGE = "jaxcontam.models"
ROOT = pathlib.Path(jaxcontam.models.__file__).parent


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    parts = parts[:-1] if parts[-1] == "__init__" else parts
    return ".".join((PACKAGE, *parts))


def modules() -> dict[str, pathlib.Path]:
    return {module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def imported(tree: ast.AST, name: str, is_package: bool, known: set[str]) -> set[str]:
    """The modules of the package that `tree` (module `name`) imports anywhere, `from package import module`
    counted as an import of that module."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        found.update(target for target in targets if target in known)
    return found - {name}


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {
        name: imported(ast.parse(path.read_text()), name, path.name == "__init__.py", set(known))
        for name, path in known.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of `graph` as [a, b, ..., a], or None (depth-first search with colours)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_import_circle_in_models():
    graph = import_graph()
    assert len(graph) > 20 and f"{PACKAGE}.families.llama" in graph
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_core_does_not_import_the_families_or_the_spec():
    """The decoder core knows only the typed config: no family, no engine-facing spec."""
    graph = import_graph()
    for core in ("config", "layers", "attention", "experts", "decoder"):
        deps = graph[f"{PACKAGE}.{core}"]
        assert not {d for d in deps if d.startswith(f"{PACKAGE}.families") or d == f"{PACKAGE}.spec"}, (core, deps)


def test_cycle_finder_finds_a_function_level_circle():
    """The old circle (spec -> decoder at function level, decoder -> spec at the top) is found."""
    known = {f"{PACKAGE}.spec", f"{PACKAGE}.decoder"}
    spec = ast.parse("def hidden_states():\n    from jaxcontam.models import decoder\n")
    decoder = ast.parse("from jaxcontam.models.spec import ModelSpec\n")
    graph = {
        f"{PACKAGE}.spec": imported(spec, f"{PACKAGE}.spec", False, known),
        f"{PACKAGE}.decoder": imported(decoder, f"{PACKAGE}.decoder", False, known),
    }
    assert find_cycle(graph) == [f"{PACKAGE}.decoder", f"{PACKAGE}.spec", f"{PACKAGE}.decoder"]


def test_families_build_on_the_reading_layers_only():
    """A family module sees the typed config, the config reader and the name-table pieces, never the spec, the
    decoder or the registry (which imports every family)."""
    graph = import_graph()
    allowed = {f"{PACKAGE}.{name}" for name in ("config", "hf_config", "weight_entries", "families.base")}
    for name, deps in graph.items():
        if name.startswith(f"{PACKAGE}.families.") and name != f"{PACKAGE}.families.base":
            others = {d for d in deps if not d.startswith(f"{PACKAGE}.families.") and d not in allowed}
            assert not others and f"{PACKAGE}.families" not in deps, (name, others)
