"""A detector is a plug-in: the worked example of docs/adding_a_detector.md, taken from the page and run as it is,
registers a toy detector that `jaxcontam audit` then runs from its TOML table and shows in summary.json, on the
console and in report.html, with no other file of jaxcontam edited; installed as a package of its own (a dist-info
folder with a `jaxcontam.detectors` entry point), the `jaxcontam audit` command finds it with no import of it."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers import small_toml
from jaxcontam.cli import cli
from jaxcontam.commands.verdicts import gate_exit_code
from jaxcontam.detect.registry import BUILT_IN, DETECTORS
from jaxcontam.report.summary_schema import read_summary

DOC = Path(__file__).resolve().parents[1] / "docs" / "adding_a_detector.md"


def example_code() -> str:
    """The page's plug-in example: the python block between its markers."""
    block = re.search(
        r"<!-- plugin-example -->\s*```python\n(.*?)```\s*<!-- /plugin-example -->", DOC.read_text(), re.S
    )
    assert block, "docs/adding_a_detector.md lost its marked plug-in example"
    return block.group(1)


@pytest.fixture
def word_order():
    """The example's module, run once; the detector unregistered afterwards (the built-ins stay)."""
    namespace: dict = {"__name__": "word_order_example"}
    exec(compile(example_code(), str(DOC), "exec"), namespace)  # noqa: S102 - the repository's own documentation
    yield namespace["WORD_ORDER_STAGE"]
    DETECTORS.unregister("word_order")
    assert DETECTORS.names() == BUILT_IN


def test_the_documented_plugin_runs_in_an_audit_and_shows_itself(word_order, tmp_path):
    config = small_toml(tmp_path, limit=8, chunk_size=8, exchangeability=False, extra="\n[word_order]\nseed = 1\n")
    result = CliRunner().invoke(cli, ["audit", "--config", config, "--fail-on", "contaminated"])
    summary = read_summary(tmp_path / "out")
    assert result.exit_code == gate_exit_code(summary, "contaminated"), result.output
    assert summary.settings["stages"] == ["pacost", "likelihood", "word_order"]
    assert summary.settings["word_order"] == {"seed": 1}
    for run in summary.runs:
        outcome = run.results["word_order"]
        assert outcome.n_items <= 8 and 0 <= outcome.n_preferred <= outcome.n_items
        verdict = next(v for v in run.verdicts if v.detector == "word_order")
        assert verdict.test.startswith("word order") and verdict.pvalue == outcome.pvalue
        assert verdict.contaminated is None if verdict.reason else verdict.contaminated == (outcome.pvalue < 0.05)
    lines = [line for line in result.output.splitlines() if " items)  acc " in line]
    assert len(lines) == 2 and all("word order p=" in line for line in lines)
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert page.count("<h3>Word order (toy)</h3>") == 2 and "in their own word order (sign test p = " in page
    assert "word order: own vs shuffled question, sign test" in page  # its headline in the verdict table


def test_a_taken_name_is_refused_and_a_built_in_stays(word_order):
    from jaxcontam.errors import JaxcontamError

    with pytest.raises(JaxcontamError, match="'word_order' is already registered"):
        DETECTORS.register(word_order)
    with pytest.raises(JaxcontamError, match="'pacost' is a built-in detector"):
        DETECTORS.unregister("pacost")


def installed_plugin(site: Path) -> None:
    """The page's example as an installed package in `site`: its module and a dist-info folder whose entry point
    (group `jaxcontam.detectors`) names the registered stage, as `pip install` of a package declaring
    `[project.entry-points."jaxcontam.detectors"] word_order = "word_order_plugin:WORD_ORDER_STAGE"` leaves it."""
    (site / "word_order_plugin.py").write_text(example_code())
    info = site / "word_order_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: word-order-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[jaxcontam.detectors]\nword_order = word_order_plugin:WORD_ORDER_STAGE\n")


def test_the_installed_command_loads_a_detector_installed_as_a_package(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    installed_plugin(site)
    config = small_toml(tmp_path, limit=8, chunk_size=8, exchangeability=False, extra="\n[word_order]\nseed = 1\n")
    paths = [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "JAX_PLATFORMS": "cpu"}
    done = subprocess.run(
        [sys.executable, "-m", "jaxcontam.cli", "audit", "--config", config],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["settings"]["stages"] == ["pacost", "likelihood", "word_order"]
    assert summary["settings"]["word_order"] == {"seed": 1}
    verdicts = [v for run in summary["runs"] for v in run["verdicts"] if v["detector"] == "word_order"]
    assert len(verdicts) == 2 and all(v["test"] == "word order: own vs shuffled question, sign test" for v in verdicts)
    assert all(0 <= run["word_order"]["n_preferred"] <= run["word_order"]["n_items"] <= 8 for run in summary["runs"])
    lines = [line for line in done.stdout.splitlines() if " items)  acc " in line]
    assert len(lines) == 2 and all("word order p=" in line for line in lines)
    assert "word_order" not in DETECTORS.names()  # this process never imported it
