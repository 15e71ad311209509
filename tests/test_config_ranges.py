"""One range per config field (`dataclass_config.ranged`), read by every entry point: the TOML file, `--set`, the
named options and the Python API refuse the same values with the same key named; `--out` naming a file is refused
before any work (issue 61.7)."""

import copy
import tomllib

import click
import pytest

from helpers import MODEL_LOAD_REACHED
from jaxcontam.audit.config import (
    EXAMPLE_CONFIG,
    AuditConfig,
    BenchmarkEntry,
    config_from_toml,
    read_config,
    resolve_config_paths,
)
from jaxcontam.commands.audit_options import with_aliases
from jaxcontam.dataclass_config import Range, apply_overrides, click_type, field_range
from jaxcontam.detect.contam import ContamSettings
from jaxcontam.detect.pacost.settings import PacostSettings
from jaxcontam.errors import JaxcontamError
from jaxcontam.storage.outputs import local_folder

EXAMPLE = tomllib.loads(EXAMPLE_CONFIG.read_text())


def from_toml(raw: dict):
    return config_from_toml(raw, EXAMPLE_CONFIG.parent, "audit.toml")


@pytest.mark.parametrize(
    "override, message",
    [
        ("benchmark.limit=-1", "limit = -1 is out of range; limit takes a whole number >= 1"),
        ("benchmark.limit=0", "limit = 0 is out of range"),
        ("benchmark.offset=-1", "offset = -1 is out of range; offset takes a whole number >= 0"),
        ("chunk_size=0", "chunk_size = 0 is out of range; chunk_size takes a whole number >= 1"),
        ("alpha=nan", "alpha = nan is not a finite number; alpha takes a finite number in \\(0, 1\\)"),
        ("contam.z_crit=nan", "\\[contam\\]: z_crit = nan is not a finite number"),
        ("contam.min_clean=0", "min_clean = 0 is out of range"),
        ("pacost.k=0", "k = 0 is out of range; k takes a finite number in \\(0, 1\\]"),
        ("pacost.top_p=inf", "top_p = inf is not a finite number"),
        ("pacost.max_new_tokens=0", "max_new_tokens = 0 is out of range"),
        ("pacost.seed=-1", "seed = -1 is out of range; seed takes a whole number in \\[0, 4294967296\\)"),
        ("ngram.n=0", "\\[ngram\\]: n = 0 is out of range"),
        ("pacost.gates.max_ngram_overlap=2", "max_ngram_overlap = 2 is out of range; .* in \\[0, 1\\]"),
        ("exchangeability.chunks=1", "chunks = 1 is out of range; chunks takes a whole number >= 2"),
        ("ngram.tokenizer=0", "tokenizer = 0 is int, but tokenizer takes str"),
        ("pacost.rephrase_model=[1]", "rephrase_model = \\[1\\] is list, but rephrase_model takes str"),
    ],
)
def test_toml_and_set_refuse_out_of_range_and_wrong_typed_values_naming_the_key(override, message):
    with pytest.raises(JaxcontamError, match=message):
        from_toml(apply_overrides(EXAMPLE, [override]))
    table, _, rest = override.partition(".")
    if "." in rest or "=" not in rest:  # a top-level key or a nested table: --set above says it all
        return
    key, _, value = rest.partition("=")
    raw = copy.deepcopy(EXAMPLE)
    written = tomllib.loads(f"v = {value}")["v"]
    for entry in raw[table] if isinstance(raw.get(table), list) else [raw.setdefault(table, {})]:
        entry[key] = written
    with pytest.raises(JaxcontamError, match=message):  # the same value written in the file
        from_toml(raw)


def test_a_toml_limit_of_minus_one_no_longer_audits_all_but_the_last_item():
    raw = copy.deepcopy(EXAMPLE)
    raw["benchmark"][0]["limit"] = -1
    with pytest.raises(JaxcontamError, match="limit = -1 is out of range"):
        from_toml(raw)


@pytest.mark.parametrize("name, value", [("limit", 0), ("limit", -1), ("offset", -2), ("alpha", 1.0)])
def test_named_options_and_the_python_api_refuse_what_the_file_refuses(name, value):
    with pytest.raises(JaxcontamError, match=f"{name} = {value!r} is out of range"):
        read_config(with_aliases(resolve_config_paths(EXAMPLE, EXAMPLE_CONFIG.parent), {name: value}), "audit.toml")


