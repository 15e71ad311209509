"""The audit config shaped like its file (issue 60.4): each named option of `jaxcontam audit` is an alias of a `--set`
key and gives the config that `--set` gives; a config read from TOML, written back as `--set` overrides, reads back
equal; an unknown key in any table, from the file or from `--set`, is refused naming it and the table's known keys."""

import json
import re
import tomllib
from pathlib import Path

import pytest

from helpers import audit_config_of
from jaxcontam.audit.config import (
    EXAMPLE_CONFIG,
    AuditConfig,
    config_from_toml,
    load_config,
)
from jaxcontam.commands.audit_options import ALIASES
from jaxcontam.data.registry import load_benchmark
from jaxcontam.dataclass_config import apply_overrides, table_keys, table_of
from jaxcontam.detect.contam import ContamSettings
from jaxcontam.detect.exchangeability import ExchangeabilitySettings
from jaxcontam.detect.pacost.settings import PacostSettings
from jaxcontam.detect.registry import DETECTORS, FAMILY_DETECTORS
from jaxcontam.detect.rephrase import RephraseGates
from jaxcontam.errors import JaxcontamError

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = ("--config", EXAMPLE_CONFIG)
ONE_BENCHMARK = ("--set", 'benchmark=[{name = "copa"}]')  # the options that set one entry's key need one entry
# each alias: (the named option, the same key given by --set); a path is absolute here because a --set path is read
# from the config file's folder and a named option's from the working directory
ALIAS_FORMS = {
    "models": (("--model", "/models/m1", "--model", "m2"), ("--set", 'model=[{path = "/models/m1"}, {path = "m2"}]')),
    "dtype": (("--dtype", "bfloat16"), ("--set", "model.dtype=bfloat16")),
    "benchmarks": (("--benchmark", "copa", "--benchmark", "b"), ("--set", "benchmark=[{name='copa'},{name='b'}]")),
    "path": ((*ONE_BENCHMARK, "--path", "/data/copa"), (*ONE_BENCHMARK, "--set", "benchmark.path=/data/copa")),
    "split": (("--split", "validation"), ("--set", "benchmark.split=validation")),
    "fields": ((*ONE_BENCHMARK, "--field", "question=prompt", "--field", "answer= label"),
               (*ONE_BENCHMARK, "--set", 'benchmark.fields={question = "prompt", answer = "label"}')),
    "paraphrases": ((*ONE_BENCHMARK, "--paraphrases", "/p"), (*ONE_BENCHMARK, "--set", "benchmark.paraphrases=/p")),
    "limit": (("--limit", "3"), ("--set", "benchmark.limit=3")),
    "offset": (("--offset", "2"), ("--set", "benchmark.offset=2")),
    "corpora": (("--corpus", "/c1", "--corpus", "/c2"), ("--set", 'corpus.paths=["/c1", "/c2"]')),
    "out": (("--out", "elsewhere"), ("--set", "out=elsewhere")),
    "alpha": (("--alpha", "0.01"), ("--set", "alpha=0.01")),
    "mesh": (("--mesh", "data=2,model=4"), ("--set", "mesh={data = 2, model = 4}")),
    "fsdp": (("--fsdp",), ("--set", "mesh.fsdp=true")),
    "preset": (("--preset", "paper"), ("--set", "pacost.preset=paper")),
    "confidence": (("--confidence", "p_true"), ("--set", "pacost.confidence=p_true")),
    "test": (("--test", "t"), ("--set", "pacost.test=t")),
    "chat_template": (("--chat-template", "never"), ("--set", "pacost.chat_template=never")),
    "seed": (("--seed", "3"), ("--set", "pacost.seed=3")),
    "rephrase_model": (("--rephrase-model", "/r"), ("--set", "pacost.rephrase_model=/r")),
    "rephrase_dtype": (("--rephrase-dtype", "bfloat16"), ("--set", "pacost.rephrase_dtype=bfloat16")),
    "rephrase_mesh": (("--rephrase-mesh", "model=2"), ("--set", "pacost.rephrase_mesh={model = 2}")),
    "reference_model": (("--reference-model", "/base"), ("--set", "reference_model=/base")),
}  # fmt: skip


def test_every_alias_has_its_set_form_here():
    assert list(ALIAS_FORMS) == list(ALIASES)


