"""Data roots: the folders searched, in order, for local copies of benchmarks and paraphrase sources.

Every reader that looks for local data takes them as a parameter (`load_benchmark(..., roots=)`,
`load_paraphrases`, the lm-eval tasks' local copies); `DEFAULT_ROOTS` is `../shared/data` from the working
directory. Nothing in the library reads the environment: the `jaxcontam` commands put `$JAXCONTAM_DATA` first
and `../shared/data` beside the checkout last (`commands.data_options.data_roots_from_environment`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

DEFAULT_ROOTS: tuple[Path, ...] = (Path("..") / "shared" / "data",)


def first_holding(roots: Sequence[Path], relative: str, files_only: bool = False) -> Path | None:
    """`relative` under the first root that holds it (a file when `files_only`), else None."""
    for root in roots:
        candidate = Path(root) / relative
        if candidate.is_file() if files_only else candidate.exists():
            return candidate
    return None


def named(roots: Sequence[Path]) -> str:
    """The roots for an error message."""
    return ", ".join(map(str, roots)) or "no data root"