def test_settings_dataclasses_check_their_own_ranges():
    with pytest.raises(JaxcontamError, match="benchmark gsm8k: limit = 0 is out of range"):
        BenchmarkEntry("gsm8k", limit=0)
    with pytest.raises(JaxcontamError, match="limit = 2.5 is not a whole number"):
        BenchmarkEntry("gsm8k", limit=2.5)  # type: ignore[arg-type]
    with pytest.raises(JaxcontamError, match="\\[contam\\]: resamples = 0 is out of range"):
        ContamSettings(resamples=0)
    with pytest.raises(JaxcontamError, match="\\[pacost\\]: judge_max_new_tokens = 'many' is not a whole number"):
        PacostSettings(judge_max_new_tokens="many")  # type: ignore[arg-type]


def test_the_command_line_options_are_bounded_by_the_fields_ranges():
    limit = click_type(BenchmarkEntry, "limit")
    assert isinstance(limit, click.IntRange) and (limit.min, limit.max) == (1, None)
    with pytest.raises(click.BadParameter):
        limit.convert("-1", None, None)
    alpha = click_type(AuditConfig, "alpha")
    assert isinstance(alpha, click.FloatRange) and alpha.min_open and alpha.max_open
    assert field_range(AuditConfig, "chunk_size") == Range(low=1)


@pytest.mark.parametrize("value", [0.0, 1.0, 1.5, -0.1, float("nan")])
def test_the_level_has_one_definition_read_by_every_entry_point(value):
    """alpha's range is `detect.verdict.level_field`'s: the file, `--set`, AuditConfig (the named options), the Python
    API's verdicts and a summary.json being read refuse a value the same way; `--alpha` of the audit and of `epg` are
    bounded alike."""
    from jaxcontam.commands.epg import epg
    from jaxcontam.detect.audit_core import BenchmarkAudit
    from jaxcontam.detect.verdict import Level
    from jaxcontam.report.summary_schema import AuditSummary

    message = f"alpha = {value!r} is (out of range|not a finite number); alpha takes a finite number in \\(0, 1\\)"
    raw = copy.deepcopy(EXAMPLE) | {"alpha": value}
    with pytest.raises(JaxcontamError, match=message):
        from_toml(raw)
    with pytest.raises(JaxcontamError, match=message):
        from_toml(apply_overrides(copy.deepcopy(EXAMPLE), [f"alpha={value}"]))
    with pytest.raises(JaxcontamError, match=message):
        AuditConfig(models=(), benchmarks=(), alpha=value)
    with pytest.raises(JaxcontamError, match=message):
        BenchmarkAudit("b", None, [], None, {}, None, {}).verdicts(value)
    with pytest.raises(JaxcontamError, match="summary.json: " + message):
        AuditSummary.from_dict({"alpha": value, "runs": []})
    assert field_range(AuditConfig, "alpha") == field_range(Level, "alpha") == Range(0, 1, True, True)
    (option,) = [p for p in epg.params if p.name == "alpha"]
    assert vars(option.type) == vars(click_type(AuditConfig, "alpha")) and option.default == AuditConfig.alpha


def test_cli_limit_and_set_limit_are_refused_alike(jaxcontam_cli, tmp_path):
    code, named = jaxcontam_cli("audit", "--limit", "-1", "--out", tmp_path / "a")
    assert code == 2 and "--limit" in named and "x>=1" in named.replace(" ", "")
    code, dotted = jaxcontam_cli("audit", "--set", "benchmark.limit=-1", "--out", tmp_path / "b")
    assert code == 2 and "limit = -1 is out of range; limit takes a whole number >= 1" in dotted
    assert MODEL_LOAD_REACHED not in named + dotted


def test_out_naming_a_file_is_refused_before_any_work(jaxcontam_cli, tmp_path):
    taken = tmp_path / "notes.txt"
    taken.write_text("the user's file")
    code, err = jaxcontam_cli("audit", "--out", taken)
    assert code == 2 and f"--out {taken} is a file, not a folder" in err and MODEL_LOAD_REACHED not in err
    assert taken.read_text() == "the user's file"
    with pytest.raises(JaxcontamError, match=f"lies under {taken}, which is a file"):
        local_folder(taken / "run")
    assert local_folder(tmp_path / "new" / "run") == tmp_path / "new" / "run"
