"""The command line's cache of compiled programs (jaxcontam/compile_cache.py): where it goes, how it is switched
off, that a user's own JAX setting wins, and that a second run of a command reads what the first wrote."""

import json
import os
import subprocess
import sys

import pytest

from jaxcontam import compile_cache
from jaxcontam.audit.config import EXAMPLE_CONFIG
from jaxcontam.errors import JaxcontamWarning

JAX_SETTINGS = (
    "JAX_COMPILATION_CACHE_DIR",
    "JAX_COMPILATION_CACHE_MAX_SIZE",
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS",
)


def test_the_default_folder_is_in_jaxcontams_cache_and_sets_jax(tmp_path):
    environ = {"JAXCONTAM_CACHE": str(tmp_path / "jaxcontam")}
    folder = compile_cache.configure(environ)
    assert folder == tmp_path / "jaxcontam" / "xla" and folder.is_dir()
    assert environ["JAX_COMPILATION_CACHE_DIR"] == str(folder)
    assert environ["JAX_COMPILATION_CACHE_MAX_SIZE"] == str(compile_cache.MAX_BYTES)
    assert float(environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"]) == compile_cache.MIN_COMPILE_SECONDS


@pytest.mark.parametrize("value", ["off", "OFF", "0", "false", "none"])
def test_off_leaves_jax_alone(tmp_path, value):
    environ = {"JAXCONTAM_CACHE": str(tmp_path / "jaxcontam"), compile_cache.SETTING: value}
    assert compile_cache.configure(environ) is None
    assert not any(name in environ for name in JAX_SETTINGS)
    assert not (tmp_path / "jaxcontam").exists()


def test_a_named_folder_and_the_users_own_jax_settings_win(tmp_path):
    environ = {compile_cache.SETTING: str(tmp_path / "mine"), "JAX_COMPILATION_CACHE_MAX_SIZE": "123"}
    assert compile_cache.configure(environ) == tmp_path / "mine"
    assert environ["JAX_COMPILATION_CACHE_MAX_SIZE"] == "123"
    theirs = {"JAX_COMPILATION_CACHE_DIR": str(tmp_path / "theirs"), compile_cache.SETTING: str(tmp_path / "mine2")}
    assert compile_cache.configure(theirs) == tmp_path / "theirs"
    assert theirs["JAX_COMPILATION_CACHE_DIR"] == str(tmp_path / "theirs") and not (tmp_path / "mine2").exists()


def test_an_unwritable_folder_warns_and_runs_without_the_cache(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    environ = {compile_cache.SETTING: str(blocker / "xla")}
    with pytest.warns(JaxcontamWarning, match=f"not cached.*{compile_cache.SETTING}"):
        assert compile_cache.configure(environ) is None
    assert "JAX_COMPILATION_CACHE_DIR" not in environ


def _score(tmp_path, out_name: str, cache) -> list[dict]:
    """`jaxcontam score` on the bundled model in a child process, as a user runs it, with `cache` as the setting."""
    environment = {k: v for k, v in os.environ.items() if k not in JAX_SETTINGS}  # conftest's own cache off
    # every program stored, however fast it compiled on a loaded machine (a user's JAX setting wins over ours)
    environment |= {compile_cache.SETTING: str(cache), "JAX_PLATFORMS": "cpu", JAX_SETTINGS[2]: "0"}
    out = tmp_path / out_name
    model = EXAMPLE_CONFIG.parent / "model"
    args = ["score", "--model", str(model), "--data", str(tmp_path / "texts.txt"), "--out", str(out)]
    subprocess.run([sys.executable, "-m", "jaxcontam.cli", *args], env=environment, check=True, capture_output=True)
    return [json.loads(line) for line in out.read_text().splitlines()]


def read_mark(stored) -> bytes:
    """The last-read time JAX keeps beside a stored program (its LRU eviction's clock)."""
    return stored.with_name(stored.name.replace("-cache", "-atime")).read_bytes()


def test_a_second_run_reads_the_programs_the_first_wrote(tmp_path):
    (tmp_path / "texts.txt").write_text("The cat sat on the mat.\nTwo plus two is four.\n")
    cache = tmp_path / "xla"
    first = _score(tmp_path, "first.jsonl", cache)
    stored = sorted(cache.glob("*-cache"))
    assert stored, "the first run stored no compiled program"
    read_marks = {path: read_mark(path) for path in stored}
    second = _score(tmp_path, "second.jsonl", cache)
    assert second == first
    assert sorted(cache.glob("*-cache")) == stored, "the second run compiled a program the first had stored"
    reread = [path for path, mark in read_marks.items() if read_mark(path) != mark]
    assert reread, "the second run read no stored program"
