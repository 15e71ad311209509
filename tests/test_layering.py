"""The layering of jaxcontam, read from the source: no import
circle between modules or between packages, and no module importing a layer above its own (docs/architecture.md).

Every import statement of every module counts, top-level or inside a function: a function-level import that closes
a circle or reaches up is one too, only hidden until the function runs. Inside `jaxcontam.models` the decoder core
sits below the family modules, and those below spec / loading / gguf.
"""

import ast
import pathlib

import jaxcontam

PACKAGE = "jaxcontam"
ROOT = pathlib.Path(jaxcontam.__file__).parent
MODELS = f"{PACKAGE}.models"

# Each package or top-level module of jaxcontam (its "component") by layer, bottom first: a module imports from its
# own layer (no circle) and the layers below, never above. "__init__" is the package's facade (`jaxcontam.load_model`,
# `jaxcontam.AuditCallback`): it reaches into detect, so only layer 4 and up import it.
LAYERS = (
    (
        "errors",
        "mesh",
        "cluster",
        "storage",
        "dataclass_config",
        "dtypes",
        "stage_clock",
        "compile_cache",
        "chat_render",
        "registry",
    ),
    ("models", "language_model", "functional", "flax_models", "kernels", "cache_slots"),
    ("data", "stats", "engine", "ngram", "decontam"),
    ("detect", "report"),
    ("detectors", "audit", "training", "planning", "lm_eval", "__init__"),
    ("commands", "cli"),
)
LAYER = {component: level for level, components in enumerate(LAYERS) for component in components}


def module_name(path: pathlib.Path, root: pathlib.Path, package: str) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    parts = parts[:-1] if parts[-1] == "__init__" else parts
    return ".".join((package, *parts))


def modules() -> dict[str, pathlib.Path]:
    return {module_name(path, ROOT, PACKAGE): path for path in sorted(ROOT.rglob("*.py"))}


def component(module: str) -> str:
    """jaxcontam.engine.scoring -> engine; jaxcontam.cli -> cli; jaxcontam -> __init__."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


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
        name: imported(ast.parse(path.read_text(encoding="utf-8")), name, path.name == "__init__.py", set(known))
        for name, path in known.items()
    }


def component_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Which components each component's modules import (itself left out)."""
    found: dict[str, set[str]] = {}
    for name, deps in graph.items():
        found.setdefault(component(name), set()).update(component(d) for d in deps)
    return {name: deps - {name} for name, deps in found.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of `graph` as [a, b, ..., a], or None (depth-first search with colours)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
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


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import of a module from a layer above its own, as "module (layer) -> module (layer)"."""
    return [
        f"{name} ({LAYER[component(name)]}) -> {dep} ({LAYER[component(dep)]})"
        for name, deps in sorted(graph.items())
        for dep in sorted(deps)
        if LAYER[component(dep)] > LAYER[component(name)]
    ]


def test_every_package_has_a_layer():
    graph = import_graph()
    assert len(graph) > 150 and f"{MODELS}.families.llama" in graph and f"{PACKAGE}.kernels.vocab_logprobs" in graph
    unplaced = sorted({component(name) for name in graph} - set(LAYER))
    assert not unplaced, f"give {unplaced} a layer in LAYERS (tests/test_layering.py) and docs/architecture.md"


def test_no_import_circle_between_modules():
    cycle = find_cycle(import_graph())
    assert cycle is None, " -> ".join(cycle)


def test_no_import_circle_between_packages():
    cycle = find_cycle(component_graph(import_graph()))
    assert cycle is None, " -> ".join(cycle)


def test_no_module_imports_a_layer_above_its_own():
    assert upward_imports(import_graph()) == []


def test_the_engine_imports_no_model_code():
    """The engine runs any model through `ModelInterface` (a parameter), so it imports no model package."""
    engine = component_graph(import_graph())["engine"]
    assert not engine & {"models", "language_model", "functional", "flax_models"}, engine


def test_the_checks_find_a_planted_upward_import_and_circles():
    """A function-level import of the command layer from training is found, and so are the old circles: spec ->
    decoder at function level (decoder -> spec at the top), and language_model -> models -> language_model."""
    known = {f"{PACKAGE}.training.contaminate", f"{PACKAGE}.commands.mesh_options", f"{PACKAGE}.errors"}
    training = ast.parse("def run():\n    from jaxcontam.commands.mesh_options import mesh_layout\n")
    graph = {name: set() for name in known}
    graph[f"{PACKAGE}.training.contaminate"] = imported(training, f"{PACKAGE}.training.contaminate", False, known)
    assert upward_imports(graph) == [f"{PACKAGE}.training.contaminate (4) -> {PACKAGE}.commands.mesh_options (5)"]

    spec, decoder = f"{MODELS}.spec", f"{MODELS}.decoder"
    graph = {
        spec: imported(
            ast.parse("def hidden_states():\n    from jaxcontam.models import decoder\n"), spec, False, {spec, decoder}
        ),
        decoder: imported(ast.parse("from jaxcontam.models.spec import ModelSpec\n"), decoder, False, {spec, decoder}),
    }
    assert find_cycle(graph) == [decoder, spec, decoder]

    interface, model = f"{PACKAGE}.language_model", f"{MODELS}.model"
    graph = {interface: {decoder}, decoder: set(), model: {interface}}
    assert find_cycle(graph) is None
    assert find_cycle(component_graph(graph)) == ["language_model", "models", "language_model"]


def test_models_core_does_not_import_the_families_or_the_spec():
    """The decoder core knows only the typed config: no family, no engine-facing spec."""
    graph = import_graph()
    for core in ("config", "layers", "attention", "experts", "decoder"):
        deps = graph[f"{MODELS}.{core}"]
        assert not {d for d in deps if d.startswith(f"{MODELS}.families") or d == f"{MODELS}.spec"}, (core, deps)


def test_families_build_on_the_reading_layers_only():
    """A family module sees the typed config, the config reader and the name-table pieces, never the spec, the
    decoder or the registry (which imports every family)."""
    graph = import_graph()
    allowed = {f"{MODELS}.{name}" for name in ("config", "hf_config", "weight_entries", "families.base")}
    for name, deps in graph.items():
        if name.startswith(f"{MODELS}.families.") and name != f"{MODELS}.families.base":
            models = {d for d in deps if d.startswith(f"{MODELS}.")}
            others = {d for d in models if not d.startswith(f"{MODELS}.families.") and d not in allowed}
            assert not others and f"{MODELS}.families" not in deps, (name, others)
