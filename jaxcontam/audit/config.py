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

Each registered detector's table is parsed by the registry (`detect.registry`; `detector_settings`) into
`AuditConfig.detectors`: its keys are the fields of its settings dataclass (defaults there): [pacost]
`PacostSettings` (plus rephrase_model, rephrase_dtype, rephrase_mesh, `gates` (`RephraseGates`) and `reference`, the
older name of the top-level `reference_model`), [likelihood] `LikelihoodSettings`,
[exchangeability] `ExchangeabilitySettings` (the table turns the test on, as a plug-in's table turns it on),
[contam] `ContamSettings`, [blind_baseline] `BlindBaselineSettings` (the table turns it on); beside them [ngram]
`NgramSettings` and `NgramScoring` (plus tokenizer); unknown keys and wrong types are refused. A detector across the
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
import tomllib
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from jaxcontam.data.roots import DEFAULT_ROOTS
from jaxcontam.dataclass_config import (
    apply_overrides,
    check_ranges,
    non_default_values,
    path_fields,
    ranged,
    table_values,
)
from jaxcontam.detect.audit_core import DEFAULT_DETECTORS, AuditSettings
from jaxcontam.detect.family import FamilyStage
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


@dataclasses.dataclass(frozen=True)
class ModelEntry:
    path: str
    name: str
    dtype: str = "float32"


@dataclasses.dataclass(frozen=True)
class BenchmarkEntry:
    name: str
    split: str | None = None
    path: str | None = None
    fields: dict | None = None
    paraphrases: str | None = None
    ground_truth: str | None = None
    limit: int | None = ranged(None, at_least=1)  # the first `limit` items (after `offset`); None: all
    offset: int = ranged(0, at_least=0)  # items skipped before `limit` counts (rephrasings: the whole split)

    def __post_init__(self):
        check_ranges(self, f"benchmark {self.name}")

    @property
    def label(self) -> str:
        """name[:split], then [offset:] when items are skipped: the selection's name in reports and in the keys of
        stored chunks (an offset moves every chunk; a limit only adds or drops chunks at the end)."""
        label = self.name if self.split is None else f"{self.name}:{self.split}"
        return f"{label}[{self.offset}:]" if self.offset else label


@dataclasses.dataclass(frozen=True)
class AuditConfig:
    models: tuple[ModelEntry, ...]
    benchmarks: tuple[BenchmarkEntry, ...]
    corpora: tuple[str, ...] = ()
    corpus_text_field: str = "text"
    corpus_follow_symlinks: bool = False  # read the files a corpus folder's links lead to outside it
    counts: str | None = None  # a folder of precomputed counts (written by `jaxcontam ngram` or an earlier audit)
    out: str = DEFAULT_OUT
    alpha: float = level_field()  # the one level of every verdict
    correction: SweepCorrection = "holm"
    chunk_size: int = ranged(64, at_least=1)  # items per resumable chunk; a multiple of the 16-row batches
    detectors: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # stage name -> its settings (its table)
    family: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # family stages that run -> their settings
    rephrase_model: str | None = None
    pacost_reference: str | None = None  # the audit's reference model, believed clean: every detector reads it
    rephrase_dtype: str = "float32"
    rephrase_mesh: MeshSettings | None = None  # None: the audited models' `mesh`
    mesh: MeshSettings = MeshSettings()  # where the audited models' weights go (default: every device on "data")
    gates: RephraseGates = RephraseGates()
    ngram: NgramSettings = NgramSettings()
    ngram_scoring: NgramScoring = NgramScoring()
    ngram_tokenizer: str | None = None  # None: the first model's
    stages: tuple[str, ...] = DEFAULT_DETECTORS  # model-based stages: some of the registered detectors
    data_roots: tuple[Path, ...] = DEFAULT_ROOTS  # where local benchmark data is looked for (the command's roots)

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

    @property
    def pacost(self) -> PacostSettings:
        return self.settings_of("pacost")

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

    def ngram_table(self) -> dict:
        """The [ngram] table's settings that differ from the defaults, the tokenizer included when named."""
        tokenizer = {} if self.ngram_tokenizer is None else {"tokenizer": self.ngram_tokenizer}
        return non_default_values(self.ngram) | non_default_values(self.ngram_scoring) | tokenizer

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
                "rephrase_model": self.rephrase_model,
                "rephrase_dtype": self.rephrase_dtype,
                "gates": non_default_values(self.gates),
                "ngram": self.ngram_table(),
                "stages": list(self.stages),
                "corpora": list(self.corpora),
                "counts": self.counts,
            }
            | detectors
            | ({"pacost_reference": self.pacost_reference} if self.pacost_reference else {})
        )


BASE_TABLES = ("model", "benchmark", "corpus", "ngram", "mesh")  # beside each registered detector's own table


