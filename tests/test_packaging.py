"""The wheel holds every module: `pip install .` (not the checkout) is what users and CI's CLI smoke run import."""

import pathlib
import tomllib

REPO = pathlib.Path(__file__).resolve().parents[1]


def test_every_folder_of_modules_is_a_listed_package():
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    folders = {
        ".".join(folder.relative_to(REPO).parts)
        for folder in (REPO / "jaxcontam").rglob("*")
        if folder.is_dir() and "__pycache__" not in folder.parts and any(folder.glob("*.py"))
    }
    folders.add("jaxcontam")
    assert folders - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
    assert "package-dir" not in setuptools  # every package inside jaxcontam/: no top-level folder shadows another
