"""A transfer-rate floor, like curl's ``--speed-limit``/``--speed-time``.

A transfer is *too slow* when, over any stretch of ``window`` seconds since it started, fewer than
``rate * window`` bytes came. :class:`RateFloor` is pure arithmetic on the times it is given (the
fetcher passes its event loop's clock), so it is tested without sleeping. It keeps only the
samples still needed: those of the last ``rate * window`` bytes, so at most that many.
"""

from __future__ import annotations

from collections import deque

__all__ = ["RateFloor"]


class RateFloor:
    """The floor of one transfer started at ``now``; ``feed()`` each chunk as it arrives."""

    __slots__ = ("_need", "_samples", "_total", "rate", "window")

    def __init__(self, rate: float, window: float, now: float) -> None:
        if not (rate > 0 and window > 0):
            raise ValueError(f"rate and window must be > 0, got {rate!r} and {window!r}")
        self.rate = rate
        self.window = window
        self._need = rate * window
        self._total = 0
        # (time, bytes received up to then); the start counts as a sample of 0 bytes.
        self._samples: deque[tuple[float, int]] = deque([(now, 0)])

    @property
    def total(self) -> int:
        """Bytes fed so far."""
        return self._total

    @property
    def deadline(self) -> float:
        """When the transfer is too slow if nothing more comes: ``window`` after the earliest
        sample such that fewer than ``rate * window`` bytes came after it."""
        return self._samples[0][0] + self.window

    def feed(self, size: int, now: float) -> float:
        """Count `size` bytes received at `now`; returns the new deadline."""
        self._total += size
        samples = self._samples
        samples.append((now, self._total))
        enough = self._total - self._need  # a sample at or below this is no longer needed
        while samples[0][1] <= enough:
            samples.popleft()
        return samples[0][0] + self.window

    def __repr__(self) -> str:
        return (
            f"<RateFloor {self.rate:g} B/s over {self.window:g} s total={self._total} "
            f"deadline={self.deadline:.3f}>"
        )
