"""The command examples of docs/commands.md, run as written from a checkout with ../shared beside it, each give a
result."""

import re
import shlex
import warnings
from pathlib import Path

import pytest

from jaxcontam import cli

REPO_ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    """The lines of the first bash block of docs/commands.md."""
    block = re.search(r"```bash\n(.*?)```", (REPO_ROOT / "docs" / "commands.md").read_text(), re.S)
    assert block, "docs/commands.md has no bash block of examples"
    return [line for line in block.group(1).splitlines() if line.strip()]


def result_path(args: list[str]) -> str | None:
    """Where a command writes its result: its --out, or convert-llama2c's OUT_DIR; None for console output."""
    if "--out" in args:
        return args[args.index("--out") + 1]
    if args[0] == "convert-llama2c":
        return args[-1]
    return None


@pytest.fixture(scope="module")
def checkout(shared_data, tmp_path_factory):
    """A fresh working folder laid out like a checkout: the package, experiments and ../shared."""
    root = tmp_path_factory.mktemp("readme")
    (root / "checkout").mkdir()
    for name in ("jaxcontam", "experiments"):
        (root / "checkout" / name).symlink_to(REPO_ROOT / name)
    (root / "shared").mkdir()
    (root / "shared" / "data").symlink_to(shared_data)
    return root / "checkout"


def test_the_readme_lists_every_command():
    commands = {shlex.split(line)[1] for line in readme_commands()}
    assert commands == set(cli.COMMANDS) - {"audit"}  # audit is the quick start, run by test_audit.py


@pytest.mark.parametrize("line", readme_commands(), ids=lambda line: " ".join(line.split()[1:3]))
def test_readme_command_gives_a_result(line, checkout, monkeypatch, capsys):
    program, *args = shlex.split(line)
    assert program == "jaxcontam"
    monkeypatch.chdir(checkout)
    monkeypatch.delenv("JAXCONTAM_DATA", raising=False)  # the data must be found as a user's run finds it
    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)  # main() installs its own
    try:
        cli.main(args)
    except SystemExit as exit:
        assert exit.code in (0, None), capsys.readouterr().err
    out = result_path(args)
    if out is None:
        assert capsys.readouterr().out.strip(), f"{line!r} printed nothing"
        return
    path = checkout / out
    assert path.exists(), f"{line!r} wrote nothing to {out}"
    written = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    assert written and all(p.stat().st_size > 0 for p in written), f"{line!r} left empty output in {out}"
