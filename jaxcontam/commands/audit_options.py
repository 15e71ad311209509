"""The options `jaxcontam audit` and `jaxcontam pacost` share, and the audit config they make.

An audit is described by an audit TOML file (`--config`; `jaxcontam.audit.config`), then `--set KEY=VALUE`
dotted overrides of that file's keys (`--set pacost.k=0.3`, `--set alpha=0.01`, `--set benchmark.limit=8`;
type-checked as the file is, `jaxcontam.dataclass_config`), then the named options, which win over both: each is an
alias of a `--set` key (`ALIASES`), applied to the document as `--set` is, so the same reader checks it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import click

from jaxcontam.audit.config import AuditConfig, BenchmarkEntry
from jaxcontam.commands.mesh_options import DTYPES, attention_from_environment, dtype_option, mesh_options
from jaxcontam.commands.verdicts import FAIL_ON
from jaxcontam.dataclass_config import apply_overrides, apply_settings, click_type
from jaxcontam.detect.pacost.confidences import CONFIDENCES
from jaxcontam.detect.pacost.settings import PRESETS, PacostSettings
from jaxcontam.engine.chat import CHAT_MODES
from jaxcontam.errors import JaxcontamError
from jaxcontam.mesh import mesh_sizes
from jaxcontam.stats.batched import METHODS
from jaxcontam.storage import as_path

SET_HELP = (
    "Override a key of the config file, dotted as in the file: --set pacost.k=0.3, --set alpha=0.01, "
    "--set ngram.n=13, --set benchmark.limit=8 (every [[benchmark]]). The value is read as TOML (0.3, "
    'true, "text"), else as text (--set pacost.confidence=p_true). Repeatable; named options win over it.'
)


def audit_options(command):
    """Add the shared audit options to a click command (each None when not given)."""
    options = [
        click.option(
            "--config",
            "config_path",
            type=click.Path(dir_okay=False),
            default=None,
            help="Audit TOML file (models, benchmarks, corpora, settings). Default with no --model, "
            "--benchmark or --corpus: the bundled example.",
        ),
        click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help=SET_HELP),
        click.option(
            "--model", "models", multiple=True, help="Model folder or hub id (repeatable; replaces the config's)."
        ),
        dtype_option(None, "Weights of every audited model (default: the config's, else float32)."),
        click.option(
            "--benchmark",
            "benchmarks",
            multiple=True,
            help="Benchmark name, hub id or file (repeatable; replaces the config's).",
        ),
        click.option("--path", default=None, help="Local files of the one --benchmark given."),
        click.option("--split", default=None, help="Split of the --benchmark entries."),
        click.option(
            "--field",
            "fields",
            multiple=True,
            metavar="ITEM_FIELD=COLUMN",
            help="Column of the one --benchmark file holding an item field (question, answer, choices, context, "
            "id): --field question=prompt --field answer=label. Repeatable.",
        ),
        click.option(
            "--paraphrases",
            default=None,
            help="Rephrasings of the one benchmark: a built-in source (gsm8k_rephrase, gsm_plus, "
            "mmlu_rephrase, xcopa_backtranslation) or an {id, paraphrase} file.",
        ),
        click.option(
            "--limit",
            type=click_type(BenchmarkEntry, "limit"),
            default=None,
            help="Audit only each benchmark's first N items.",
        ),
        click.option(
            "--offset",
            type=click_type(BenchmarkEntry, "offset"),
            default=None,
            help="Skip each benchmark's first N items (then --limit counts): fresh items beside an audited slice.",
        ),
        click.option("--corpus", "corpora", multiple=True, help="Training corpus for ConTAM (repeatable)."),
        click.option("--out", default=None, help="Output folder (default: the config's, else ./jaxcontam-audit)."),
        click.option(
            "--alpha",
            type=click_type(AuditConfig, "alpha"),
            default=None,
            help="The significance level of every verdict: PaCoST (raw and calibrated), the sweep's correction, "
            "ConTAM, exchangeability and the report (default: the config's alpha, else 0.05).",
        ),
        click.option(
            "--fail-on",
            type=click.Choice(FAIL_ON),
            default="never",
            show_default=True,
            help="Gate a pipeline on the audit: exit 4 when any headline verdict is contaminated (after the "
            "sweep's correction); with 'untested', also exit 5 when none is but a headline test could not run. "
            "Outputs are written either way.",
        ),
        click.option(
            "--preset",
            type=click.Choice(list(PRESETS)),
            default=None,
            help="PaCoST preset (default: the config's [pacost] preset, else jaxcontam). jaxcontam: greedy "
            "answers, the question's Min-K%++ (the decision rule's pick), permutation test; paper: as its authors "
            "ran it (sampled answers, their Yes/No judge's P(yes), paired t-test at p < alpha, "
            "uncorrected).",
        ),
        click.option(
            "--confidence",
            type=click.Choice(CONFIDENCES.names()),
            default=None,
            help="PaCoST confidence (default: the preset's).",
        ),
        click.option(
            "--test", type=click.Choice(METHODS), default=None, help="PaCoST's paired test (default: the preset's)."
        ),
        click.option(
            "--chat-template",
            type=click.Choice(list(CHAT_MODES)),
            default=None,
            help="Ask and judge as chat turns: auto (the default) = when the tokenizer has a template.",
        ),
        click.option(
            "--seed",
            type=click_type(PacostSettings, "seed"),
            default=None,
            help="Seed of PaCoST's sampled answers (default 0).",
        ),
        click.option(
            "--rephrase-model", default=None, help="A model that rephrases items lacking an accepted rephrasing."
        ),
        click.option(
            "--reference-model",
            default=None,
            help="A model believed clean on the benchmarks (a base checkpoint, another family), loaded once and "
            "given to every detector: PaCoST's calibrated verdict tests the audited model's original-minus-rephrased "
            "confidence gap against this model's (summary.json: pacost.calibrated); the reference log-likelihood "
            "ratio ([reference_log_ratio]) needs it. Default: the config's reference_model (or [pacost] reference), "
            "else none.",
        ),
        click.option(
            "--rephrase-dtype",
            type=click.Choice(DTYPES),
            default=None,
            help="Weights of the rephrase model (default float32).",
        ),
        click.option(
            "--rephrase-mesh",
            default=None,
            metavar="data=D,model=M",
            help="Mesh of the rephrase model, read as --mesh is (default: --mesh's); --fsdp applies to it.",
        ),
    ]
    command = mesh_options(command)
    for option in reversed(options):
        command = option(command)
    return command


@dataclasses.dataclass(frozen=True)
class Alias:
    """A named option as the `--set` key it sets: `value(option's value, the document so far)` is the key's TOML
    value; `entries`: the key lies in every entry of an array of tables ("every"; none: nothing to set) or in its one
    entry ("one"); `replaces`: keys the option also drops (an older name of the same setting)."""

    key: str
    value: Callable[[Any, dict], Any] = lambda value, raw: value
    entries: Literal["", "every", "one"] = ""
    replaces: tuple[str, ...] = ()


def _fields(pairs: tuple[str, ...], raw: dict) -> dict[str, str]:
    """`--field ITEM_FIELD=COLUMN` pairs as a benchmark's `fields` table (the field names are checked where it is
    read, `jaxcontam.data.custom`)."""
    fields = {}
    for pair in pairs:
        field, equals, column = pair.partition("=")
        if not (equals and field.strip() and column.strip()):
            raise JaxcontamError(f"--field {pair!r}: give ITEM_FIELD=COLUMN, e.g. --field question=prompt")
        if field.strip() in fields:
            raise JaxcontamError(f"--field {field.strip()} is given twice: give each item field once")
        fields[field.strip()] = column.strip()
    return fields


def _fsdp_of(raw: dict) -> bool:
    mesh = raw.get("mesh")
    return mesh.get("fsdp", False) if isinstance(mesh, dict) else False


def _mesh(option: str) -> Callable[[str, dict], dict]:
    """`--mesh data=D,model=M` as a [mesh]-style table, with the fsdp of the audited models' mesh."""
    return lambda text, raw: mesh_sizes(text, option) | {"fsdp": _fsdp_of(raw)}


