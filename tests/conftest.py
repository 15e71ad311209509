"""Shared fixtures: the real public data beside the checkout (../shared/data), the command line with model
loading replaced by a marker (for refusals that must come before any model work), and the `shared_data` tier.

Every test that uses the `shared_data` fixture (directly or through another fixture) is marked `shared_data`
here; tests that read the folder without it carry the mark themselves. `pytest -m "not shared_data"` runs the
self-contained tier, which needs no ../shared/data. The `slow` tests stay out of every run whose -m expression
does not name `slow` (pyproject's addopts: -m 'not slow'; a -m given on the command line replaces that one), so
`-m "not shared_data"` and `-m "not slow and not shared_data"` select the same tests. Helpers the tests share
are in helpers.py.
"""

import os
import pathlib
import re
import tempfile
import warnings

import pytest

# the two test workers (and their subprocesses) may each load libtpu to compile for TPU topologies
os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
# JAX's persistent compilation cache, shared by the workers and every command a test runs: most tests compile the
# same tiny models' programs again, in processes of their own. A size limit turns on JAX's file lock, so concurrent
# processes read and write it safely; the key holds the program, the backend and the JAX version, never a result.
os.environ.setdefault(
    "JAX_COMPILATION_CACHE_DIR", os.path.join(tempfile.gettempdir(), f"jaxcontam-tests-xla-{os.getuid()}")
)
os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(2 << 30))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")

from helpers import MODEL_LOAD_REACHED  # noqa: E402  (after the environment above)

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED_DATA = pathlib.Path(os.environ.get("JAXCONTAM_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marks
def pytest_collection_modifyitems(config, items):
    """Mark `shared_data` every test whose fixtures include the `shared_data` fixture; leave out the `slow` tests
    unless the -m expression names them."""
    for item in items:
        if "shared_data" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.shared_data)
    if not re.search(r"\bslow\b", config.getoption("markexpr") or ""):
        slow = [item for item in items if item.get_closest_marker("slow") is not None]
        if slow:
            config.hook.pytest_deselected(items=slow)
            items[:] = [item for item in items if item.get_closest_marker("slow") is None]


@pytest.fixture(scope="session")
def shared_data() -> pathlib.Path:
    """The folder of real benchmarks, corpora and models; tests need it, so its absence is an error."""
    if not SHARED_DATA.is_dir():
        raise FileNotFoundError(
            f"{SHARED_DATA} not found: clone jaxcontam beside the shared/ folder or set JAXCONTAM_SHARED_DATA "
            '(or run the self-contained tier: pytest -m "not shared_data")'
        )
    return SHARED_DATA


@pytest.fixture(scope="session")
def stories_dir(shared_data, tmp_path_factory) -> pathlib.Path:
    """llama2.c's stories260K (shared data) converted to a Hugging Face folder, once per session."""
    from jaxcontam.models.llama2c import convert_llama2c

    folder = shared_data / "tiny_lm_stories260K"
    return convert_llama2c(folder / "stories260K.bin", folder / "tok512.bin", tmp_path_factory.mktemp("stories"))


@pytest.fixture
def jaxcontam_cli(shared_data, monkeypatch, capsys):
    """Runs the command line in-process with model loading replaced by a marker error: (exit code, stderr).

    A refusal must come before the marker (`MODEL_LOAD_REACHED`): no model is loaded, nothing is computed.
    """
    import jaxcontam
    import jaxcontam.models.loading as loading
    from jaxcontam import cli
    from jaxcontam.errors import JaxcontamError

    def reached(*args, **kwargs):
        raise JaxcontamError(MODEL_LOAD_REACHED)

    monkeypatch.setenv("JAXCONTAM_DATA", str(shared_data))
    monkeypatch.setattr(jaxcontam, "load_model", reached)
    monkeypatch.setattr(loading, "load_model", reached)
    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)  # main() installs its own

    def run(*args) -> tuple[int, str]:
        capsys.readouterr()
        try:
            cli.main([str(a) for a in args])
            code = 0
        except SystemExit as exit:
            code = exit.code
        return code, capsys.readouterr().err

    return run
