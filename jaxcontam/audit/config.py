# pyright: standard
"""What an audit runs: models x benchmarks (+ corpora), from a TOML file and/or the command line.

Relative paths in a TOML file are read from the file's folder (a detector's too: the fields its settings make with
`dataclass_config.path_field`, e.g. [likelihood] frequency_table). Example (the bundled example's audit.toml):

    out = "jaxcontam-audit"
    [[model]]
    path = "model"
    [[benchmark]]
    name = "gsm8k"
    path = "gsm8k_test_sample.jsonl"
    paraphrases = "gsm8k_rephrasings.jsonl"   # a built-in source name or a {id, paraphrase} file
    ground_truth = "ground_truth.jsonl"       # optional {id, contaminated} rows: known labels to check against
    [corpus]
    paths = ["corpus.jsonl.gz"]
    [pacost]
    confidence = "answer_logprob"            # or preset = "paper": PaCoST as its authors ran it (detect.pacost)

`AuditConfig` nests as the file does, read by the generic table reader (`dataclass_config.read_fields`): [[model]]
`ModelEntry`, [[benchmark]] `BenchmarkEntry`, [corpus] `CorpusConfig`, [ngram] `NgramConfig` (`NgramSettings` and
`NgramScoring` flat in one table, plus tokenizer), [mesh] `MeshSettings`, and [pacost] `PacostConfig` for its
rephrase model (rephrase_model, rephrase_dtype, rephrase_mesh, `gates`: `RephraseGates`). Each registered detector's
table is parsed by the registry (`detect.registry`; `detector_settings`) into `AuditConfig.detectors`: its keys are
the fields of its settings dataclass (defaults there): [pacost] `PacostSettings` (beside `PacostConfig`'s keys and
`reference`, the older name of the top-level `reference_model`), [likelihood] `LikelihoodSettings`,
[exchangeability] `ExchangeabilitySettings` (the table turns the test on, as a plug-in's table turns it on),
[contam] `ContamSettings`, [blind_baseline] `BlindBaselineSettings` (the table turns it on); unknown keys and wrong
types are refused, naming the key and the known ones. A detector across the
audit's models (`detect.registry.FAMILY_DETECTORS`) is turned on by its table, parsed the same way into
`AuditConfig.family`: [constat] `ConStatSettings`, whose `reference_models` name [[model]] entries believed clean.
The top-level `alpha` is the one level of every verdict (PaCoST raw and calibrated, the sweep, ConTAM,
exchangeability, ConStat, the report): an `alpha` in a detector's table is refused. The command line's `--set
pacost.k=0.3` overrides a key before the file is read (`jaxcontam.dataclass_config`).

`reference_model` (top level; `--reference-model`): a model believed clean on the benchmarks, loaded once and given to
every detector (`detect.stage.ReferenceModel`): PaCoST's calibrated verdict, the reference log-likelihood ratio.

`correction` (top level): how the sweep turns PaCoST p-values into verdicts, "holm" (default), "bh" or "none"
(the raw p < alpha); a preset whose own correction is "none" (`paper`) keeps its raw verdict under any of them.

Optional placement (`jaxcontam.mesh`): `[mesh] data = 2, model = 4, fsdp = false` for the audited models (data
left out: the devices the model axis leaves), and `[pacost] rephrase_dtype = "bfloat16"`,
`rephrase_mesh = {data = 8, model = 1, fsdp = false}` for the rephrase model (default: float32 on `[mesh]`).
"""

from __future__ import annotations