# Each named option (click's parameter name) -> the --set key it is an alias of, applied in this order after --set
# (so a named option wins): --model and --benchmark replace the entries the later options set keys in.
ALIASES = {
    "models": Alias("model", lambda paths, raw: [{"path": path} for path in paths]),
    "dtype": Alias("model.dtype", entries="every"),
    "benchmarks": Alias("benchmark", lambda names, raw: [{"name": name} for name in names]),
    "path": Alias("benchmark.path", entries="one"),
    "split": Alias("benchmark.split", entries="every"),
    "fields": Alias("benchmark.fields", _fields, entries="one"),
    "paraphrases": Alias("benchmark.paraphrases", entries="one"),
    "limit": Alias("benchmark.limit", entries="every"),
    "offset": Alias("benchmark.offset", entries="every"),
    "corpora": Alias("corpus.paths", lambda paths, raw: list(paths)),
    "out": Alias("out"),
    "alpha": Alias("alpha"),
    "mesh": Alias("mesh", _mesh("--mesh")),
    "fsdp": Alias("mesh.fsdp"),
    "preset": Alias("pacost.preset"),
    "confidence": Alias("pacost.confidence"),
    "test": Alias("pacost.test"),
    "chat_template": Alias("pacost.chat_template"),
    "seed": Alias("pacost.seed"),
    "rephrase_model": Alias("pacost.rephrase_model"),
    "rephrase_dtype": Alias("pacost.rephrase_dtype"),
    "rephrase_mesh": Alias("pacost.rephrase_mesh", _mesh("--rephrase-mesh")),
    "reference_model": Alias("reference_model", replaces=("pacost.reference",)),
}


