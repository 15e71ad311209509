"""Wall time per stage of a run, so an audit can say where its time went (printed at its end, in summary.json).

Code marks what it is doing with `with stage("answer"):`; nothing is recorded unless a `StageClock` runs
(`with StageClock() as clock: ...; clock.seconds`). Stages nest and each keeps only its own time: the "score" of a
question's Min-K%++ inside PaCoST's answering is not also "answer". Time jax spends lowering and compiling
XLA programs (its compile events) moves from whichever stage was running to "compile", so a stage's figure is the
work itself and "compile" shows what a warm process would not pay again. Time outside every stage is "other".
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

STAGES = ("load", "compile", "rephrase", "answer", "judge", "score", "ngram", "epg", "verdicts", "report", "other")
_COMPILE_EVENTS = (  # lowering and XLA compiling; tracing is left in its stage (nested traces would count twice)
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)
_running: list[StageClock] = []  # the clock that records, innermost last
_listening = False


def _on_event(event: str, duration_secs: float, **_: str | int) -> None:
    if event in _COMPILE_EVENTS and _running:
        _running[-1].move_to_compile(duration_secs)


class StageClock:
    """Seconds per stage (`STAGES`) between entering and leaving the `with` block, and the block's wall time."""

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(STAGES, 0.0)
        self.total = 0.0
        self._open: list[list] = []  # [name, started, seconds of the stages nested in it]
        self._started = 0.0

    def __enter__(self) -> StageClock:
        global _listening
        if not _listening:  # jax has no way to remove a listener: one, forwarding to the running clock
            import jax

            jax.monitoring.register_event_duration_secs_listener(_on_event)
            _listening = True
        self._started = time.perf_counter()
        self._open = [["other", self._started, 0.0]]
        _running.append(self)
        return self

    def __exit__(self, *exc) -> None:
        self._close()
        self.total = time.perf_counter() - self._started
        _running.remove(self)

    def open(self, name: str) -> None:
        if name not in self.seconds:
            raise ValueError(f"unknown stage {name!r}: use one of {', '.join(STAGES)}")
        self._open.append([name, time.perf_counter(), 0.0])

    def _close(self) -> None:
        name, started, nested = self._open.pop()
        spent = time.perf_counter() - started
        self.seconds[name] += spent - nested
        if self._open:
            self._open[-1][2] += spent

    def close(self) -> None:
        self._close()

    def move_to_compile(self, seconds: float) -> None:
        """`seconds` of compiling, spent inside the innermost open stage, count as "compile" instead."""
        self.seconds[self._open[-1][0]] -= seconds
        self.seconds["compile"] += seconds

    def to_dict(self) -> dict[str, float]:
        """Seconds per stage and the wall time so far (the stages still open count up to now)."""
        now = time.perf_counter()
        seconds = dict(self.seconds)
        for name, started, nested in self._open:
            seconds[name] += now - started - nested
        wall = self.total if not _running or _running[-1] is not self else now - self._started
        return {name: round(value, 3) for name, value in seconds.items()} | {"wall": round(wall, 3)}


def format_table(timings: dict[str, float]) -> str:
    """`StageClock.to_dict`'s seconds as a table: each stage that took time, its share of the wall time."""
    wall = timings.get("wall", 0.0)
    lines = [f"{'stage':<10} {'seconds':>8} {'share':>6}"]
    for name, seconds in timings.items():
        if name != "wall" and seconds >= 0.05:
            lines.append(f"{name:<10} {seconds:8.1f} {seconds / max(wall, 1e-9):6.0%}")
    return "\n".join(lines + [f"{'wall':<10} {wall:8.1f}"])


@contextlib.contextmanager
def stage(name: str) -> Iterator[None]:
    """Count the block's time as `name` on the running clock (no clock: nothing is recorded)."""
    clock = _running[-1] if _running else None
    if clock is None:
        yield
        return
    clock.open(name)
    try:
        yield
    finally:
        clock.close()
