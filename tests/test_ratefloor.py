"""crawler.ratefloor: the transfer-rate floor, on given times (no clock, no sleeping)."""

from __future__ import annotations

import random

import pytest

from crawler.ratefloor import RateFloor


def naive_deadline(
    start: float, feeds: list[tuple[float, int]], rate: float, window: float
) -> float:
    """The definition: the first T >= start + window such that fewer than rate * window bytes
    came in (T - window, T], if nothing more comes after the last feed."""
    need = rate * window
    total = sum(size for _, size in feeds)
    samples = [(start, 0)]
    for t, size in feeds:
        samples.append((t, samples[-1][1] + size))

    def received_before(at: float) -> int:  # bytes that came at or before `at`
        return max((cum for t, cum in samples if t <= at), default=0)

    candidates = sorted({start + window, *(t + window for t, _ in samples)})
    for when in candidates:
        if when >= start + window and total - received_before(when - window) < need:
            return when
    raise AssertionError("unreachable: after the last feed + window nothing came")


def test_a_trickle_from_the_start_is_cut_one_window_after_the_start() -> None:
    floor = RateFloor(100.0, 5.0, now=10.0)
    assert floor.deadline == 15.0
    for t in range(11, 15):
        assert floor.feed(10, float(t)) == 15.0  # 10 B/s: 40 bytes, far from the 500 needed
    assert floor.total == 40


def test_a_fast_start_then_a_trickle_is_cut_one_window_after_the_fast_part() -> None:
    floor = RateFloor(100.0, 5.0, now=0.0)
    assert floor.feed(1000, 0.1) == pytest.approx(5.1)
    for t in (1.0, 2.0, 3.0, 4.0, 5.0):
        assert floor.feed(10, t) == pytest.approx(5.1)


def test_a_steady_transfer_at_the_floor_is_never_cut() -> None:
    floor = RateFloor(100.0, 5.0, now=0.0)
    for k in range(1, 200):
        deadline = floor.feed(100, float(k))
        assert deadline > k  # always ahead of now
    assert len(floor._samples) <= 6  # only the samples of the last rate * window bytes


def test_deadline_matches_the_definition_on_random_transfers() -> None:
    rng = random.Random(14)
    for _ in range(300):
        rate, window = rng.choice([10.0, 100.0, 1000.0]), rng.choice([0.5, 2.0, 5.0])
        start = rng.randint(0, 6400) / 64  # times on a 1/64 s grid: exact float arithmetic
        floor = RateFloor(rate, window, start)
        feeds: list[tuple[float, int]] = []
        t = start
        for _ in range(rng.randint(1, 40)):
            t += rng.randint(1, 64) / 64
            size = rng.choice([1, 10, 100, 1000, 5000])
            feeds.append((t, size))
            deadline = floor.feed(size, t)
            assert deadline == naive_deadline(start, feeds, rate, window)


@pytest.mark.parametrize(("rate", "window"), [(0.0, 1.0), (1.0, 0.0), (-1.0, 1.0)])
def test_bad_arguments(rate: float, window: float) -> None:
    with pytest.raises(ValueError, match="must be > 0"):
        RateFloor(rate, window, 0.0)
