"""Best-first frontier: priority order within a host, best host among ready ones, retries, and
politeness unchanged under scoring. Simulated time (SimulatedLoop): no real sleeps."""

from __future__ import annotations

import asyncio
import dataclasses
import random

import pytest

from crawler.frontier import Entry, EntryKind, Frontier, Outcome
from crawler.frontier.entries import Packer
from crawler.frontier.hosts import Host
from crawler.frontier.queues import HostQueue
from crawler.frontier.schedule import Schedule
from crawler.frontier.settings import Politeness
from tests.support.frontier_sim import crawl, min_gap, simulate, starts_by_host
from tests.support.priority import drain, page

# -- order within a host ------------------------------------------------------------------------


def test_priority_order_within_a_host_ties_first_in_first_out() -> None:
    rng = random.Random(7)
    levels = [-1.0, 0.0, 0.5, 2.0, 3.25]
    entries = [page(f"http://a.test/{i}", rng.choice(levels)) for i in range(400)]
    expected = [e for _, e in sorted(enumerate(entries), key=lambda t: (-t[1].priority, t[0]))]

    async def main() -> tuple[list[Entry], list[Entry]]:
        frontier = Frontier(Politeness(respect_robots=False))
        for entry in entries:
            assert frontier.put(entry)
        return list(frontier.pending()), await drain(frontier)

    pending, got = simulate(main)
    assert got == expected
    assert pending == expected  # pending(): hand-out order, priorities kept
    assert {e.priority for e in got} == set(levels)


def test_order_holds_while_urls_arrive_during_the_crawl() -> None:
    # each fetched page links to two new URLs of random priority on the same host (some ties)
    rng = random.Random(11)
    frontier = Frontier(Politeness(delay=1.0, respect_robots=False))
    events: list[tuple[str, Entry]] = []
    counter = iter(range(1, 10_000))

    def put(entry: Entry) -> None:
        events.append(("put", entry))
        assert frontier.put(entry)

    def respond(entry: Entry, start: float) -> tuple[Outcome | None, bool]:
        events.append(("got", entry))
        if entry.depth < 6:
            for _ in range(2):
                priority = rng.choice([0.1, 0.5, 0.9]) * rng.random() // 0.05
                put(page(f"http://a.test/{next(counter)}", priority, entry.depth + 1))
        return Outcome(status=200), False

    put(page("http://a.test/0", 0.5))
    log = simulate(lambda: crawl(frontier, workers=1, fetch=0.5, respond=respond))
    assert len(log) == 2**7 - 1
    # one worker: each hand-out must be the best URL queued at that moment, first in on ties
    queued: list[Entry] = []
    for kind, entry in events:
        if kind == "put":
            queued.append(entry)
            continue
        best = max(queued, key=lambda e: e.priority)
        assert entry == best == next(e for e in queued if e.priority == best.priority)
        queued.remove(entry)
    assert not queued


def test_equal_priorities_everywhere_give_the_breadth_first_order_of_old() -> None:
    def run(priority: float) -> list[tuple[float, str]]:
        frontier = Frontier(Politeness(delay=1.0, respect_robots=False))
        for i in range(4):
            for h in range(5):
                frontier.put(page(f"http://h{h}.test/p{i}", priority))
        log = simulate(lambda: crawl(frontier, workers=2, fetch=0.3))
        return [(s, e.url) for s, _, e in log]

    unscored = run(0.0)
    assert run(2.5) == unscored  # scored mode, one priority: the same schedule
    assert [u for _, u in unscored[:5]] == [f"http://h{h}.test/p0" for h in range(5)]


# -- which ready host goes first ----------------------------------------------------------------


def test_among_ready_hosts_the_best_priority_goes_first() -> None:
    async def main() -> list[str]:
        frontier = Frontier(Politeness(respect_robots=False))
        for host, best in (("h0", 1.0), ("h1", 5.0), ("h2", 3.0)):
            frontier.put(page(f"http://{host}.test/low", 0.0))
            frontier.put(page(f"http://{host}.test/best", best))
        return [e.url for e in await drain(frontier)]

    got = simulate(main)
    assert got[:3] == ["http://h1.test/best", "http://h2.test/best", "http://h0.test/best"]
    assert sorted(got[3:]) == [f"http://h{h}.test/low" for h in range(3)]