@pytest.mark.parametrize("name", ALIAS_FORMS)
def test_a_named_option_gives_the_config_of_its_set_key(name):
    by_option, by_set = ALIAS_FORMS[name]
    config = audit_config_of(*EXAMPLE, *by_option)
    assert config == audit_config_of(*EXAMPLE, *by_set)
    assert config != audit_config_of(*EXAMPLE, *(ONE_BENCHMARK if by_option[:2] == ONE_BENCHMARK else ()))  # it acts


def test_a_named_option_wins_over_set_and_the_file_and_keeps_what_it_does_not_name(tmp_path):
    config = audit_config_of(*EXAMPLE, "--set", "alpha=0.2", "--alpha", "0.01", "--mesh", "model=2", "--fsdp")
    assert config.alpha == 0.01 and (config.mesh.data, config.mesh.model, config.mesh.fsdp) == (None, 2, True)
    file = tmp_path / "audit.toml"
    file.write_text(
        '[[model]]\npath = "m"\n[[benchmark]]\nname = "copa"\n[mesh]\nfsdp = true\n[pacost]\nreference = "a"\n'
    )
    config = audit_config_of(
        "--config", file, "--mesh", "model=8", "--rephrase-mesh", "model=2", "--reference-model", "b"
    )
    assert config.mesh.fsdp and config.pacost.rephrase_mesh.fsdp and config.reference_model == "b"  # --fsdp applies
    with pytest.raises(JaxcontamError, match="name two reference models"):
        audit_config_of("--config", file, "--set", "reference_model=b")  # the file's two names, not an option


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (str, Path)):
        return json.dumps(str(value))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items() if v is not None) + "}"


def set_form(config: AuditConfig) -> list[str]:
    """The config as `--set` overrides of an empty document: its own tables, then each detector's."""
    document = table_of(config)
    for name, settings in {**config.detectors, **config.family}.items():
        document[name] = document.get(name, {}) | table_of(settings)

    def leaves(table: dict, prefix: str = ""):
        for key, value in table.items():
            if isinstance(value, dict) and value:
                yield from leaves(value, f"{prefix}{key}.")
            elif value is not None:
                yield f"{prefix}{key}={toml_value(value)}"

    return list(leaves(document))


EVERYTHING = """
out = "o"
alpha = 0.01
correction = "bh"
chunk_size = 32
reference_model = "/base"
[[model]]
path = "/m"
dtype = "bfloat16"
[[model]]
path = "/n"
name = "other"
[[benchmark]]
name = "copa"
split = "test"
limit = 5
offset = 1
fields = {question = "q"}
[corpus]
paths = ["/c1", "/c2"]
text_field = "body"
follow_symlinks = true
counts = "/counts"
[ngram]
n = 13
mincount = 2
tokenizer = "/tok"
[mesh]
model = 2
fsdp = true
[pacost]
preset = "paper"
seed = 7
rephrase_model = "/r"
rephrase_dtype = "bfloat16"
rephrase_mesh = {data = 1, model = 2}
gates = {max_ngram_overlap = 0.5}
[exchangeability]
[contam]
min_clean = 5
[constat]
reference_models = ["other"]
"""


def round_trip_sources():
    yield "bundled example", EXAMPLE_CONFIG.read_text(), EXAMPLE_CONFIG.parent
    yield "every table", EVERYTHING, REPO
    for page in ("README.md", "docs/config.md"):
        for number, block in enumerate(re.findall(r"```toml\n(.*?)```", (REPO / page).read_text(), re.S)):
            yield f"{page} #{number}", block, REPO
    for path in sorted(REPO.glob("experiments/real_contamination/results/arms/control*/**/*.toml")):
        yield str(path.relative_to(REPO)), path.read_text(), path.parent


@pytest.mark.parametrize("name, text, base", list(round_trip_sources()), ids=lambda v: v if isinstance(v, str) else "")
def test_toml_to_config_to_set_overrides_reads_back_equal(name, text, base):
    config = config_from_toml(tomllib.loads(text), base, name)
    again = config_from_toml(apply_overrides({}, set_form(config)), base, "--set")
    assert again == config and again.settings() == config.settings()


def test_the_round_trip_covers_every_table_of_the_config():
    config = config_from_toml(tomllib.loads(EVERYTHING), REPO, "every table")
    assert set(table_of(config)) == set(table_keys(AuditConfig))  # each key of AuditConfig's table set
    assert config.stages[-1] == "exchangeability" and set(config.family) == {"constat"}