@dataclasses.dataclass(frozen=True)
class _PacostExtras:
    """The types of the [pacost] keys beside `PacostSettings`' fields."""

    rephrase_model: str
    rephrase_dtype: str
    rephrase_mesh: Any  # a table, checked by `mesh_settings` (which names the fix)
    gates: Any  # a table, checked by `table_values` against `RephraseGates`
    reference: str


@dataclasses.dataclass(frozen=True)
class _NgramExtras:
    """The type of the [ngram] key beside `NgramSettings`' and `NgramScoring`'s fields."""

    tokenizer: str


_RANGES = {f.name: f.metadata for f in dataclasses.fields(AuditConfig) if "range" in f.metadata}


@dataclasses.dataclass(frozen=True)
class _TopLevelKeys:
    """The types of the file's top-level values (their defaults are `AuditConfig`'s)."""

    out: str
    reference_model: str
    alpha: float = dataclasses.field(metadata=_RANGES["alpha"])
    correction: SweepCorrection
    chunk_size: int = dataclasses.field(metadata=_RANGES["chunk_size"])


@dataclasses.dataclass(frozen=True)
class _CorpusKeys:
    """The types of the [corpus] table's values."""

    paths: tuple[str, ...]
    text_field: str
    follow_symlinks: bool
    counts: str


def _path(base: Path, value: str) -> str:
    """A path relative to the config file's folder (local, or in a bucket for a config read from one); URLs,
    absolute paths and names that are not paths (hub ids) pass through."""
    if is_url(value) or value.startswith(("/", "~")):
        return value
    candidate = base / value
    return str(candidate) if value.startswith(".") or has_glob(value) or candidate.exists() else value


def _resolve(base: Path, value: str | None) -> str | None:
    """`_path` of an optional value."""
    return None if value is None else _path(base, value)


def _with_paths(stage: DetectorStage, table: dict, base: Path) -> dict:
    """A detector's table with the values of its settings' path fields (`dataclass_config.path_field`) read from
    `base`, the config file's folder."""
    paths = path_fields(stage.settings_type)
    return {
        key: _path(base, value) if key in paths and isinstance(value, str) else value for key, value in table.items()
    }


def _table(raw: dict, key: str, classes, where: str, extra=()) -> dict:
    return table_values(raw.get(key, {}), classes, f"{where} [{key}]", extra)


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