def test_a_better_url_for_a_host_already_waiting_as_ready_is_seen() -> None:
    async def main() -> list[str]:
        frontier = Frontier(Politeness(respect_robots=False))
        frontier.put(page("http://a.test/1", 1.0))
        frontier.put(page("http://b.test/5", 5.0))
        frontier.put(page("http://c.test/2", 2.0))
        first = await frontier.get()  # b; a and c now wait in the ready heap
        assert first is not None
        frontier.put(page("http://a.test/10", 10.0))  # a's best rises while it waits
        frontier.done(first)
        return [first.url] + [e.url for e in await drain(frontier)]

    assert simulate(main) == [
        "http://b.test/5", "http://a.test/10", "http://c.test/2", "http://a.test/1",
    ]  # fmt: skip


def test_a_higher_priority_never_makes_a_waiting_host_go_early() -> None:
    frontier = Frontier(Politeness(delay=10.0, respect_robots=False))
    frontier.put(page("http://slow.test/a", 1.0))
    for i in range(5):
        frontier.put(page(f"http://fast.test/{i}", 0.0))

    def respond(entry: Entry, start: float) -> tuple[Outcome | None, bool]:
        if entry.url == "http://slow.test/a":
            frontier.put(page("http://slow.test/urgent", 100.0))
        return Outcome(status=200), False

    log = simulate(lambda: crawl(frontier, workers=1, fetch=0.1, respond=respond))
    starts = starts_by_host(log)
    assert starts["http://slow.test:80"] == [0.0, 10.0]  # urgent, but only when the delay allows
    assert starts["http://fast.test:80"] == pytest.approx([0.1, 10.1, 20.1, 30.1, 40.1])


def test_falling_best_priority_is_filed_again() -> None:
    # a host whose best URLs go (a robots.txt sweep) while it waits as ready loses its rank
    schedule = Schedule()
    schedule.scored = True
    packer = Packer()
    hosts = {}
    for name, priorities in (("a", (9.0, 1.0)), ("b", (5.0,)), ("c", (7.0,))):
        host = hosts[name] = Host(f"http://{name}.test:80", HostQueue(), 0.0)
        for p in priorities:
            host.queue.push(*packer.pack(page(f"http://{name}.test/{p}", p), host.prefix), p)
        schedule.file(host)
    first = schedule.take(0.0)
    assert first is hosts["a"]  # a (9) goes; b and c wait in the ready heap
    first.queue.pop()
    schedule.file(first)  # back, with 1.0 left: files itself on the timeline
    hosts["c"].queue.remove_disallowed(lambda url: False, "http://c.test")
    hosts["c"].queue.push(*packer.pack(page("http://c.test/x", 0.5), "http://c.test"), 0.5)
    order = [schedule.take(0.0) for _ in range(3)]
    assert order == [hosts["b"], hosts["a"], hosts["c"]]  # c fell from 7 to 0.5
    assert schedule.take(0.0) is None


# -- retries --------------------------------------------------------------------------------


def test_retry_goes_before_equal_and_lower_priorities_after_higher_ones() -> None:
    async def main() -> list[tuple[str, int]]:
        frontier = Frontier(Politeness(respect_robots=False))
        for name, priority in (("a", 3.0), ("b", 3.0), ("c", 1.0)):
            frontier.put(page(f"http://h.test/{name}", priority))
        a = await frontier.get()
        assert a is not None and a.url == "http://h.test/a"
        frontier.put(page("http://h.test/d", 4.0))  # better work queued meanwhile
        frontier.put(page("http://h.test/e", 3.0))
        frontier.done(a, Outcome(status=503), retry=True)
        pending = [(e.url.rsplit("/", 1)[1], e.retries) for e in frontier.pending()]
        got = [(e.url.rsplit("/", 1)[1], e.retries) for e in await drain(frontier)]
        assert got == pending
        return got

    assert simulate(main) == [("d", 0), ("a", 1), ("b", 0), ("e", 0), ("c", 0)]


def test_retry_in_an_unscored_host_queue_goes_to_the_very_head() -> None:
    async def main() -> list[str]:
        frontier = Frontier(Politeness(respect_robots=False))
        for name in "abc":
            frontier.put(page(f"http://h.test/{name}"))
        first = await frontier.get()
        assert first is not None
        frontier.done(first, retry=True)
        return [e.url[-1] for e in await drain(frontier)]

    assert simulate(main) == ["a", "b", "c"]


