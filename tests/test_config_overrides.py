"""One set of dataclasses behind the audit TOML, `--set` overrides and the named options: types checked, unknown
keys and wrong types refused naming the key and what it takes, and the same options on `audit` and `pacost`."""

import click
import pytest
from click.testing import CliRunner

from helpers import audit_config_of
from jaxcontam.audit.config import EXAMPLE_CONFIG, load_config
from jaxcontam.dataclass_config import apply_overrides, parse_override
from jaxcontam.detect.pacost.settings import PacostSettings
from jaxcontam.errors import JaxcontamError


def test_an_override_value_is_read_as_toml_else_as_text():
    assert parse_override("pacost.k=0.3") == (("pacost", "k"), 0.3)
    assert parse_override("alpha = 1e-2") == (("alpha",), 0.01)
    assert parse_override("pacost.confidence=p_true") == (("pacost", "confidence"), "p_true")
    assert parse_override('ngram.tokenizer="a b"') == (("ngram", "tokenizer"), "a b")
    assert parse_override('corpus.paths=["x", "y"]') == (("corpus", "paths"), ["x", "y"])
    for bad in ("pacost.k", "=1", "pacost..k=1"):
        with pytest.raises(JaxcontamError, match="write KEY=VALUE with a dotted key"):
            parse_override(bad)


def test_overrides_set_tables_and_every_entry_of_an_array_of_tables():
    raw = {"benchmark": [{"name": "a"}, {"name": "b"}], "pacost": {"k": 0.2}}
    changed = apply_overrides(raw, ["benchmark.limit=8", "pacost.k=0.3", "contam.min_clean=5"])
    assert changed == {
        "benchmark": [{"name": "a", "limit": 8}, {"name": "b", "limit": 8}],
        "pacost": {"k": 0.3},
        "contam": {"min_clean": 5},
    }
    assert raw["pacost"] == {"k": 0.2}  # the loaded document is left as it was
    with pytest.raises(JaxcontamError, match=r"pacost\.k is a value \(0\.2\), not a table"):
        apply_overrides(raw, ["pacost.k.x=1"])


def test_the_bundled_config_with_overrides():
    config = load_config(
        EXAMPLE_CONFIG,
        [
            "pacost.k=0.3",
            "likelihood.k=0.1",
            "alpha=0.01",
            "ngram.mincount=2",
            "contam.min_clean=5",
            "benchmark.limit=8",
            "pacost.confidence=p_true",
        ],
    )
    pacost = config.settings_of("pacost")
    assert (pacost.k, config.settings_of("likelihood").k, config.alpha) == (0.3, 0.1, 0.01)
    assert pacost.confidence == "p_true" and pacost.max_new_tokens == 200  # the file's value stays
    assert config.ngram.scoring.mincount == 2 and config.settings_of("contam").min_clean == 5
    assert {b.limit for b in config.benchmarks} == {8}
    assert not hasattr(config.audit_settings(99), "alpha")  # the level is the audit's alone, applied to results


@pytest.mark.parametrize(
    "override, message",
    [
        ("pacost.kk=1", r"\[pacost\]: unknown key\(s\) kk; known: .*confidence.*k, max_new_tokens"),
        ("ngram.n=eight", r"\[ngram\]: n = 'eight' is str, but n takes int; e\.g\. n = 2"),
        ("alpha=yes", r"alpha = 'yes' is str, but alpha takes float; e\.g\. alpha = 0\.3"),
        ("chunk_size=1.5", r"chunk_size = 1\.5 is float, but chunk_size takes int"),
        ("benchmark.limit=true", r"\[\[benchmark\]\] #1: limit = True is bool, but limit takes int \| None"),
        (
            "pacost.confidence=ptrue",
            r"\[pacost\] PaCoST confidence 'ptrue' is unknown: use one of p_true, p_true_raw",  # its registry's names
        ),
        ("pacost.preset=papers", r"preset = 'papers' is not allowed; preset takes one of 'jaxcontam', 'paper'"),
        ("pacost.answers=beam", r"answers = 'beam' is not allowed; answers takes one of 'greedy', 'sampled'"),
        ("pacost.test=z", r"test = 'z' is not allowed; test takes one of 't', 'wilcoxon', 'sign', 'permutation'"),
        ("pacost.chat_template=yes", r"chat_template = 'yes' is not allowed; .* 'auto', 'never', 'always'"),
        ("correction=holmes", r"correction = 'holmes' is not allowed; correction takes one of 'holm', 'bh', 'none'"),
        ("contam.metric=bogus", r"ConTAM metric 'bogus' is unknown: use one of token_match"),
        ("contam.alpha=0.1", r"\[contam\] alpha: every verdict's level is the audit's one alpha; set it at the top"),
        ("pacost.alpha=0.1", r"\[pacost\] alpha: every verdict's level is the audit's one alpha; set it at the top"),
        ("exchangeability.alpha=0.1", r"\[exchangeability\] alpha: every verdict's level is the audit's one alpha"),
        ("alpha=1.5", r"alpha = 1\.5 is out of range; alpha takes a finite number in \(0, 1\)"),
        ("pacost.gates.min_length=1", r"\[pacost\] gates: unknown key\(s\) min_length; known: .*min_length_ratio"),
        ("tokens=1", r"unknown key\(s\) tokens; known: alpha, benchmark, .*chunk_size, .*correction, .*out"),
    ],
)
def test_a_wrong_override_names_the_key_and_what_it_takes(override, message):
    with pytest.raises(JaxcontamError, match=message):
        load_config(EXAMPLE_CONFIG, [override])