import dataclasses
import functools
import tomllib
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from jaxcontam.data.custom import parse_field_mapping
from jaxcontam.data.roots import DEFAULT_ROOTS
from jaxcontam.dataclass_config import (
    apply_overrides,
    check_keys,
    check_ranges,
    path_field,
    ranged,
    read_fields,
    resolve_paths,
    table_field,
    table_keys,
    table_of,
    table_values,
)
from jaxcontam.detect.audit_core import DEFAULT_DETECTORS, AuditSettings
from jaxcontam.detect.family_stage import FamilyStage
from jaxcontam.detect.pacost.settings import PacostSettings
from jaxcontam.detect.registry import CORPUS_STAGES, DETECTORS, FAMILY_DETECTORS
from jaxcontam.detect.registry import settings_of as stage_settings
from jaxcontam.detect.rephrase import RephraseGates
from jaxcontam.detect.stage import DetectorStage
from jaxcontam.detect.verdict import level_field
from jaxcontam.dtypes import DTYPES
from jaxcontam.errors import JaxcontamError
from jaxcontam.mesh import MeshSettings
from jaxcontam.ngram.audit import NgramScoring, NgramSettings
from jaxcontam.stats.paired import DEFAULT_RESAMPLES
from jaxcontam.storage import as_path, describe_error, has_glob, is_url, storage_errors

EXAMPLE_CONFIG = Path(__file__).resolve().parents[1] / "examples" / "tiny_contaminated" / "audit.toml"
DEFAULT_OUT = "jaxcontam-audit"
SweepCorrection = Literal["holm", "bh", "none"]  # how the sweep turns PaCoST p-values into verdicts
CORRECTIONS: tuple[SweepCorrection, ...] = typing.get_args(SweepCorrection)


def _model_name(path: str) -> str:
    return (path.rstrip("/").rsplit("/", 1)[-1] if is_url(path) else Path(path).name) or path


def _dtype(value, where: str) -> str:
    if value not in DTYPES:
        raise JaxcontamError(f"{where}: dtype {value!r} is not supported; use one of {', '.join(DTYPES)}")
    return value


def mesh_settings(table, where: str) -> MeshSettings:
    """A `[mesh]`-style table {data, model, fsdp} (inline or not); data left out: the devices model leaves."""
    if not isinstance(table, dict):
        raise JaxcontamError(
            f"{where}: expected a table of data, model, fsdp, got {table!r}; write e.g. "
            "{data = 2, model = 4} (or a [mesh] table)"
        )
    check_keys(table, ("data", "model", "fsdp"), where)
    for axis in ("data", "model"):
        value = table.get(axis, 1)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise JaxcontamError(
                f"{where}: {axis} = {value!r} is not a number of devices; write a whole number "
                f">= 1, e.g. {axis} = 2 (data x model must equal the device count)"
            )
    fsdp = table.get("fsdp", False)
    if not isinstance(fsdp, bool):
        raise JaxcontamError(f"{where}: fsdp = {fsdp!r} must be true or false, e.g. fsdp = true")
    return MeshSettings(data=table.get("data"), model=table.get("model", 1), fsdp=fsdp)


@dataclasses.dataclass(frozen=True)
class ModelEntry:
    path: str = path_field(dataclasses.MISSING)
    name: str = ""
    dtype: str = table_field("float32", read=_dtype)

    def __post_init__(self):
        if not self.name:
            object.__setattr__(self, "name", _model_name(self.path))


@dataclasses.dataclass(frozen=True)
class BenchmarkEntry:
    name: str
    split: str | None = None
    path: str | None = path_field()
    fields: dict | None = None
    paraphrases: str | None = path_field()  # a built-in source name or an {id, paraphrase} file
    ground_truth: str | None = path_field()  # optional {id, contaminated} rows: known labels to check against
    limit: int | None = ranged(None, at_least=1)  # the first `limit` items (after `offset`); None: all
    offset: int = ranged(0, at_least=0)  # items skipped before `limit` counts (rephrasings: the whole split)

    def __post_init__(self):
        check_ranges(self, f"benchmark {self.name}")
        if self.fields is not None:
            parse_field_mapping(self.fields)  # refused here, where the config is read, not when the audit loads it

    @property
    def label(self) -> str:
        """name[:split], then [offset:] when items are skipped: the selection's name in reports and in the keys of
        stored chunks (an offset moves every chunk; a limit only adds or drops chunks at the end)."""
        label = self.name if self.split is None else f"{self.name}:{self.split}"
        return f"{label}[{self.offset}:]" if self.offset else label


