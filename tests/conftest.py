"""Shared fixtures: the real public data beside the checkout (../shared/data)."""

import os
import pathlib

import pytest

# the two test workers (and their subprocesses) may each load libtpu to compile for TPU topologies
os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED_DATA = pathlib.Path(os.environ.get("JAXCONTAM_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> pathlib.Path:
    """The folder of real benchmarks, corpora and models; tests need it, so its absence is an error."""
    if not SHARED_DATA.is_dir():
        raise FileNotFoundError(
            f"{SHARED_DATA} not found: clone jaxcontam beside the shared/ folder or set JAXCONTAM_SHARED_DATA"
        )
    return SHARED_DATA
