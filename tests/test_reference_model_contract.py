"""The reference model in the detector contract: `jaxcontam audit --reference-model M` loads M once and gives it to
every detector (`StageInput.reference`): calibrated PaCoST, the reference log-likelihood ratio and a plug-in that
reads it through the public contract; without one, the detectors that need it state "not tested: no reference
model" (null in summary.json, never false). The TOML file's top-level `reference_model` and the older
`[pacost] reference` name the same model."""

import dataclasses
import json
import math

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from helpers import TINY_MODEL, bundled_target, perturbed_copy, small_toml
from jaxcontam.cli import cli
from jaxcontam.detect.registry import BUILT_IN, DETECTORS
from jaxcontam.detect.stage import NO_REFERENCE_MODEL, DetectorStage, DetectorView, PerItemWork
from jaxcontam.detect.status import TestOutcome
from jaxcontam.detect.verdict import Verdict
from jaxcontam.engine import score_logprobs
from jaxcontam.errors import JaxcontamError


@dataclasses.dataclass(frozen=True)
class ProbeSettings:
    """[reference_probe]: no keys; the table turns it on."""


@dataclasses.dataclass(frozen=True)
class ProbeResult:
    reference: str | None
    items: int

    def to_dict(self) -> dict:
        return {"reference": self.reference, "items": self.items}

    @classmethod
    def from_dict(cls, entry: dict) -> "ProbeResult":
        return cls(entry["reference"], entry["items"])


def probe_records(stage_input, settings, items) -> list[dict]:
    """The reference model's mean log-prob of each solved text, as a plug-in computes it from `StageInput`."""
    reference, benchmark = stage_input.reference, stage_input.target.benchmark
    if reference is None:
        return [{"id": item.id, "probe_reference_logprob": math.nan} for item in items]
    ids = [reference.model.tokenizer.encode(benchmark.solved_text(item)) for item in items]
    return [
        {"id": item.id, "probe_reference_logprob": float(np.mean(s.logprobs))}
        for item, s in zip(items, score_logprobs(reference.model, ids))
    ]


def probe_headline(result: ProbeResult, alpha: float) -> Verdict:
    if result.reference is None:
        return Verdict("reference_probe", "probe", None, math.nan, reason=NO_REFERENCE_MODEL)
    return Verdict("reference_probe", f"probe against {result.reference}", False, 1.0)


PROBE = DetectorStage(
    name="reference_probe",
    settings_type=ProbeSettings,
    result_type=ProbeResult,
    per_item=PerItemWork(
        probe_records,
        resume_key=lambda stage_input, settings: {"reference": getattr(stage_input.reference, "name", None)},
        writes=lambda settings: ("probe_reference_logprob",),
    ),
    result=lambda stage_input, settings, rows: ProbeResult(getattr(stage_input.reference, "name", None), len(rows)),
    summary_entry=ProbeResult.to_dict,
    read_entry=ProbeResult.from_dict,
    headline=probe_headline,
    view=DetectorView(console=lambda result: f"probe reference={result.reference}"),
)


@pytest.fixture
def probe():
    stage = DETECTORS.register(PROBE)
    yield stage
    DETECTORS.unregister("reference_probe")
    assert DETECTORS.names() == BUILT_IN


@pytest.fixture(scope="module")
def reference_folder(tmp_path_factory):
    return perturbed_copy(tmp_path_factory.mktemp("reference") / "model", scale=0.2)


def audit(tmp_path, extra: str, *args) -> tuple[dict, str, str]:
    config = small_toml(tmp_path, limit=6, chunk_size=8, exchangeability=False, extra=extra)
    result = CliRunner().invoke(cli, ["audit", "--config", config, *args])
    assert result.exit_code == 0, result.output
    out = tmp_path / "out"
    return json.loads((out / "summary.json").read_text()), result.output, (out / "report.html").read_text()


