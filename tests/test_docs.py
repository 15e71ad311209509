"""The docs cannot drift: their generated tables equal a fresh generation from the committed result files and the
code, and every relative link in README.md, CHANGELOG.md and docs/*.md points at a file or folder that exists."""

import importlib.util
import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
PAGES = [REPO_ROOT / "README.md", REPO_ROOT / "CHANGELOG.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


@pytest.fixture(scope="module")
def generate():
    spec = importlib.util.spec_from_file_location("docs_generate", REPO_ROOT / "docs" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_regenerating_the_docs_tables_changes_nothing(generate):
    stale = generate.stale_files(write=False)
    assert not stale, f"run `python docs/generate.py`: stale tables in {', '.join(p.name for p in stale)}"


def test_every_generated_block_has_a_generator_and_every_generator_is_used(generate):
    used = {name for page in PAGES for name in re.findall(r"<!-- generated:([\w-]+) -->", page.read_text())}
    assert used == set(generate.TABLES)
    with pytest.raises(SystemExit, match="no generator"):
        generate.render("<!-- generated:nope -->\nold\n<!-- /generated:nope -->", {})


def test_a_paper_preset_audit_gets_its_table_once_its_summary_exists(generate, tmp_path, monkeypatch):
    """The lead adds experiments/real_model/results/audit-paper later: its table then renders like audit/'s."""
    results = REPO_ROOT / "experiments" / "real_model" / "results"
    (tmp_path / "real_model" / "results").mkdir(parents=True)
    for script in ("report.py", "run.py"):
        (tmp_path / "real_model" / script).symlink_to(REPO_ROOT / "experiments" / "real_model" / script)
    (tmp_path / "real_model" / "results" / "audit-paper").symlink_to(results / "audit")
    monkeypatch.setattr(generate, "EXPERIMENTS", tmp_path)
    report = generate.experiment_module("real_model/report.py")
    monkeypatch.setattr(report, "RESAMPLES", 10)  # the intervals are not tested here
    table = generate.TABLES["real-model-audit-paper"]()
    assert table.startswith("| benchmark | items (pairs) |") and len(table.splitlines()) == 2 + 3
    monkeypatch.setattr(generate, "EXPERIMENTS", tmp_path / "elsewhere")
    assert generate.TABLES["real-model-audit-paper"]().startswith("No results yet: ")


def test_every_relative_link_resolves():
    broken = []
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # code is not links
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            if not (page.parent / target.split("#")[0]).exists():
                broken.append(f"{page.relative_to(REPO_ROOT)}: {target}")
    assert not broken, "links to missing files: " + "; ".join(broken)


@pytest.mark.parametrize("page", ["README.md", "docs/config.md"])
def test_the_documented_audit_configs_are_read_as_written(page, tmp_path):
    """Every TOML example is a config `jaxcontam audit --config` accepts (an unknown key would be an error)."""
    from jaxcontam.audit.config import load_config

    blocks = re.findall(r"```toml\n(.*?)```", (REPO_ROOT / page).read_text(), re.S)
    assert blocks, f"{page} has no TOML example"
    for number, block in enumerate(blocks):
        (tmp_path / f"{number}.toml").write_text(block)
        config = load_config(tmp_path / f"{number}.toml")
        assert config.models and config.benchmarks and config.corpus.paths
