"""Count XLA compilations over a block of code.

A scoring run over thousands of texts must compile one program per bucket
shape, not one per batch; `count_compilations` makes that checkable in tests
and visible in benchmarks.
"""

from __future__ import annotations

import collections
import contextlib

from jax import monitoring

_BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


@contextlib.contextmanager
def count_compilations():
    """Yield a Counter of function name -> number of backend compilations inside the block."""
    counts: collections.Counter[str] = collections.Counter()

    def listener(event, duration_secs, **kwargs):
        if event == _BACKEND_COMPILE_EVENT:
            counts[kwargs.get("fun_name", "?")] += 1

    monitoring.register_event_duration_secs_listener(listener)
    try:
        yield counts
    finally:
        monitoring.unregister_event_duration_listener(listener)