@dataclasses.dataclass(frozen=True)
class CorpusConfig:
    """[corpus]: the training corpus ConTAM matches benchmark items against."""

    paths: tuple[str, ...] = path_field(())
    text_field: str = "text"
    follow_symlinks: bool = False  # read the files a corpus folder's links lead to outside it
    counts: str | None = path_field()  # a folder of precomputed counts (by `jaxcontam ngram` or an earlier audit)


@dataclasses.dataclass(frozen=True)
class NgramConfig:
    """[ngram]: how n-grams are counted and how counted n-grams score an item (one flat table)."""

    counting: NgramSettings = table_field(NgramSettings(), flat=True)
    scoring: NgramScoring = table_field(NgramScoring(), flat=True)
    tokenizer: str | None = path_field()  # None: the first model's


@dataclasses.dataclass(frozen=True)
class PacostConfig:
    """The [pacost] keys beside `PacostSettings`' fields (which `AuditConfig.detectors` holds): the rephrase model,
    where it runs, and the gates a rephrasing passes."""

    rephrase_model: str | None = path_field()  # a model that rephrases items lacking an accepted rephrasing
    rephrase_dtype: str = table_field("float32", read=_dtype)
    rephrase_mesh: MeshSettings | None = table_field(None, read=mesh_settings)  # None: the audited models' `mesh`
    gates: RephraseGates = RephraseGates()


@dataclasses.dataclass(frozen=True)
class AuditConfig:
    """An audit, nested as its TOML file: [[model]], [[benchmark]], [corpus], [ngram], [mesh] and [pacost] are its
    fields of the same names; each detector's table is its settings in `detectors` (`family` for the detectors
    across the audit's models), and `stages` are the detectors that run (the defaults, then those turned on by their
    table)."""

    models: tuple[ModelEntry, ...] = table_field((), key="model")
    benchmarks: tuple[BenchmarkEntry, ...] = table_field((), key="benchmark")
    corpus: CorpusConfig = CorpusConfig()
    out: str = DEFAULT_OUT
    alpha: float = level_field()  # the one level of every verdict
    correction: SweepCorrection = "holm"
    chunk_size: int = ranged(64, at_least=1)  # items per resumable chunk; a multiple of the 16-row batches
    reference_model: str | None = path_field()  # the audit's reference model, believed clean: every detector reads it
    pacost: PacostConfig = PacostConfig()
    mesh: MeshSettings = table_field(MeshSettings(), read=mesh_settings)  # the audited models' (default: all on data)
    ngram: NgramConfig = NgramConfig()
    detectors: Mapping[str, Any] = table_field(derived=True, default_factory=dict)  # stage name -> its settings
    family: Mapping[str, Any] = table_field(derived=True, default_factory=dict)  # family stages -> their settings
    stages: tuple[str, ...] = table_field(DEFAULT_DETECTORS, derived=True)  # model-based stages that run
    data_roots: tuple[Path, ...] = table_field(DEFAULT_ROOTS, derived=True)  # where local benchmark data is looked for

    def __post_init__(self):
        check_ranges(self, "audit")
        if self.correction not in CORRECTIONS:
            raise JaxcontamError(f"correction = {self.correction!r} is unknown: use one of {', '.join(CORRECTIONS)}")
        settings = self.audit_settings(DEFAULT_RESAMPLES)  # the detectors' own checks, before any work starts
        provided = set().union(*(stage.provides(settings.settings_of(stage.name)) for stage in settings.stages()))
        for name, stage in self.family_stages():
            if not isinstance(self.family[name], stage.settings_type):
                raise JaxcontamError(
                    f"{name} settings must be a {stage.settings_type.__name__}, got {type(self.family[name]).__name__}"
                )
            stage.check_reads(provided, "audit")
            if stage.check is not None:
                stage.check(self.family[name], [model.name for model in self.models], "audit")

    def settings_of(self, name: str) -> Any:
        """Detector `name`'s settings: its table's, else its settings type's defaults."""
        return stage_settings(name, self.detectors)

    def family_stages(self) -> list[tuple[str, FamilyStage]]:
        """The detectors across the audit's models that run (their table was given), in registry order."""
        unknown = sorted(set(self.family) - set(FAMILY_DETECTORS.names()))
        if unknown:
            raise JaxcontamError(
                f"unknown family detector(s) {', '.join(unknown)}: use some of {', '.join(FAMILY_DETECTORS.names())}"
            )
        return [(name, stage) for name, stage in FAMILY_DETECTORS.items() if name in self.family]

    def audit_settings(self, resamples: int) -> AuditSettings:
        """What every (model, benchmark) of the audit runs: the stages with their settings, and the Monte Carlo
        `resamples` sized to the sweep (the level is applied to their results: `audit.sweep.audit_verdicts`)."""
        return AuditSettings(
            detectors=self.stages,
            detector_settings={name: self.settings_of(name) for name in DETECTORS},
            resamples=resamples,
        )

    def settings(self) -> dict:
        """Everything that changes results (for the summary and for resuming only matching work): the audit's own
        settings, and each registered detector's record of its settings (`DetectorStage.record_settings`); the level
        is summary.json's top-level `alpha`, recorded once."""
        detectors = {}
        for name, stage in DETECTORS.items():
            detectors |= stage.record_settings(self.settings_of(name))
        for name, stage in self.family_stages():
            detectors |= stage.record_settings(self.family[name])
        return (
            {
                "correction": self.correction,
                "chunk_size": self.chunk_size,
                "rephrase_model": self.pacost.rephrase_model,
                "rephrase_dtype": self.pacost.rephrase_dtype,
                "gates": table_of(self.pacost.gates),
                "ngram": table_of(self.ngram),
                "stages": list(self.stages),
                "corpora": list(self.corpus.paths),
                "counts": self.corpus.counts,
            }
            | detectors
            | ({"pacost_reference": self.reference_model} if self.reference_model else {})
        )


