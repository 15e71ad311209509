"""`jaxcontam.registry.Registry`, the one shape of detectors, families, benchmarks and confidences: registration by
call and by decorator, aliases (an alias two entries claim names neither), lazy "module:object" entries imported on
first use, an entry-point group read from an installed package's dist-info folder, and errors naming what is
available; and the four registries built on it."""

import dataclasses
import sys

import pytest

from jaxcontam.errors import DataError, JaxcontamError, ModelError
from jaxcontam.registry import Registry


@dataclasses.dataclass(frozen=True)
class Thing:
    name: str
    hub: tuple[str, ...] = ()


def things(**options) -> Registry[Thing]:
    return Registry("thing", Thing, name_of=lambda thing: thing.name, **options)


def test_register_by_call_and_by_decorator_keeps_order_and_refuses_a_taken_name():
    registry = things()
    assert registry.register(Thing("b")) == Thing("b")  # a call returns what it registered
    registry.register(Thing("a"))
    assert registry.names() == ("b", "a") and list(registry) == ["b", "a"] and len(registry) == 2
    with pytest.raises(JaxcontamError, match="a thing named 'a' is already registered"):
        registry.register(Thing("a"))
    with pytest.raises(JaxcontamError, match="thing 'x' is a str, not a Thing"):
        registry.register("x", name="x")  # type: ignore[call-overload]
    with pytest.raises(JaxcontamError, match="registered as 'c' calls itself 'a'"):
        registry.register(Thing("a"), name="c")

    def scorer(x: float) -> float:
        return x

    functions: Registry = Registry("scorer", type(scorer))  # named by `__name__` unless told

    @functions.register
    def mean(x: float) -> float:
        return x

    @functions.register(name="half", aliases=("h",))
    def halve(x: float) -> float:
        return x / 2

    assert functions.names() == ("mean", "half") and functions["h"] is halve and functions["mean"] is mean


def test_an_unknown_name_lists_the_available_ones_in_the_registrys_error_type():
    registry = things(error=DataError)
    registry.register(Thing("alpha"))
    registry.register(Thing("beta"))
    assert registry.get("gamma") is None and "gamma" not in registry
    with pytest.raises(DataError, match=r"unknown thing 'gamma'; available: alpha, beta"):
        registry["gamma"]


def test_aliases_and_a_shared_alias_that_names_neither_until_settled():
    registry = things(aliases_of=lambda thing: thing.hub)
    registry.register(Thing("easy", hub=("org/arc",)), aliases=("arc-e",))
    registry.register(Thing("hard", hub=("org/arc",)))
    assert registry["arc-e"].name == "easy" and registry.canonical("arc-e") == "easy"
    assert registry.get("org/arc") is None
    with pytest.raises(JaxcontamError, match="thing 'org/arc' is ambiguous: it names easy, hard"):
        registry["org/arc"]
    registry.register(Thing("medium", hub=("org/arc",)))
    registry.unregister("easy")
    assert registry.get("arc-e") is None and registry.get("org/arc") is None  # still shared by hard and medium
    registry.unregister("medium")
    assert registry["org/arc"].name == "hard"  # its one claimant left
    registry.register(Thing("other", hub=("org/arc",)))
    registry.alias("org/arc", "other")
    assert registry["org/arc"].name == "other"


