"""crawler.fetch.watch: the transfer-rate floor and the watch of a fetch, on given times."""

from __future__ import annotations

import asyncio
import contextlib
import random

import pytest

from crawler.fetch.watch import FetchWatch, Pacer, RateFloor


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


# -- FetchWatch: the checks a Pacer makes, at given times ------------------------------------


class Stream:
    """Stands in for aiohttp's StreamReader: only its byte count is read."""

    def __init__(self) -> None:
        self.total_bytes = 0


async def _blocked() -> None:
    await asyncio.Event().wait()


async def _watched() -> tuple[asyncio.Task[None], FetchWatch]:
    task = asyncio.create_task(_blocked())
    await asyncio.sleep(0)
    return task, FetchWatch(task)


async def _cancelled(task: asyncio.Task[None]) -> bool:
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait_for(asyncio.shield(task), 1.0)
    return task.cancelled()


async def test_headers_overdue_one_window_after_the_request_was_sent() -> None:
    task, watch = await _watched()
    watch.check(1000.0, 2.0)  # not sent yet (connecting: connect_timeout's business)
    watch.sent_at = 10.0
    watch.check(11.9, 2.0)
    assert not task.cancelling()
    watch.check(12.0, 2.0)
    assert task.cancelling() == 1
    assert await _cancelled(task)
    assert watch.expired() and not watch.expired()  # once


async def test_body_under_the_floor_is_cut_at_the_floors_deadline() -> None:
    task, watch = await _watched()
    stream = Stream()
    watch.sent_at = 0.0
    watch.body(stream, 100.0, 2.0, now=1.0)  # type: ignore[arg-type]
    for t in range(2, 30):  # 1000 bytes a second: well over the floor
        stream.total_bytes += 1000
        watch.check(float(t), 2.0)
    assert not task.cancelling()
    stream.total_bytes += 10  # then 10 bytes at 30.0, and nothing after
    watch.check(30.0, 2.0)
    watch.check(30.9, 2.0)
    assert not task.cancelling()
    watch.check(31.0, 2.0)  # (29, 31]: 10 bytes, under the 200 needed
    assert task.cancelling() == 1
    assert await _cancelled(task) and watch.expired()


async def test_a_cancellation_from_elsewhere_is_not_too_slow() -> None:
    task, watch = await _watched()
    watch.sent_at = 0.0
    task.cancel()  # the crawl is aborted
    watch.check(5.0, 1.0)
    assert await _cancelled(task)
    assert not watch.expired()


def test_an_unwatched_fetch_is_never_cut() -> None:
    watch = FetchWatch()
    watch.sent_at = 0.0
    watch.check(1e9, 1.0)  # no task: nothing to cancel, no error
    assert not watch.expired()


@pytest.mark.parametrize(("rate", "window"), [(-1.0, 1.0), (1.0, 0.0)])
def test_pacer_bad_arguments(rate: float, window: float) -> None:
    with pytest.raises(ValueError, match="min_rate"):
        Pacer(rate, window)
