"""Stage timing: the one stopwatch every stage and model call uses."""

from __future__ import annotations

import time

__all__ = ["Stopwatch"]


class Stopwatch:
    """Wall-clock seconds since construction (or the last :meth:`restart`), monotonic.

    ``Stopwatch().elapsed_s`` replaces the ``started = time.perf_counter()`` /
    ``time.perf_counter() - started`` pair; :meth:`lap` reads and restarts in one call, for
    consecutive stages.
    """

    __slots__ = ("_start",)

    def __init__(self) -> None:
        self._start = time.perf_counter()

    @property
    def elapsed_s(self) -> float:
        """Seconds since the start (float, >= 0)."""
        return time.perf_counter() - self._start

    def restart(self) -> None:
        """Start counting again from now."""
        self._start = time.perf_counter()

    def lap(self) -> float:
        """Seconds since the start, then restart."""
        now = time.perf_counter()
        elapsed, self._start = now - self._start, now
        return elapsed
