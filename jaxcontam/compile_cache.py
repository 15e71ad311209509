"""The command line's on-disk cache of compiled XLA programs: a second run skips the compiles of the first.

On a GPU, compiling is most of a small audit's first run (the bundled audit spent 95 of its 116 s compiling on an
H200, experiments/accelerator/results/). JAX can keep each compiled program on disk, keyed by the program, the
backend, its flags and the JAX version, never by a result; the command line turns that on by default, in `xla/`
of jaxcontam's local cache (`$JAXCONTAM_CACHE`, else `~/.cache/jaxcontam`). `JAXCONTAM_COMPILE_CACHE` names another
folder, or `off`. JAX's own settings (`JAX_COMPILATION_CACHE_DIR` and the others) win where a user has set them.

It works through JAX's environment variables, so it must run before JAX is imported: the command line calls it
first thing. A library user who imports jaxcontam keeps JAX's defaults.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import MutableMapping
from pathlib import Path

from jaxcontam.errors import JaxcontamWarning
from jaxcontam.storage.outputs import cache_root

SETTING = "JAXCONTAM_COMPILE_CACHE"
OFF = ("off", "0", "false", "no", "none")
MAX_BYTES = 1 << 30  # JAX evicts the least recently used programs past this; a size also turns on its file lock
MIN_COMPILE_SECONDS = 0.1  # JAX's default (1 s) would leave out most CPU programs; tinier ones cost more to store


def configure(environ: MutableMapping[str, str] | None = None) -> Path | None:
    """Point JAX's persistent compilation cache at jaxcontam's folder, unless switched off or set by the user;
    returns the folder in use (None when off). `environ`: os.environ unless given (tests)."""
    environ = os.environ if environ is None else environ
    if environ.get("JAX_COMPILATION_CACHE_DIR"):
        return Path(environ["JAX_COMPILATION_CACHE_DIR"])
    value = environ.get(SETTING, "").strip()
    if value.lower() in OFF:
        return None
    folder = Path(value).expanduser() if value else cache_root(environ) / "xla"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        warnings.warn(
            f"compiled programs are not cached: cannot create {folder} ({error.strerror}); "
            f"set {SETTING} to a writable folder, or to 'off'",
            JaxcontamWarning,
            stacklevel=2,
        )
        return None
    environ["JAX_COMPILATION_CACHE_DIR"] = str(folder)
    environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(MAX_BYTES))
    environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", str(MIN_COMPILE_SECONDS))
    return folder