def _entries(raw: dict, key: str, entry_class, where: str) -> list[dict]:
    """The [[key]] array of tables, each checked for unknown keys, types and a required name/path."""
    entries = raw.get(key, [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise JaxcontamError(f"{where}: {key} must be written as [[{key}]] tables")
    required = "path" if key == "model" else "name"
    checked = []
    for number, entry in enumerate(entries, start=1):
        checked.append(table_values(entry, [entry_class], f"{where} [[{key}]] #{number}"))
        if required not in entry:
            raise JaxcontamError(f"{where} [[{key}]] #{number}: missing {required!r}")
    return checked


def mesh_settings(table, where: str) -> MeshSettings:
    """A `[mesh]`-style table {data, model, fsdp} (inline or not); data left out: the devices model leaves."""
    if not isinstance(table, dict):
        raise JaxcontamError(
            f"{where}: expected a table of data, model, fsdp, got {table!r}; write e.g. "
            "{data = 2, model = 4} (or a [mesh] table)"
        )
    unknown = sorted(set(table) - {"data", "model", "fsdp"})
    if unknown:
        raise JaxcontamError(f"{where}: unknown key(s) {', '.join(unknown)}; known: data, fsdp, model")
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


def _dtype(value, where: str) -> str:
    if value not in DTYPES:
        raise JaxcontamError(f"{where}: dtype {value!r} is not supported; use one of {', '.join(DTYPES)}")
    return value


def _model_name(path: str) -> str:
    return (path.rstrip("/").rsplit("/", 1)[-1] if is_url(path) else Path(path).name) or path


def load_config(path: str | Path, overrides: Sequence[str] = ()) -> AuditConfig:
    """Read an audit TOML file, with `--set key=value` overrides applied first (`dataclass_config`); unknown
    keys and values of the wrong type are errors (a typo must not silently change an audit)."""
    source = as_path(path)
    try:
        if not source.is_file():
            raise JaxcontamError(f"audit config {source} not found: pass an existing TOML file to --config")
        raw = tomllib.loads(source.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise JaxcontamError(f"{source}: not valid TOML ({error})") from None
    except storage_errors() as error:  # a bucket that does not exist, a refused permission, no credentials
        raise describe_error(source, error) from None
    return config_from_toml(apply_overrides(raw, overrides), source.parent, str(source))


def config_from_toml(raw: dict, base: Path, where: str) -> AuditConfig:
    """The audit a loaded TOML document describes; relative paths are read from `base`."""
    tables = BASE_TABLES + DETECTORS.names() + FAMILY_DETECTORS.names()
    table_values({k: v for k, v in raw.items() if k not in tables}, [_TopLevelKeys], where)
    models = tuple(
        ModelEntry(
            path=_path(base, m["path"]),
            name=m.get("name", _model_name(m["path"])),
            dtype=_dtype(m.get("dtype", ModelEntry.dtype), f"{where} [[model]] {m['path']}"),
        )
        for m in _entries(raw, "model", ModelEntry, where)
    )
    benchmarks = [
        BenchmarkEntry(**{**b, **{k: _resolve(base, b.get(k)) for k in ("path", "paraphrases", "ground_truth")}})
        for b in _entries(raw, "benchmark", BenchmarkEntry, where)
    ]
    corpus = _table(raw, "corpus", [_CorpusKeys], where)
    for name, table in raw.items():
        if name in DETECTORS and not isinstance(table, dict):
            raise JaxcontamError(f"{where}: {name} must be a table, written [{name}]")
        if name in DETECTORS:
            _refuse_alpha(name, table, where)
    pacost = _table(raw, "pacost", [PacostSettings, _PacostExtras], where)
    rephrase_model = _resolve(base, pacost.pop("rephrase_model", None))
    reference = pacost.pop("reference", None)
    if reference is not None and not isinstance(reference, str):
        raise JaxcontamError(f'{where} [pacost] reference = {reference!r}: name a model, e.g. reference = "base-model"')
    general = raw.get("reference_model")  # the same model under its general name (every detector reads it)
    if general is not None and reference is not None and general != reference:
        raise JaxcontamError(
            f"{where}: reference_model = {general!r} and [pacost] reference = {reference!r} name two reference "
            "models; an audit has one: keep reference_model and drop [pacost] reference"
        )
    reference = general if general is not None else reference
    rephrase_dtype = _dtype(
        pacost.pop("rephrase_dtype", AuditConfig.rephrase_dtype), f"{where} [pacost] rephrase_dtype"
    )
    rephrase_mesh = pacost.pop("rephrase_mesh", None)
    if rephrase_mesh is not None:
        rephrase_mesh = mesh_settings(rephrase_mesh, f"{where} [pacost] rephrase_mesh")
    mesh = mesh_settings(raw.get("mesh", {}), f"{where} [mesh]")
    gates = table_values(pacost.pop("gates", {}), [RephraseGates], f"{where} [pacost] gates")
    ngram = _table(raw, "ngram", [NgramSettings, NgramScoring, _NgramExtras], where)
    counting = {f.name for f in dataclasses.fields(NgramSettings)}
    tables = {name: raw[name] for name in DETECTORS if name in raw and name != "pacost"} | {"pacost": pacost}
    detectors = {
        name: detector_settings(DETECTORS[name], _with_paths(DETECTORS[name], table, base), where)
        for name, table in tables.items()
    }
    for name in FAMILY_DETECTORS.names():
        if name in raw and not isinstance(raw[name], dict):
            raise JaxcontamError(f"{where}: {name} must be a table, written [{name}]")
    family = {
        name: family_settings(FAMILY_DETECTORS[name], raw[name], where)
        for name in FAMILY_DETECTORS.names()
        if name in raw
    }
    # a table of a detector that does not run by default turns it on ([exchangeability], a plug-in's)
    stages = DEFAULT_DETECTORS + tuple(
        name for name in DETECTORS if name in raw and name not in DEFAULT_DETECTORS + CORPUS_STAGES
    )
    return AuditConfig(
        models=models,
        benchmarks=tuple(benchmarks),
        corpora=tuple(_path(base, c) for c in corpus.get("paths", ())),
        corpus_text_field=corpus.get("text_field", AuditConfig.corpus_text_field),
        corpus_follow_symlinks=corpus.get("follow_symlinks", AuditConfig.corpus_follow_symlinks),
        counts=_resolve(base, corpus.get("counts")),
        out=raw.get("out", AuditConfig.out),
        alpha=float(raw.get("alpha", AuditConfig.alpha)),
        correction=raw.get("correction", AuditConfig.correction),
        chunk_size=int(raw.get("chunk_size", AuditConfig.chunk_size)),
        detectors=detectors,
        family=family,
        stages=stages,
        rephrase_model=rephrase_model,
        pacost_reference=_resolve(base, reference),
        rephrase_dtype=rephrase_dtype,
        rephrase_mesh=rephrase_mesh,
        mesh=mesh,
        gates=RephraseGates(**gates),
        ngram=NgramSettings(**{k: v for k, v in ngram.items() if k in counting}),
        ngram_scoring=NgramScoring(**{k: v for k, v in ngram.items() if k not in counting and k != "tokenizer"}),
        ngram_tokenizer=_resolve(base, ngram.get("tokenizer")),
    )


def with_overrides(
    config: AuditConfig | None,
    *,
    models=(),
    benchmarks=(),
    path=None,
    split=None,
    corpora=(),
    out=None,
    alpha: float | None = None,
    mesh: str | None = None,
    fsdp: bool | None = None,
    preset: str | None = None,
    dtype: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
    paraphrases: str | None = None,
    rephrase_model: str | None = None,
    reference_model: str | None = None,
    rephrase_dtype: str | None = None,
    rephrase_mesh: str | None = None,
    pacost: dict | None = None,
    stages: tuple[str, ...] | None = None,
    data_roots: tuple[Path, ...] | None = None,
) -> AuditConfig:
    """The config with the command line's named options taking precedence: models, benchmarks (their --path,
    --split, --paraphrases, --limit, --offset), corpora, output folder, --dtype of every model, mesh (`--mesh
    data=D,model=M`, `--fsdp/--no-fsdp`), the rephrase model, the PaCoST preset and `pacost` fields (settings
    the config's [pacost] table sets explicitly still win over the preset's; fields given here win over both) and
    --alpha, the audit's one level."""
    if config is None and not (models and benchmarks):
        raise JaxcontamError(
            "give both --model and --benchmark (or a --config file); with no arguments at all "
            "`jaxcontam audit` audits the bundled example"
        )
    base = config if config is not None else AuditConfig(models=(), benchmarks=())
    changes: dict[str, Any] = {}
    if models:
        changes["models"] = tuple(ModelEntry(path=m, name=_model_name(m)) for m in models)
    if dtype is not None:
        changes["models"] = tuple(
            dataclasses.replace(m, dtype=_dtype(dtype, "--dtype")) for m in changes.get("models", base.models)
        )
    if benchmarks:
        for name, value in (("--path", path), ("--paraphrases", paraphrases)):
            if value is not None and len(benchmarks) > 1:
                raise JaxcontamError(
                    f"{name} names one benchmark's files; give one --benchmark with it, or drop {name}"
                )
        changes["benchmarks"] = tuple(
            BenchmarkEntry(name=b, split=split, path=path, paraphrases=paraphrases) for b in benchmarks
        )
    elif paraphrases is not None:
        if len(base.benchmarks) != 1:
            raise JaxcontamError(
                "--paraphrases names one benchmark's rephrasings; the config has "
                f"{len(base.benchmarks)} benchmarks: set `paraphrases` in each [[benchmark]]"
            )
        changes["benchmarks"] = (dataclasses.replace(base.benchmarks[0], paraphrases=paraphrases),)
    if limit is not None:
        changes["benchmarks"] = tuple(
            dataclasses.replace(b, limit=limit) for b in changes.get("benchmarks", base.benchmarks)
        )
    if offset is not None:
        changes["benchmarks"] = tuple(
            dataclasses.replace(b, offset=offset) for b in changes.get("benchmarks", base.benchmarks)
        )
    if corpora:
        changes["corpora"] = tuple(corpora)
    if out is not None:
        changes["out"] = out
    if alpha is not None:
        changes["alpha"] = alpha
    if preset is not None or pacost:
        given = {k: v for k, v in (pacost or {}).items() if v is not None}
        pacost_settings = base.pacost.with_fields(**given | ({} if preset is None else {"preset": preset}))
        changes["detectors"] = {**base.detectors, "pacost": pacost_settings}
    if mesh is not None or fsdp is not None:
        layout = MeshSettings.from_option(mesh) if mesh is not None else base.mesh
        changes["mesh"] = dataclasses.replace(layout, fsdp=base.mesh.fsdp if fsdp is None else fsdp)
    if rephrase_model is not None:
        changes["rephrase_model"] = rephrase_model
    if reference_model is not None:
        changes["pacost_reference"] = reference_model
    if rephrase_dtype is not None:
        changes["rephrase_dtype"] = _dtype(rephrase_dtype, "--rephrase-dtype")
    if rephrase_mesh is not None:
        fsdp_of = (changes.get("mesh") or base.mesh).fsdp
        changes["rephrase_mesh"] = MeshSettings.from_option(rephrase_mesh, fsdp_of, "--rephrase-mesh")
    if stages is not None:
        changes["stages"] = stages
    if data_roots is not None:
        changes["data_roots"] = data_roots
    config = dataclasses.replace(base, **changes)
    if not (config.models and config.benchmarks):
        raise JaxcontamError(
            "no model or no benchmark to audit: give --model and --benchmark, or a --config file "
            "with [[model]] and [[benchmark]] tables"
        )
    return config