def test_nan_priority_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="priority must be a number"):
        Frontier().put(page("http://a.test/", float("nan")))


# -- politeness under scoring -------------------------------------------------------------------


def scored_fill(frontier: Frontier, hosts: int, per_host: int, seed: int) -> None:
    rng = random.Random(seed)
    for i in range(per_host):
        for h in range(hosts):
            assert frontier.put(page(f"http://h{h}.test/p{i}", rng.choice([0.0, 0.3, 0.9, 2.0])))


def test_politeness_unchanged_under_scoring() -> None:
    rng = random.Random(5)
    latency = {
        f"http://h{h}.test/p{i}": rng.uniform(0.01, 3.0) for h in range(30) for i in range(8)
    }
    frontier = Frontier(Politeness(delay=1.0, per_host_concurrency=2, respect_robots=False))
    scored_fill(frontier, hosts=30, per_host=8, seed=1)
    log = simulate(lambda: crawl(frontier, workers=12, fetch=lambda e: latency[e.url]))
    assert len(log) == 240
    for key, starts in starts_by_host(log).items():
        assert min_gap(starts) >= 1.0 - 1e-9, key
        spans = [(s, e) for s, e, entry in log if entry.url.startswith(key[:-3])]
        assert max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans) <= 2, key


def test_scoring_changes_which_url_never_when_a_host_is_hit() -> None:
    # workers enough for every host: each host is hit the moment it may be, scored or not
    def run(scored: bool) -> tuple[dict[str, list[float]], list[str]]:
        frontier = Frontier(Politeness(delay=1.5, respect_robots=False))
        if scored:
            scored_fill(frontier, hosts=6, per_host=5, seed=3)
        else:
            for i in range(5):
                for h in range(6):
                    frontier.put(page(f"http://h{h}.test/p{i}"))
        log = simulate(lambda: crawl(frontier, workers=8, fetch=0.4))
        return starts_by_host(log), [e.url for _, _, e in log if e.url.startswith("http://h0.")]

    plain, plain_order = run(False)
    scored, scored_order = run(True)
    assert scored == plain
    assert scored_order != plain_order  # ...but the URLs differ: best first


def test_backoff_holds_a_host_whatever_its_priority() -> None:
    frontier = Frontier(Politeness(respect_robots=False, max_retry_after=600.0))
    frontier.put(page("http://busy.test/a", 50.0))
    frontier.put(page("http://busy.test/b", 40.0))
    for i in range(5):
        frontier.put(page(f"http://ok.test/{i}", 0.1))

    def respond(entry: Entry, start: float) -> tuple[Outcome | None, bool]:
        if entry.url == "http://busy.test/a" and entry.retries == 0:
            return Outcome(status=429, retry_after="7"), True
        return Outcome(status=200), False

    log = simulate(lambda: crawl(frontier, workers=1, fetch=1.0, respond=respond))
    busy = [(s, e.url[-1], e.retries) for s, _, e in log if e.url.startswith("http://busy.")]
    assert busy == [(0.0, "a", 0), (8.0, "a", 1), (9.0, "b", 0)]  # the retry keeps its place
    assert starts_by_host(log)["http://ok.test:80"] == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_robots_first_and_refusals_under_scoring() -> None:
    from tests.support.frontier_sim import robots_body

    frontier = Frontier(Politeness(delay=1.0))
    for path, priority in (("/a", 1.0), ("/private/x", 9.0), ("/b", 5.0)):
        frontier.put(page(f"http://a.test{path}", priority))
    text = "User-agent: *\nDisallow: /private\n"
    log = simulate(lambda: crawl(frontier, workers=2, fetch=0.5, robots=robots_body(text)))
    kinds = [(s, e.kind, e.url[len("http://a.test") :]) for s, _, e in log]
    assert kinds == [
        (0.0, EntryKind.ROBOTS, "/robots.txt"),
        (0.5, EntryKind.REFUSED, "/private/x"),
        (1.0, EntryKind.PAGE, "/b"),
        (2.0, EntryKind.PAGE, "/a"),
    ]