def _path(base: Path, value: str) -> str:
    """A path relative to the config file's folder (local, or in a bucket for a config read from one); URLs,
    absolute paths and names that are not paths (hub ids) pass through."""
    if is_url(value) or value.startswith(("/", "~")):
        return value
    candidate = base / value
    return str(candidate) if value.startswith(".") or has_glob(value) or candidate.exists() else value


def _refuse_alpha(name: str, table: dict, where: str) -> None:
    if "alpha" in table:
        raise JaxcontamError(
            f"{where} [{name}] alpha: every verdict's level is the audit's one alpha; set it at the top level "
            "(alpha = 0.01) or with --alpha 0.01"
        )


def detector_settings(stage: DetectorStage, table: dict, where: str) -> Any:
    """A detector's settings from its config table: its own parser (`DetectorStage.parse_table`), else the settings
    type's fields, keys and types checked; the level is the audit's alone, so `alpha` is refused."""
    _refuse_alpha(stage.name, table, where)
    if stage.parse_table is not None:
        return stage.parse_table(table, where)
    values = table_values(table, [stage.settings_type], f"{where} [{stage.name}]")
    try:
        return stage.settings_type(**values)
    except JaxcontamError as error:
        raise JaxcontamError(f"{where} [{stage.name}] {str(error).removeprefix(stage.name + ' ')}") from None


def family_settings(stage: FamilyStage, table: dict, where: str) -> Any:
    """A family stage's settings from its config table: the settings type's fields, keys and types checked; the
    level is the audit's alone, so `alpha` is refused."""
    _refuse_alpha(stage.name, table, where)
    values = table_values(table, [stage.settings_type], f"{where} [{stage.name}]")
    try:
        return stage.settings_type(**values)
    except JaxcontamError as error:
        raise JaxcontamError(f"{where} {error}") from None


