"""Fuzzing the audit config: any value of any type at any key of the bundled example's audit.toml (and of the named
options) gives a valid config or a JaxcontamError, never another exception; a valid config holds only in-range
numbers. Bounded: a few hundred examples, each a parse of a small document (no model, no data read)."""

import copy
import dataclasses
import datetime
import math
import tomllib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxcontam.audit.config import EXAMPLE_CONFIG, AuditConfig, config_from_toml, read_config, resolve_config_paths
from jaxcontam.commands.audit_options import with_aliases
from jaxcontam.dataclass_config import apply_overrides, field_range
from jaxcontam.errors import JaxcontamError

EXAMPLE = tomllib.loads(EXAMPLE_CONFIG.read_text())
BASE = EXAMPLE_CONFIG.parent

# every key the example's tables take, plus a few that none takes
KEYS = {
    (): ("out", "alpha", "correction", "chunk_size", "bogus"),
    ("benchmark",): ("name", "split", "path", "fields", "paraphrases", "ground_truth", "limit", "offset", "bogus"),
    ("model",): ("path", "name", "dtype", "bogus"),
    ("corpus",): ("paths", "text_field", "counts", "bogus"),
    ("pacost",): (
        "preset", "confidence", "template", "test", "answers", "correction", "alternative", "k", "max_new_tokens",
        "judge_max_new_tokens", "seed", "temperature", "top_p", "chat_template", "rephrase_model", "rephrase_dtype",
        "rephrase_mesh", "gates", "reference", "alpha",
    ),
    ("pacost", "gates"): ("min_length_ratio", "max_length_ratio", "max_ngram_overlap", "preserve_numbers", "bogus"),
    ("ngram",): ("n", "scope", "normalize", "mincount", "skip_budget", "tokenizer", "bogus"),
    ("contam",): ("metric", "z_crit", "min_clean", "min_contaminated", "resamples", "seed", "bogus"),
    ("exchangeability",): ("chunks", "permutations", "bogus"),
    ("likelihood",): ("k", "gap_window", "frequency_table", "dc_pdd_cap", "bogus"),
    ("mesh",): ("data", "model", "fsdp", "bogus"),
}  # fmt: skip

scalars = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, -1, 2, 8, 64, 2**31, 2**63 - 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, 0.5, 1.0, -0.5, 1e-300, float("nan"), float("inf")]),
    st.booleans(),
    st.text(max_size=12),
    st.sampled_from(["greedy", "p_true", "holm", "item", "float32", "auto", "", "paper", "longest_match"]),
    st.just(datetime.date(2026, 1, 1)),  # TOML has dates
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "n", "data"]), inner, max_size=2),
    max_leaves=4,
)
edits = st.lists(
    st.sampled_from(sorted(KEYS)).flatmap(lambda table: st.tuples(st.just(table), st.sampled_from(KEYS[table]))),
    min_size=1,
    max_size=3,
)


def _set(raw: dict, table: tuple[str, ...], key: str, value) -> None:
    node = raw
    for part in table:
        node = node.setdefault(part, {}) if isinstance(node, dict) else {}  # inside a value a draw replaced: moot
    for entry in node if isinstance(node, list) else [node]:
        if isinstance(entry, dict):
            entry[key] = value


def _in_range(config: AuditConfig) -> None:
    """Every ranged number of a valid config lies in its range (the checks cannot be bypassed by a type)."""
    settings_objects = [config, *config.benchmarks, config.pacost.gates, config.ngram.counting, config.ngram.scoring]
    settings_objects += [config.settings_of(name) for name in ("pacost", "likelihood", "contam", "exchangeability")]
    for settings_object in settings_objects:
        for f in dataclasses.fields(settings_object):
            bounds, value = field_range(type(settings_object), f.name), getattr(settings_object, f.name)
            if bounds is not None and value is not None:
                assert math.isfinite(value) and bounds.admits(value), (f.name, value)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits=edits, data=st.data())
def test_any_toml_value_is_a_config_or_a_jaxcontam_error(edits, data):
    raw = copy.deepcopy(EXAMPLE)
    for table, key in edits:
        _set(raw, table, key, data.draw(values, label=f"{'.'.join(table + (key,))}"))
    try:
        config = config_from_toml(raw, BASE, "audit.toml")
    except JaxcontamError:
        return
    _in_range(config)


@settings(max_examples=200, deadline=None)
@given(table=st.sampled_from(sorted(KEYS)), data=st.data())
def test_any_set_override_is_a_config_or_a_jaxcontam_error(table, data):
    key = data.draw(st.sampled_from(KEYS[table]))
    text = data.draw(st.one_of(st.text(max_size=10), st.sampled_from(["-1", "0", "nan", "inf", "1e999", "[1]", "{}"])))
    try:
        config = config_from_toml(apply_overrides(EXAMPLE, [f"{'.'.join(table + (key,))}={text}"]), BASE, "--set")
    except JaxcontamError:
        return
    _in_range(config)


@settings(max_examples=200, deadline=None)
@given(
    name=st.sampled_from(["limit", "offset", "alpha"]),
    value=st.one_of(st.integers(-5, 5), st.floats(allow_nan=True), st.text(max_size=3), st.booleans()),
)
def test_named_options_take_the_fields_checks(name, value):
    base = resolve_config_paths(copy.deepcopy(EXAMPLE), BASE)
    try:
        config = read_config(with_aliases(base, {name: value}), "audit.toml")
    except JaxcontamError:
        return
    _in_range(config)