# -- the host queue -------------------------------------------------------------------------


def records(queue: HostQueue) -> list[tuple[str, float]]:
    return [(head, priority) for head, _, priority in queue]


def test_host_queue_switches_to_a_heap_and_back() -> None:
    packer = Packer()
    queue = HostQueue()
    prefix = "http://a.test"

    def push(name: str, priority: float, front: bool = False) -> None:
        record = packer.pack(page(f"{prefix}/{name}", priority), prefix)
        (queue.push_front if front else queue.push)(*record, priority)

    for name in ("a", "b"):
        push(name, 1.0)
    assert not queue.ordered and queue.best == 1.0
    push("z", 1.0, front=True)
    assert records(queue) == [("/z", 1.0), ("/a", 1.0), ("/b", 1.0)]
    push("c", 2.0)
    assert queue.ordered and queue.best == 2.0 and len(queue) == 4
    push("y", 1.0, front=True)
    push("d", 1.0)
    assert [h for h, _ in records(queue)] == ["/c", "/y", "/z", "/a", "/b", "/d"]
    removed = queue.remove_disallowed(lambda url: not url.endswith(("/z", "/b")), prefix)
    assert [(h, p) for h, _, p in removed] == [("/z", 1.0), ("/b", 1.0)]
    assert [queue.pop()[::2] for _ in range(len(queue))] == [
        ("/c", 2.0), ("/y", 1.0), ("/a", 1.0), ("/d", 1.0),
    ]  # fmt: skip
    assert not queue.ordered and len(queue) == 0 and queue.best == float("-inf")
    push("e", -3.0)  # a deque again, at any priority
    assert not queue.ordered and records(queue) == [("/e", -3.0)]
    assert "1 records" in repr(queue)


def test_packed_priority_round_trips_through_the_frontier() -> None:
    entries = [dataclasses.replace(page(f"http://a.test/{i}"), priority=p)
               for i, p in enumerate((0.0, -1.5, 1e300, float("inf"), 0.25))]  # fmt: skip

    async def main() -> list[Entry]:
        frontier = Frontier(Politeness(respect_robots=False))
        for entry in entries:
            frontier.put(entry)
        return await drain(frontier)

    got = simulate(main)
    assert sorted(got, key=lambda e: -e.priority) == got
    assert sorted(got, key=repr) == sorted(entries, key=repr)


def test_cancelled_getter_returns_a_scored_entry_to_its_place() -> None:
    async def main() -> list[str]:
        frontier = Frontier(Politeness(delay=5.0, respect_robots=False))
        frontier.put(page("http://a.test/1", 1.0))
        frontier.put(page("http://a.test/3", 3.0))
        frontier.put(page("http://a.test/2", 2.0))
        first = await frontier.get()
        assert first is not None
        frontier.done(first)
        task = asyncio.create_task(frontier.get())
        await asyncio.sleep(5.0)  # the future got a.test/2...
        task.cancel()  # ...but its getter is gone: a.test/2 goes back, before a.test/1
        with pytest.raises(asyncio.CancelledError):
            await task
        return [first.url] + [e.url for e in await drain(frontier)]

    assert simulate(main) == ["http://a.test/3", "http://a.test/2", "http://a.test/1"]


def test_a_host_pushed_back_while_waiting_as_ready_waits() -> None:
    async def main() -> list[tuple[float, str]]:
        loop = asyncio.get_running_loop()
        frontier = Frontier(Politeness(per_host_concurrency=2, respect_robots=False))
        frontier.put(page("http://a.test/9", 9.0))
        frontier.put(page("http://a.test/1", 1.0))
        frontier.put(page("http://b.test/5", 5.0))
        a9 = await frontier.get()
        b5 = await frontier.get()  # a.test (free slot, best 1) now waits as ready
        assert a9 is not None and b5 is not None
        frontier.done(a9, Outcome(status=429, retry_after="30"))  # ...and is pushed back
        frontier.done(b5)
        a1 = await frontier.get()
        assert a1 is not None
        frontier.done(a1)
        return [(0.0, a9.url), (0.0, b5.url), (loop.time(), a1.url)]

    assert simulate(main) == [
        (0.0, "http://a.test/9"), (0.0, "http://b.test/5"), (30.0, "http://a.test/1"),
    ]  # fmt: skip