def test_a_lazy_entry_is_imported_on_first_use_and_checked(tmp_path, monkeypatch):
    (tmp_path / "lazy_things.py").write_text(
        f"from {Thing.__module__} import Thing\nTHING = Thing('lazy')\nWRONG = Thing('other')\nNOT_A_THING = 3\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = things()
    registry.lazy("lazy", "lazy_things:THING")
    registry.lazy("wrong", "lazy_things:WRONG")
    registry.lazy("number", "lazy_things:NOT_A_THING")
    registry.lazy("missing", "no_such_module_here:THING")
    assert "lazy_things" not in sys.modules and "lazy" in registry  # listed, not imported
    assert registry["lazy"].name == "lazy" and "lazy_things" in sys.modules
    with pytest.raises(JaxcontamError, match="registered as 'wrong' calls itself 'other'"):
        registry["wrong"]
    with pytest.raises(JaxcontamError, match="thing 'number' is a int, not a Thing"):
        registry["number"]
    with pytest.raises(JaxcontamError, match="thing 'missing' .*no_such_module_here.* failed to load"):
        registry["missing"]


def installed(site, group: str, entries: dict[str, str], module: str, source: str) -> None:
    """A package installed in `site` as pip leaves one: its module and a dist-info folder with entry points."""
    (site / f"{module}.py").write_text(source)
    info = site / f"{module}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
    lines = "".join(f"{name} = {target}\n" for name, target in entries.items())
    (info / "entry_points.txt").write_text(f"[{group}]\n{lines}")


def test_an_entry_point_group_adds_installed_entries_after_the_built_ins(tmp_path, monkeypatch):
    source = f"from {Thing.__module__} import Thing\nZED = Thing('zed')\nYAK = Thing('yak')\n"
    installed(tmp_path, "test.things", {"zed": "my_things:ZED", "yak": "my_things:YAK"}, "my_things", source)
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = things(group="test.things")
    registry.register(Thing("built_in"))
    registry.protect()
    assert registry.names() == ("built_in", "yak", "zed") and "my_things" not in sys.modules
    assert registry["zed"].name == "zed" and registry.protected == ("built_in",)
    registry.unregister("zed")
    assert registry.names() == ("built_in", "yak")
    with pytest.raises(JaxcontamError, match="'built_in' is a built-in thing and cannot be removed"):
        registry.unregister("built_in")


def test_a_module_that_registers_itself_on_import_resolves_its_entry_point(tmp_path, monkeypatch):
    """The docs' plug-in shape: the module's last line registers its object, and the entry point names the same
    object, so importing it through the entry point registers it once."""
    registry = things(group="test.selfish")
    monkeypatch.setitem(sys.modules, "thing_registry_under_test", type(sys)("thing_registry_under_test"))
    sys.modules["thing_registry_under_test"].REGISTRY = registry  # type: ignore[attr-defined]
    source = (
        f"from {Thing.__module__} import Thing\nfrom thing_registry_under_test import REGISTRY\n"
        "SELF = REGISTRY.register(Thing('self'))\n"
    )
    installed(tmp_path, "test.selfish", {"self": "selfish:SELF"}, "selfish", source)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert registry["self"] is sys.modules["selfish"].SELF


def test_the_four_registries_list_their_built_ins():
    from jaxcontam.data.registry import BENCHMARKS, resolve_spec
    from jaxcontam.detect.pacost.confidences import CONFIDENCES
    from jaxcontam.detect.registry import BUILT_IN, DETECTORS, FAMILY_DETECTORS
    from jaxcontam.models.families import FAMILIES

    built_in = ("pacost", "likelihood", "exchangeability", "contam", "blind_baseline", "gradnorm", "cdd", "ts_guessing")
    built_in += ("reference_log_ratio", "recall", "codec")
    assert DETECTORS.names()[: len(BUILT_IN)] == BUILT_IN == built_in
    assert [stage.name for stage in DETECTORS.values()][: len(BUILT_IN)] == list(BUILT_IN)
    assert FAMILY_DETECTORS.protected == ("constat",) == tuple(stage.name for stage in FAMILY_DETECTORS.values())
    assert all(FAMILIES[name].model_type == name for name in FAMILIES)  # each family module is named once, by type
    assert {"llama", "granite", "qwen3_moe", "gpt2"} <= set(FAMILIES)
    with pytest.raises(ModelError, match="unknown model family 'bert'; available: gemma, "):
        FAMILIES["bert"]
    assert CONFIDENCES.names() == ("p_true", "p_true_raw", "p_yes", "answer_logprob", "question_min_k_plus_plus")
    assert [c.name for c in CONFIDENCES.values() if not c.needs_answer] == ["question_min_k_plus_plus"]
    assert [c.name for c in CONFIDENCES.values() if c.on_demand] == [c.name for c in CONFIDENCES.values() if c.positive]
    assert resolve_spec("allenai/ai2_arc:ARC-Easy").name == "arc_easy"  # type: ignore[union-attr]
    assert resolve_spec("allenai/ai2_arc") is None and resolve_spec("truthful_qa").name == "truthfulqa"  # type: ignore[union-attr]
    assert BENCHMARKS["Rowan/hellaswag".lower()].name == "hellaswag"
