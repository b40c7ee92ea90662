"""Simulated time for asyncio: an event loop whose clock jumps straight to the next timer.

When nothing is runnable, :class:`SimulatedLoop` does not sleep: its clock advances to the next
scheduled timer. So a whole crawl (frontier, workers, ``asyncio.sleep`` as simulated fetch time)
runs deterministically, and as fast as the CPU allows, in simulated time:
``asyncio.Runner(loop_factory=SimulatedLoop)``. Tests and benchmarks use it; no real I/O should be
awaited on it.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Callable

__all__ = ["SimulatedLoop"]


class _SimulatedSelector(selectors.SelectSelector):
    """Never blocks: when the loop would sleep, the simulated clock jumps ahead instead."""

    def __init__(self, advance: Callable[[float], None]) -> None:
        super().__init__()
        self._advance = advance

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        events = super().select(0)
        if events or timeout == 0:
            return events
        if timeout is None:
            raise RuntimeError("SimulatedLoop: nothing runnable and no timer scheduled (deadlock)")
        self._advance(timeout)
        return events


class SimulatedLoop(asyncio.SelectorEventLoop):
    """An event loop in simulated time: ``time()`` starts at ``start`` and jumps to the next timer
    whenever no callback is runnable. For tests and benchmarks; no real I/O should be awaited."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)
        super().__init__(_SimulatedSelector(self._advance))

    def _advance(self, seconds: float) -> None:
        self._now += seconds

    def time(self) -> float:
        return self._now

    def __repr__(self) -> str:
        return f"SimulatedLoop(time={self._now!r}, closed={self.is_closed()})"