def test_an_audit_gives_its_reference_model_to_every_detector(probe, reference_folder, tmp_path, monkeypatch):
    import jaxcontam

    loads = []
    real = jaxcontam.load_model
    monkeypatch.setattr(jaxcontam, "load_model", lambda path, **kw: loads.append(str(path)) or real(path, **kw))
    tables = "\n[reference_log_ratio]\n\n[recall]\nshots = 2\n\n[codec]\nshots = 2\n\n[reference_probe]\n"
    summary, console, page = audit(tmp_path, tables, "--reference-model", str(reference_folder))
    assert loads.count(str(reference_folder)) == 1  # loaded once for both benchmarks
    assert summary["settings"]["pacost_reference"] == str(reference_folder)
    assert summary["settings"]["stages"][-4:] == ["reference_log_ratio", "recall", "codec", "reference_probe"]
    items = pq.read_table(tmp_path / "out" / "items.parquet").to_pylist()
    for run in summary["runs"]:
        verdicts = {v["detector"]: v for v in run["verdicts"]}
        assert "calibrated against" in verdicts["pacost"]["test"] and run["pacost"]["calibrated"] is not None
        ratio = run["reference_log_ratio"]
        assert ratio["reference"] == str(reference_folder) and ratio["status"] == "tested" and ratio["n"] == 6
        assert verdicts["reference_log_ratio"]["contaminated"] == (ratio["pvalue"] < summary["alpha"])
        assert run["reference_probe"] == {"reference": str(reference_folder), "items": 6}
        assert run["recall"]["prefix_texts"] >= 1 and run["codec"]["n"] == 6
        assert run["codec"]["calibrated"]["reference"] == str(reference_folder)  # the headline, with a reference
        assert verdicts["codec"]["test"].startswith(f"CoDeC calibrated against {reference_folder}")
        rows = [row for row in items if row["benchmark"] == run["benchmark"]]
        # the plug-in scored the very model the built-in detector did, through the same contract
        for row in rows:
            assert row["probe_reference_logprob"] == pytest.approx(row["reference_log_ratio_reference_original"])
            assert math.isfinite(row["recall"]) and math.isfinite(row["codec_delta"])
            assert math.isfinite(row["codec_reference_delta"]) and row["codec_reference_delta"] != row["codec_delta"]
    lines = [line for line in console.splitlines() if " items)  acc " in line]
    assert len(lines) == 2
    assert all(f"probe reference={reference_folder}" in line and "reference log-ratio p=" in line for line in lines)
    assert all("ReCaLL mean=" in line and "CoDeC score=" in line for line in lines)
    for title in ("Reference-model log-likelihood ratio", "ReCaLL", "CoDeC (in-context confidence change)"):
        assert page.count(f"<h3>{title}</h3>") == 2


def test_without_a_reference_model_the_detectors_that_need_one_are_not_tested(probe, tmp_path):
    summary, console, page = audit(tmp_path, "\n[reference_log_ratio]\n\n[reference_probe]\n")
    assert "pacost_reference" not in summary["settings"]
    for run in summary["runs"]:
        verdicts = {v["detector"]: v for v in run["verdicts"]}
        for name in ("reference_log_ratio", "reference_probe"):
            assert verdicts[name]["contaminated"] is None and verdicts[name]["reason"] == NO_REFERENCE_MODEL
            assert verdicts[name]["outcome"] == "not tested"
        assert run["reference_log_ratio"]["status"] == TestOutcome.no_test(NO_REFERENCE_MODEL).label
        assert run["pacost"].get("calibrated") is None
    lines = [line for line in console.splitlines() if " items)  acc " in line]
    assert all("reference log-ratio no test: no reference model" in line for line in lines)
    assert "no test: no reference model" in page


def test_the_top_level_reference_model_and_the_pacost_key_name_the_same_model(tmp_path):
    from jaxcontam.audit.config import load_config

    def config_with(top: str, pacost: str):
        path = small_toml(tmp_path, limit=2, exchangeability=False)
        text = open(path).read().replace("[pacost]\n", f"[pacost]\n{pacost}")
        (tmp_path / "audit.toml").write_text(top + text)
        return load_config(tmp_path / "audit.toml")

    (tmp_path / "base").mkdir()
    assert config_with('reference_model = "base"\n', "").reference_model == str(tmp_path / "base")
    assert config_with("", 'reference = "base"\n').reference_model == str(tmp_path / "base")
    assert config_with('reference_model = "base"\n', 'reference = "base"\n').reference_model == str(tmp_path / "base")
    with pytest.raises(JaxcontamError, match="name two reference models; an audit has one"):
        config_with('reference_model = "base"\n', 'reference = "other"\n')


def test_the_training_callback_gives_its_reference_model_to_every_detector(reference_folder):
    import jaxcontam
    from jaxcontam.detect.audit_callback import AuditCallback, AuditSettings, ReferenceModel

    model, base = jaxcontam.load_model(str(TINY_MODEL)), jaxcontam.load_model(str(reference_folder))
    _, target = bundled_target("gsm8k", limit=4)
    settings = AuditSettings(detectors=("reference_log_ratio",))
    callback = AuditCallback(
        lambda params: model, [target], settings, log=lambda line: None, reference=ReferenceModel("base", base)
    )
    result = callback(0, model.params)["gsm8k"].results["reference_log_ratio"]  # type: ignore[index]
    assert result.reference == "base" and result.status.ran and result.n == 4
    alone = AuditCallback(lambda params: model, [target], settings, log=lambda line: None)
    assert alone(0, model.params)["gsm8k"].results["reference_log_ratio"].status.reason == NO_REFERENCE_MODEL  # type: ignore[index]