def test_named_options_win_over_the_file_and_reach_every_entry():
    config = audit_config_of(
        *("--config", EXAMPLE_CONFIG, "--set", "pacost.seed=3", "--dtype", "bfloat16", "--limit", 4),
        *("--seed", 5, "--test", "t", "--preset", "paper"),
    )
    assert {m.dtype for m in config.models} == {"bfloat16"} and {b.limit for b in config.benchmarks} == {4}
    # the file's explicit confidence survives the preset; the named options' fields win over both
    assert config.settings_of("pacost") == PacostSettings(
        preset="paper", confidence="answer_logprob", max_new_tokens=200, seed=5, test="t"
    )
    with pytest.raises(JaxcontamError, match=r"--paraphrases sets one \[\[benchmark\]\]'s paraphrases; the audit has"):
        audit_config_of("--config", EXAMPLE_CONFIG, "--paraphrases", "p.jsonl")
    with pytest.raises(JaxcontamError, match="dtype 'float16' is not supported"):
        audit_config_of("--config", EXAMPLE_CONFIG, "--set", "model.dtype=float16")


def options_of(command: click.Command) -> set[str]:
    return {name for param in command.params for name in param.opts if name.startswith("--")}


def test_audit_and_pacost_take_the_same_options_and_set_reaches_the_config(tmp_path, monkeypatch):
    import jaxcontam.audit.run
    from jaxcontam.commands.audit import audit
    from jaxcontam.commands.pacost import pacost
    from jaxcontam.report.summary_schema import AuditSummary

    assert options_of(audit) == options_of(pacost)
    assert {
        "--config",
        "--set",
        "--model",
        "--dtype",
        "--mesh",
        "--fsdp",
        "--out",
        "--seed",
        "--limit",
        "--preset",
    } <= options_of(audit)
    seen = []
    monkeypatch.setattr(
        jaxcontam.audit.run,
        "run_audit",
        lambda config, **_: seen.append(config) or AuditSummary.from_dict({"runs": []}),
    )
    for command in (audit, pacost):
        result = CliRunner().invoke(command, ["--set", "pacost.k=0.3", "--dtype", "bfloat16", "--out", tmp_path])
        assert result.exit_code == 0, result.output
    assert [c.settings_of("pacost").k for c in seen] == [0.3, 0.3] and seen[1].stages == ("pacost",)
    assert {m.dtype for c in seen for m in c.models} == {"bfloat16"}
    result = CliRunner().invoke(audit, ["--set", "pacost.k=high", "--out", tmp_path])
    assert result.exit_code == 1 and "k = 'high' is str, but k takes float" in str(result.exception)
    result = CliRunner().invoke(audit, ["--set", "alpha=0.01", "--model", "m", "--out", tmp_path])
    assert "no model or no benchmark to audit" in str(result.exception)


def epg_items(path):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from jaxcontam.ngram.audit import METRICS

    rng = np.random.default_rng(0)
    scores = rng.uniform(0, 1, 40)
    columns = {m: scores for m in METRICS} | {"benchmark": ["b"] * 40, "correct": (scores > 0.5).astype(float)}
    pq.write_table(pa.table(columns), path)
    return path


def test_every_other_command_reads_its_options_from_a_config_file_and_set(tmp_path):
    import json

    from jaxcontam.cli import cli

    items = epg_items(tmp_path / "items.parquet")
    config = tmp_path / "epg.toml"
    config.write_text(f'items = "{items}"\nmetric = "ngram_match"\nresamples = 19\nmin_clean = 5\n')
    runner = CliRunner()
    result = runner.invoke(cli, ["epg", "--config", config, "--set", "resamples=9", "--out", tmp_path / "a"])
    assert result.exit_code == 0, result.output
    contam = json.loads((tmp_path / "a" / "summary.json").read_text())["runs"][0]["contam"]
    assert (contam["metric"], contam["n_resamples"]) == ("ngram_match", 9)  # --set over the file
    result = runner.invoke(cli, ["epg", "--metric", "token_match", "--config", config, "--out", tmp_path / "b"])
    contam = json.loads((tmp_path / "b" / "summary.json").read_text())["runs"][0]["contam"]
    assert (contam["metric"], contam["n_resamples"]) == ("token_match", 19)  # the named option over the file
    result = runner.invoke(cli, ["epg", "--config", config, "--set", "min_clean=zero", "--out", tmp_path / "c"])
    assert result.exit_code == 2 and "Invalid value for '--min-clean'" in result.output
    result = runner.invoke(cli, ["epg", "--config", config, "--set", "z=2", "--out", tmp_path / "c"])
    assert "unknown setting(s) z in --config/--set; known: alpha, items, metric" in str(result.exception)
    for name in ("score", "generate", "epg", "ngram", "contaminate", "lm-eval", "plan", "audit", "pacost"):
        assert {"--config", "--set"} <= options_of(cli.get_command(click.Context(cli), name)), name


def test_required_options_can_come_from_the_config_file_and_limit_cuts_the_texts(tmp_path):
    import json

    from jaxcontam.cli import cli

    texts = tmp_path / "texts.txt"
    texts.write_text("The cat sat on the mat.\nA dog ran in the park.\nIt rained all day long.\n")
    config = tmp_path / "score.toml"
    config.write_text(f'model = "{EXAMPLE_CONFIG.parent / "model"}"\ndata = "{texts}"\nlimit = 2\n')
    result = CliRunner().invoke(cli, ["score", "--config", config, "--set", "k=1.0", "--out", tmp_path / "s.jsonl"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    # k = 1 (from --set): Min-K% is the mean over every token
    assert len(rows) == 2 and all(abs(r["min_k"] - r["mean_logprob"]) < 1e-9 for r in rows)