def read_toml(path: str | Path) -> dict:
    """An audit TOML file's document (a file that is missing, unreadable or not TOML is refused, naming it)."""
    source = as_path(path)
    try:
        if not source.is_file():
            raise JaxcontamError(f"audit config {source} not found: pass an existing TOML file to --config")
        return tomllib.loads(source.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise JaxcontamError(f"{source}: not valid TOML ({error})") from None
    except storage_errors() as error:  # a bucket that does not exist, a refused permission, no credentials
        raise describe_error(source, error) from None


def load_config(path: str | Path, overrides: Sequence[str] = ()) -> AuditConfig:
    """Read an audit TOML file, with `--set key=value` overrides applied first (`dataclass_config`); unknown
    keys and values of the wrong type are errors (a typo must not silently change an audit)."""
    source = as_path(path)
    return config_from_toml(apply_overrides(read_toml(source), overrides), source.parent, str(source))


def config_from_toml(raw: dict, base: Path, where: str) -> AuditConfig:
    """The audit a loaded TOML document describes; relative paths are read from `base`."""
    return read_config(resolve_config_paths(raw, base), where)


def resolve_config_paths(raw: dict, base: Path) -> dict:
    """The TOML document with its relative paths read from `base` (`_path`): the config's path fields, each
    detector's (`dataclass_config.path_field`, e.g. [likelihood] frequency_table) and [pacost] reference."""
    resolve = functools.partial(_path, base)
    resolved = resolve_paths(AuditConfig, raw, resolve)
    for name, stage in DETECTORS.items():
        if name in resolved:
            resolved[name] = resolve_paths(stage.settings_type, resolved[name], resolve)
    if isinstance(resolved.get("pacost"), dict) and isinstance(resolved["pacost"].get("reference"), str):
        resolved["pacost"] = resolved["pacost"] | {"reference": resolve(resolved["pacost"]["reference"])}
    return resolved


def read_config(raw: dict, where: str) -> AuditConfig:
    """The audit a TOML document (its paths resolved) describes: `read_fields` reads the tables shaped like
    `AuditConfig`; each detector's table is its settings, and a table of a detector that does not run by default
    turns it on ([exchangeability], a plug-in's)."""
    tables = (*DETECTORS.names(), *FAMILY_DETECTORS.names())
    for name in tables:
        if name in raw and not isinstance(raw[name], dict):
            raise JaxcontamError(f"{where}: {name} must be a table, written [{name}]")
        _refuse_alpha(name, raw.get(name, {}), where)
    pacost = raw.get("pacost", {})
    check_keys(pacost, [*table_keys(PacostConfig), *table_keys(PacostSettings), "reference"], f"{where} [pacost]")
    reference, general = pacost.get("reference"), raw.get("reference_model")
    if reference is not None and not isinstance(reference, str):
        raise JaxcontamError(f'{where} [pacost] reference = {reference!r}: name a model, e.g. reference = "base-model"')
    if general is not None and reference is not None and general != reference:
        raise JaxcontamError(
            f"{where}: reference_model = {general!r} and [pacost] reference = {reference!r} name two reference "
            "models; an audit has one: keep reference_model and drop [pacost] reference"
        )
    own = {k: v for k, v in raw.items() if k not in tables} | {
        "pacost": {k: v for k, v in pacost.items() if k in table_keys(PacostConfig)}
    }
    if general is None and reference is not None:
        own["reference_model"] = reference
    detector_tables = {name: raw[name] for name in DETECTORS if name in raw} | {
        "pacost": {k: v for k, v in pacost.items() if k in table_keys(PacostSettings)}
    }
    return AuditConfig(
        **read_fields(AuditConfig, own, where, extra=tables),
        detectors={name: detector_settings(DETECTORS[name], t, where) for name, t in detector_tables.items()},
        family={
            name: family_settings(stage, raw[name], where) for name, stage in FAMILY_DETECTORS.items() if name in raw
        },
        stages=DEFAULT_DETECTORS
        + tuple(name for name in DETECTORS if name in raw and name not in DEFAULT_DETECTORS + CORPUS_STAGES),
    )
