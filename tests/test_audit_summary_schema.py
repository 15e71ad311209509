"""summary.json's schema version: the reader takes what `jaxcontam audit` writes and refuses what it cannot read."""

import json

import pytest

from jaxcontam.detect.benchmark_results import Accuracy
from jaxcontam.errors import JaxcontamError
from jaxcontam.report.summary_schema import SCHEMA_VERSION, AuditSummary, read_summary

RUN = {
    "model": "m",
    "benchmark": "copa",
    "split": "test",
    "n_items": 4,
    "accuracy": {"acc": 0.5, "acc_norm": 0.5},
    "pacost": None,
    "likelihood": None,
    "exchangeability": None,
    "contam": None,
    "ground_truth": None,
}


def test_reads_a_versioned_summary_from_its_file_or_folder(tmp_path):
    summary = {
        "schema_version": SCHEMA_VERSION,
        "jaxcontam_version": "9",
        "alpha": 0.01,
        "correction": "bh",
        "settings": {"k": 0.2},
        "runs": [RUN],
        "sweep": None,
    }
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    for source in (tmp_path, tmp_path / "summary.json"):
        read = read_summary(source)
        assert (read.schema_version, read.alpha, read.correction, read.settings) == (
            SCHEMA_VERSION,
            0.01,
            "bh",
            {"k": 0.2},
        )
        assert read.runs[0].label == "m | copa" and read.runs[0].accuracy == Accuracy(0.5, 0.5)


def test_a_summary_from_before_the_version_reads_as_version_1():
    assert AuditSummary.from_dict({"runs": [RUN]}).schema_version == 1


@pytest.mark.parametrize("version", [SCHEMA_VERSION + 1, "1", True, None])
def test_an_unknown_version_is_refused_naming_it(version):
    with pytest.raises(
        JaxcontamError, match=rf"schema_version {version!r} is not one this jaxcontam reads \(1, 2, 3\)"
    ):
        AuditSummary.from_dict({"schema_version": version, "jaxcontam_version": "9.9", "runs": []})


def test_broken_files_and_entries_are_refused(tmp_path):
    with pytest.raises(JaxcontamError, match="not found"):
        read_summary(tmp_path)
    (tmp_path / "summary.json").write_text("{runs: ")
    with pytest.raises(JaxcontamError, match="not valid JSON"):
        read_summary(tmp_path)
    with pytest.raises(JaxcontamError, match=r"runs\[0\]: a run entry needs 'model' and 'benchmark'"):
        AuditSummary.from_dict({"runs": [{"model": "m"}]})


@pytest.mark.parametrize(
    ("summary", "where"),
    [
        ({"runs": [RUN | {"pacost": {"pvalue": 0.1}}]}, r"runs\[0\] pacost"),
        ({"runs": [RUN | {"accuracy": {"acc": "high", "acc_norm": None}}]}, r"runs\[0\] accuracy"),
        ({"runs": [RUN | {"likelihood": {"min_k": {"mean": 1.0}}}]}, r"runs\[0\] likelihood"),
        ({"runs": [], "sweep": {"labels": []}}, "sweep"),
    ],
)
def test_a_result_entry_it_cannot_read_is_refused_naming_it(summary, where):
    with pytest.raises(JaxcontamError, match=rf"summary.json {where}: not an entry this jaxcontam writes \(.+\)"):
        AuditSummary.from_dict(summary)