# each table's keys, as the error must list them
KNOWN = {
    "": {"model", "benchmark", "corpus", "out", "alpha", "correction", "chunk_size", "reference_model", "pacost"}
    | {"mesh", "ngram", *DETECTORS.names(), *FAMILY_DETECTORS.names()},
    "model": {"path", "name", "dtype"},
    "benchmark": {"name", "split", "path", "fields", "paraphrases", "ground_truth", "limit", "offset"},
    "corpus": {"paths", "text_field", "follow_symlinks", "counts"},
    "ngram": {"n", "scope", "normalize", "mincount", "skip_budget", "tokenizer"},
    "mesh": {"data", "model", "fsdp"},
    "pacost": {"rephrase_model", "rephrase_dtype", "rephrase_mesh", "gates", "reference", *table_keys(PacostSettings)},
    "pacost.gates": set(table_keys(RephraseGates)),
    "contam": set(table_keys(ContamSettings)),
    "exchangeability": set(table_keys(ExchangeabilitySettings)),
}


def assert_names_the_key_and_the_known_ones(error: JaxcontamError, table: str) -> None:
    found = re.search(r"unknown key\(s\) bogus; known: (.*)$", str(error))
    assert found, str(error)
    assert set(found[1].split(", ")) == KNOWN[table]


@pytest.mark.parametrize("table", KNOWN)
def test_an_unknown_key_in_a_toml_table_names_it_and_the_known_keys(tmp_path, table):
    head, _, inner = table.partition(".")
    written = {
        "": "bogus = 1\n",
        "model": '[[model]]\npath = "m"\nbogus = 1\n',
        "benchmark": '[[benchmark]]\nname = "copa"\nbogus = 1\n',
    }.get(table, f"[{head}]\n" + (f"{inner} = {{bogus = 1}}\n" if inner else "bogus = 1\n"))
    file = tmp_path / "audit.toml"
    file.write_text(written)
    with pytest.raises(JaxcontamError) as raised:
        load_config(file)
    assert_names_the_key_and_the_known_ones(raised.value, table)


@pytest.mark.parametrize("table", KNOWN)
def test_an_unknown_set_key_names_it_and_the_known_keys(table):
    key = f"{table}.bogus=1" if table else "bogus=1"
    with pytest.raises(JaxcontamError) as raised:
        audit_config_of(*EXAMPLE, "--set", key)
    assert_names_the_key_and_the_known_ones(raised.value, table)


def test_field_reads_a_file_of_other_columns_as_the_adding_a_benchmark_guide_shows(tmp_path):
    file = tmp_path / "my_items.jsonl"
    file.write_text("".join(json.dumps({"prompt": f"What is {n} + 1?", "label": str(n + 1)}) + "\n" for n in range(3)))
    fields = ("--field", "question=prompt", "--field", "answer=label")
    config = audit_config_of("--model", "m", "--benchmark", file, *fields)
    (entry,) = config.benchmarks
    items = load_benchmark(entry.name, split=entry.split, path=entry.path, fields=entry.fields)
    assert [(item.question, item.answer) for item in items] == [(f"What is {n} + 1?", str(n + 1)) for n in range(3)]


@pytest.mark.parametrize(
    ("fields", "message"),
    [(("question",), "give ITEM_FIELD=COLUMN"), (("=prompt",), "give ITEM_FIELD=COLUMN"),
     (("question=a", "question=b"), "given twice"), (("bogus=prompt",), "bogus")],
)  # fmt: skip
def test_a_malformed_field_is_refused_naming_it(fields, message):
    options = [arg for field in fields for arg in ("--field", field)]
    with pytest.raises(JaxcontamError, match=message):
        audit_config_of("--model", "m", "--benchmark", "my_items.jsonl", *options)


def test_an_option_into_entries_the_audit_lacks_sets_nothing_and_the_missing_entries_are_refused(tmp_path):
    file = tmp_path / "audit.toml"
    file.write_text('[[model]]\npath = "m"\n')
    with pytest.raises(JaxcontamError, match="no model or no benchmark to audit"):
        audit_config_of("--config", file, "--limit", "3", "--path", "p", "--split", "test")