def option_name(name: str) -> str:
    """The command-line spelling of option `name` (click's parameter name): "--rephrase-model", "--model"."""
    return {"models": "--model", "benchmarks": "--benchmark", "fields": "--field", "corpora": "--corpus"}.get(
        name, "--" + name.replace("_", "-")
    )


def with_aliases(raw: dict, options: dict) -> dict:
    """The TOML document with the named options given applied as the keys they alias (`ALIASES`)."""
    for name, alias in ALIASES.items():
        given = options.get(name)
        if given is None or given == ():
            continue
        table, _, key = alias.key.rpartition(".")
        entries = raw.get(table)
        if alias.entries and not isinstance(entries, list):
            continue  # no entry to set the key in: the audit lacks them (refused below)
        if alias.entries == "one" and isinstance(entries, list) and len(entries) != 1:
            option = option_name(name)
            raise JaxcontamError(
                f"{option} sets one [[{table}]]'s {key}; the audit has {len(entries)}: give one --{table} with it, "
                f"or set `{key}` in each [[{table}]] (or drop {option})"
            )
        for dropped in alias.replaces:
            parent, _, leaf = dropped.rpartition(".")
            if isinstance(raw.get(parent), dict):
                raw = raw | {parent: {k: v for k, v in raw[parent].items() if k != leaf}}
        raw = apply_settings(raw, [(option_name(name), tuple(alias.key.split(".")), alias.value(given, raw))])
    return raw


def audit_config(options: dict, stages: tuple[str, ...] | None = None):
    """The `AuditConfig` of the shared options (as click passes them): the --config file (the bundled example when
    no model, benchmark or corpus is named), its keys overridden by --set, then the named options (`ALIASES`);
    `stages` forced when given."""
    from jaxcontam.audit.config import EXAMPLE_CONFIG, read_config, read_toml, resolve_config_paths
    from jaxcontam.commands.data_options import data_roots_from_environment

    config_path, overrides = options["config_path"], options["overrides"]
    if config_path is None and not (options["models"] or options["benchmarks"] or options["corpora"]):
        config_path = EXAMPLE_CONFIG
        click.echo(f"auditing the bundled example ({EXAMPLE_CONFIG.parent})", err=True)
    if config_path is None and not overrides and not (options["models"] and options["benchmarks"]):
        raise JaxcontamError(
            "give both --model and --benchmark (or a --config file); with no arguments at all "
            "`jaxcontam audit` audits the bundled example"
        )
    raw, base = (read_toml(config_path), as_path(config_path).parent) if config_path is not None else ({}, Path.cwd())
    raw = with_aliases(resolve_config_paths(apply_overrides(raw, overrides), base), options)
    config = read_config(raw, "--set" if config_path is None else str(as_path(config_path)))
    if not (config.models and config.benchmarks):
        raise JaxcontamError(
            "no model or no benchmark to audit: give --model and --benchmark, or a --config file "
            "with [[model]] and [[benchmark]] tables"
        )
    config = dataclasses.replace(config, data_roots=data_roots_from_environment(), stages=stages or config.stages)
    return with_attention(config, attention_from_environment())


def with_attention(config, attention: str):
    """The config with `attention` as the attention path of its audited and rephrase models."""
    rephrase = config.pacost.rephrase_mesh
    return dataclasses.replace(
        config,
        mesh=dataclasses.replace(config.mesh, attention=attention),
        pacost=dataclasses.replace(
            config.pacost,
            rephrase_mesh=None if rephrase is None else dataclasses.replace(rephrase, attention=attention),
        ),
    )
