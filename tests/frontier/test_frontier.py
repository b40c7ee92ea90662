"""Frontier tests, run in simulated time (SimulatedLoop): no real sleeps, fully deterministic."""

from __future__ import annotations

import asyncio
import itertools
import random
from collections import defaultdict
from email.utils import formatdate
from urllib.parse import urlsplit

import pytest

from crawler.config.load import Config
from crawler.frontier import (
    Entry,
    EntryKind,
    Frontier,
    Outcome,
    host_key,
    parse_retry_after,
)
from crawler.frontier.robots import ALLOW_ALL, policy_from_response
from crawler.frontier.settings import Politeness, QueueLimits
from tests.support.frontier_sim import (
    crawl,
    fill,
    min_gap,
    page,
    robots_body,
    simulate,
    starts_by_host,
)

# -- host_key and Retry-After -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("http://Example.COM/a/b?q#f", "http://example.com:80"),
        ("HTTPS://example.com", "https://example.com:443"),
        ("https://example.com:8443?x=/y", "https://example.com:8443"),
        ("http://user:pw@example.com:81#frag", "http://example.com:81"),
        ("http://[::1]:8080/x", "http://[::1]:8080"),
        ("http://[::1]/x", "http://[::1]:80"),
    ],
)
def test_host_key(url: str, key: str) -> None:
    assert host_key(url) == key


def test_host_key_agrees_with_urlsplit() -> None:
    rng = random.Random(7)
    for _ in range(500):
        host = "".join(rng.choice("abcXYZ-0.") for _ in range(rng.randint(1, 12))).strip(".-")
        host = host or "a"
        port = rng.choice(["", ":8080", ":1"])
        tail = rng.choice(["", "/", "/p?q=a:b@c", "?x", "#y/z"])
        url = f"{rng.choice(['http', 'HTTPS'])}://{host}{port}{tail}"
        parts = urlsplit(url)
        number = parts.port or {"http": 80, "https": 443}[parts.scheme]
        assert host_key(url) == f"{parts.scheme}://{parts.hostname}:{number}", url


@pytest.mark.parametrize("bad", ["example.com/x", "http:///x", "http://a:99999/", "gopher://a/"])
def test_host_key_rejects(bad: str) -> None:
    with pytest.raises(ValueError, match="URL"):
        host_key(bad)


def test_parse_retry_after() -> None:
    assert parse_retry_after("120") == 120.0
    assert parse_retry_after(" 1.5 ") == 1.5
    now = 1_700_000_000.0
    assert parse_retry_after(formatdate(now + 30, usegmt=True), now=now) == pytest.approx(30.0)
    assert parse_retry_after(formatdate(now - 30, usegmt=True), now=now) == 0.0
    for bad in ("", "soon", "-5", "nan", "inf"):
        assert parse_retry_after(bad) is None


# -- politeness ---------------------------------------------------------------------------


def test_delay_between_starts_on_each_host() -> None:
    frontier = Frontier(Politeness(delay=2.0, respect_robots=False))
    fill(frontier, hosts=3, per_host=5)
    log = simulate(lambda: crawl(frontier, workers=8, fetch=0.5))
    by_host = starts_by_host(log)
    assert len(by_host) == 3
    for starts in by_host.values():
        # starts are exactly 2 s apart: never closer, and no time wasted
        assert sorted(starts) == [0.0, 2.0, 4.0, 6.0, 8.0]
    assert [e.url for _, _, e in log if host_key(e.url) == "http://h0.test:80"] == [
        f"http://h0.test/p{i}" for i in range(5)
    ]  # BFS / FIFO order within a host


def test_per_host_concurrency_is_held() -> None:
    frontier = Frontier(Politeness(per_host_concurrency=3, respect_robots=False))
    fill(frontier, hosts=1, per_host=10)
    log = simulate(lambda: crawl(frontier, workers=10, fetch=1.0))
    events = sorted([(s, 1) for s, _, _ in log] + [(e, -1) for _, e, _ in log])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    assert peak == 3
    assert max(end for _, end, _ in log) == 4.0  # ceil(10 / 3) rounds of 1 s


def test_many_workers_random_latency_never_violate_delay() -> None:
    rng = random.Random(42)
    frontier = Frontier(Politeness(delay=1.0, per_host_concurrency=2, respect_robots=False))
    fill(frontier, hosts=40, per_host=8)
    latency = {
        f"http://h{h}.test/p{i}": rng.uniform(0.01, 3.0) for h in range(40) for i in range(8)
    }
    log = simulate(lambda: crawl(frontier, workers=32, fetch=lambda e: latency[e.url]))
    assert len(log) == 320
    for starts in starts_by_host(log).values():
        assert min_gap(starts) >= 1.0 - 1e-9


def test_waiting_host_never_blocks_a_ready_one() -> None:
    # One worker, a slow host (Crawl-delay 50) queued first: the other host's pages must not wait.
    frontier = Frontier(Politeness(respect_robots=False))
    slow = policy_from_response(200, b"User-agent: *\nCrawl-delay: 50\n", "bot")
    frontier.set_robots("http://slow.test", slow)
    for i in range(3):
        frontier.put(page(f"http://slow.test/{i}"))
    for i in range(20):
        frontier.put(page(f"http://fast.test/{i}"))
    log = simulate(lambda: crawl(frontier, workers=1, fetch=0.1))
    by_host = starts_by_host(log)
    assert by_host["http://slow.test:80"] == [0.0, 50.0, 100.0]
    assert max(by_host["http://fast.test:80"]) == pytest.approx(2.0)  # back to back after slow/0


def test_backed_off_host_never_blocks_and_retry_after_is_honoured() -> None:
    frontier = Frontier(Politeness(respect_robots=False, max_retry_after=600.0))
    frontier.put(page("http://busy.test/a"))
    for i in range(5):
        frontier.put(page(f"http://ok.test/{i}"))
    seen: list[str] = []

    def respond(entry: Entry, start: float) -> tuple[Outcome | None, bool]:
        seen.append(entry.url)
        if entry.url == "http://busy.test/a" and entry.retries == 0:
            return Outcome(status=429, retry_after="7"), True
        return Outcome(status=200), False

    log = simulate(lambda: crawl(frontier, workers=1, fetch=1.0, respond=respond))
    busy = [(s, e) for s, _, e in log if e.url == "http://busy.test/a"]
    assert [(s, e.retries) for s, e in busy] == [(0.0, 0), (8.0, 1)]  # done at 1.0 + Retry-After 7
    ok_starts = starts_by_host(log)["http://ok.test:80"]
    assert ok_starts == [1.0, 2.0, 3.0, 4.0, 5.0]  # never waited for busy.test
    assert frontier.stats.backoffs == 1
    assert frontier.stats.retries == 1


def test_retry_after_is_capped_and_http_dates_work() -> None:
    frontier = Frontier(Politeness(respect_robots=False, max_retry_after=30.0))
    frontier.put(page("http://a.test/"))

    def respond(entry: Entry, start: float) -> tuple[Outcome | None, bool]:
        if entry.retries == 0:
            return Outcome(status=503, retry_after="86400"), True
        return Outcome(status=200), False

    log = simulate(lambda: crawl(frontier, workers=2, fetch=0.0, respond=respond))
    assert [s for s, _, _ in log] == [0.0, 30.0]


def test_exponential_backoff_with_jitter_and_reset() -> None:
    frontier = Frontier(
        Politeness(respect_robots=False, backoff_base=2.0, backoff_max=20.0), rng=random.Random(3)
    )
    frontier.put(page("http://a.test/"))
    script = [Outcome(failed=True)] * 5 + [Outcome(status=200), Outcome(status=503)]
    script.append(Outcome(status=200))

    def respond(entry: Entry, start: float) -> tuple[Outcome | None, bool]:
        return script[entry.retries], entry.retries < len(script) - 1

    log = simulate(lambda: crawl(frontier, workers=1, fetch=0.0, respond=respond))
    starts = [s for s, _, _ in log]
    waits = [b - a for a, b in itertools.pairwise(starts)]
    caps = [2.0, 4.0, 8.0, 16.0, 20.0, 0.0, 2.0]  # the 6th wait follows a success: no backoff
    assert len(waits) == 7
    for wait, cap in zip(waits, caps, strict=True):
        assert cap * 0.5 <= wait <= cap
    assert len({round(w / c, 6) for w, c in zip(waits, caps, strict=True) if c}) > 1  # jittered


def test_adaptive_delay_follows_latency_never_below_configured() -> None:
    frontier = Frontier(Politeness(delay=0.5, max_delay=10.0, adaptive=True, respect_robots=False))
    fill(frontier, hosts=1, per_host=12)

    def respond(entry: Entry, start: float) -> tuple[Outcome | None, bool]:
        n = int(entry.url.rsplit("p", 1)[1])
        return Outcome(status=200, latency=4.0 if n < 6 else 0.0), False

    log = simulate(lambda: crawl(frontier, workers=1, fetch=0.0, respond=respond))
    gaps = [b - a for a, b in itertools.pairwise([s for s, _, _ in log])]
    assert gaps[0] == pytest.approx(2.25)  # (0.5 + 4) / 2
    assert gaps[4] > 3.5  # converging on the 4 s latency
    assert min(gaps) >= 0.5
    assert gaps[-1] < 1.0  # fast responses bring it back down, to the floor
    assert gaps[-1] >= 0.5


# -- termination, cancellation, bounds ------------------------------------------------------


def test_termination_waits_for_in_flight_work_that_adds_urls() -> None:
    frontier = Frontier(Politeness(delay=1.0, respect_robots=False))
    frontier.put(page("http://a.test/0"))

    def respond(entry: Entry, start: float) -> tuple[Outcome | None, bool]:
        if entry.depth < 4:  # every page links to two new ones on two hosts
            frontier.put(page(f"http://a.test/{entry.depth + 1}", entry.depth + 1))
            frontier.put(page(f"http://b.test/{entry.depth + 1}-{start}", entry.depth + 1))
        return Outcome(status=200), False

    log = simulate(lambda: crawl(frontier, workers=6, fetch=0.5, respond=respond))
    assert len(log) == 1 + 2 + 4 + 8 + 16  # a binary tree of depth 4, all crawled
    assert len(frontier) == 0
    assert frontier.in_flight == 0


def test_get_on_empty_frontier_returns_none_and_close_releases_waiters() -> None:
    async def main() -> list[Entry | None]:
        frontier = Frontier(Politeness(delay=100.0, respect_robots=False))
        assert await frontier.get() is None  # nothing queued, nothing in flight
        frontier.put(page("http://a.test/1"))
        frontier.put(page("http://a.test/2"))
        first = await frontier.get()
        assert first is not None
        waiting = [asyncio.create_task(frontier.get()) for _ in range(3)]
        await asyncio.sleep(1.0)
        assert not any(t.done() for t in waiting)
        frontier.close()
        assert frontier.put(page("http://a.test/3")) is False
        assert frontier.stats.dropped_closed == 1
        return [*(await asyncio.gather(*waiting)), await frontier.get()]

    assert simulate(main) == [None, None, None, None]


def test_cancelled_getter_does_not_lose_its_entry() -> None:
    async def main() -> list[str]:
        frontier = Frontier(Politeness(delay=5.0, respect_robots=False))
        frontier.put(page("http://a.test/1"))
        frontier.put(page("http://a.test/2"))
        first = await frontier.get()
        assert first is not None
        frontier.done(first)
        task = asyncio.create_task(frontier.get())
        await asyncio.sleep(4.0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        second = await frontier.get()
        assert second is not None
        frontier.done(second)
        return [first.url, second.url, str(asyncio.get_running_loop().time())]

    assert simulate(main) == ["http://a.test/1", "http://a.test/2", "5.0"]


def test_bounds_are_counted_and_retries_ignore_them() -> None:
    async def main() -> None:
        frontier = Frontier(
            Politeness(respect_robots=False), QueueLimits(max_queued=5, max_queued_per_host=3)
        )
        accepted = [frontier.put(page(f"http://a.test/{i}")) for i in range(4)]
        accepted += [frontier.put(page(f"http://b.test/{i}")) for i in range(4)]
        assert accepted == [True, True, True, False, True, True, False, False]
        stats = frontier.stats
        assert (stats.queued, stats.dropped_host_full, stats.dropped_full) == (5, 1, 2)
        assert len(frontier) == 5
        assert [e.url for e in frontier.pending()][:3] == [f"http://a.test/{i}" for i in range(3)]
        entry = await frontier.get()
        assert entry is not None
        assert frontier.put(page("http://c.test/x")) is True  # one slot freed
        frontier.done(entry, Outcome(failed=True), retry=True)  # re-queued beyond the bound
        assert len(frontier) == 6
        assert next(frontier.pending()) == Entry(url=entry.url, key=entry.key, retries=1)
        with pytest.raises(ValueError, match="not in flight"):
            frontier.done(entry)

    simulate(main)


def test_constructor_validation_and_repr() -> None:
    with pytest.raises(ValueError, match="delay"):
        Frontier(Politeness(delay=-1.0))
    with pytest.raises(ValueError, match="per_host_concurrency"):
        Frontier(Politeness(per_host_concurrency=0))
    with pytest.raises(ValueError, match="PAGE"):
        Frontier().put(Entry(url="http://a/", key="http://a/", kind=EntryKind.ROBOTS))
    frontier = Frontier(Politeness(respect_robots=False))
    frontier.put(page("http://a.test/"))
    assert "queued=1" in repr(frontier)
    assert "in_flight=0" in repr(frontier)


# -- robots.txt -------------------------------------------------------------------------------


def test_robots_fetched_first_counts_for_delay_and_refuses_disallowed() -> None:
    frontier = Frontier(Politeness(delay=1.0, max_delay=30.0))
    for path in ("/a", "/private/x", "/b", "/private/y"):
        frontier.put(page(f"http://a.test{path}"))
    text = "User-agent: sieve-crawler\nDisallow: /private\nCrawl-delay: 3\n"
    log = simulate(lambda: crawl(frontier, workers=4, fetch=0.5, robots=robots_body(text)))
    kinds = [(s, e.kind, e.url) for s, _, e in log]
    assert kinds[0] == (0.0, EntryKind.ROBOTS, "http://a.test/robots.txt")
    fetched = [(s, u) for s, k, u in kinds if k is EntryKind.PAGE]
    assert fetched == [(3.0, "http://a.test/a"), (6.0, "http://a.test/b")]  # Crawl-delay 3
    refused = [(s, u) for s, k, u in kinds if k is EntryKind.REFUSED]
    assert [u for _, u in refused] == ["http://a.test/private/x", "http://a.test/private/y"]
    assert refused[0][0] == 0.5  # handed out as soon as the policy is known: no slot, no delay
    stats = frontier.stats
    assert (stats.refused_robots, stats.robots_fetches, stats.handed_out) == (2, 1, 2)


def test_crawl_delay_capped_by_max_delay() -> None:
    frontier = Frontier(Politeness(max_delay=10.0))
    fill(frontier, hosts=1, per_host=2)
    log = simulate(
        lambda: crawl(frontier, fetch=0.0, robots=robots_body("User-agent: *\nCrawl-delay: 3600"))
    )
    assert [s for s, _, _ in log] == [0.0, 10.0, 20.0]


def test_unreachable_robots_retried_then_pages_refused() -> None:
    frontier = Frontier(Politeness(robots_attempts=3, backoff_base=4.0), rng=random.Random(1))
    fill(frontier, hosts=1, per_host=3)
    frontier.put(page("http://other.test/"))
    unreachable = lambda entry: policy_from_response(503, None, "bot")  # noqa: E731
    log = simulate(lambda: crawl(frontier, workers=2, fetch=0.0, robots=unreachable))
    h0 = [(s, e.kind) for s, _, e in log if host_key(e.url) == "http://h0.test:80"]
    assert [k for _, k in h0] == [EntryKind.ROBOTS] * 3 + [EntryKind.REFUSED] * 3
    robots_starts = [s for s, k in h0 if k is EntryKind.ROBOTS]
    assert 2.0 <= robots_starts[1] - robots_starts[0] <= 4.0  # backoff with jitter
    assert 4.0 <= robots_starts[2] - robots_starts[1] <= 8.0
    assert frontier.stats.refused_robots == 4  # other.test's page too
    assert frontier.stats.deferred_robots == 0


def test_a_robots_txt_down_for_a_few_seconds_loses_no_page_by_default() -> None:
    # a server restarting answers 503 for a while: with the defaults robots.txt is tried 6
    # times over 15-31 s, so a host that answers by the 6th try keeps its pages
    p = Config().politeness
    frontier = Frontier(
        Politeness(robots_attempts=p.robots_attempts, backoff_base=p.backoff_base),
        rng=random.Random(3),
    )
    fill(frontier, hosts=1, per_host=3)
    answers = iter([policy_from_response(503, None, "bot")] * 5 + [ALLOW_ALL])
    log = simulate(lambda: crawl(frontier, workers=2, fetch=0.0, robots=lambda e: next(answers)))
    kinds = [e.kind for _, _, e in log]
    assert kinds == [EntryKind.ROBOTS] * 6 + [EntryKind.PAGE] * 3
    starts = [s for s, _, e in log if e.kind is EntryKind.ROBOTS]
    assert 15.5 <= starts[-1] - starts[0] <= 31.0  # 1 + 2 + 4 + 8 + 16 s, each x 0.5-1
    assert frontier.stats.refused_robots == 0


def test_robots_held_pages_and_done_without_set_robots() -> None:
    async def main() -> None:
        frontier = Frontier(Politeness(robots_attempts=2, backoff_base=1.0), rng=random.Random(0))
        frontier.put(page("http://a.test/1"))
        robots = await frontier.get()
        assert robots is not None
        assert robots.kind is EntryKind.ROBOTS
        assert frontier.stats.deferred_robots == 1
        waiter = asyncio.create_task(frontier.get())
        await asyncio.sleep(100.0)
        assert not waiter.done()  # the page is held while robots.txt is in flight
        frontier.done(robots)  # no set_robots(): the engine failed, treat as unreachable
        again = await waiter
        assert again is not None
        assert again.kind is EntryKind.ROBOTS
        frontier.set_robots("http://a.test:80", ALLOW_ALL)
        frontier.done(again)
        got = await frontier.get()
        assert got == page("http://a.test/1")

    simulate(main)


def test_robots_refetched_after_ttl_keeping_cached_policy_on_failure() -> None:
    frontier = Frontier(Politeness(robots_ttl=10.0))
    for i in range(4):
        frontier.put(page(f"http://a.test/{i}"))
    policies = iter(
        [
            robots_body("User-agent: *\nDisallow: /x")(page("x")),
            policy_from_response(None, None, "bot"),
        ]
    )
    log = simulate(lambda: crawl(frontier, workers=1, fetch=4.0, robots=lambda e: next(policies)))
    kinds = [(s, e.kind, e.url.rsplit("/", 1)[1]) for s, _, e in log]
    assert kinds[:4] == [
        (0.0, EntryKind.ROBOTS, "robots.txt"),
        (4.0, EntryKind.PAGE, "0"),
        (8.0, EntryKind.PAGE, "1"),
        (12.0, EntryKind.PAGE, "2"),  # policy set at 4.0 expires at 14.0
    ]
    assert kinds[4] == (16.0, EntryKind.ROBOTS, "robots.txt")  # expired: fetched again
    assert kinds[5] == (20.0, EntryKind.PAGE, "3")  # the refresh failed: cached policy kept
    assert frontier.stats.backoffs == 0  # ... and the pages were not held for a retry


def test_set_robots_accepts_urls_and_preloads() -> None:
    frontier = Frontier()
    frontier.set_robots("https://a.test/robots.txt", policy_from_response(404, None, "bot"))
    frontier.put(page("https://a.test/x"))
    log = simulate(lambda: crawl(frontier, fetch=0.0))
    assert [e.kind for _, _, e in log] == [EntryKind.PAGE]


# -- compact queue records: what get() and pending() give back equals what put() took ----------


def varied_entries() -> list[Entry]:
    """Entries covering every record shape: key the URL object, an equal copy or another string;
    URLs that start with their host's origin or not (explicit default port, upper case, userinfo);
    non-default ports, IPv6, every field set, and runs of siblings sharing a parent."""
    parent = "http://a.test/index.html"
    same = "http://a.test/same"
    copy = "".join(["http://a.test/", "same-copy"])
    return [
        Entry(url=same, key=same, depth=2, parent=parent),
        Entry(url=copy, key="".join(["http://a.test/", "same-copy"]), depth=2, parent=parent),
        Entry(url="http://a.test/q?b=1&a=2", key="http://a.test/q?a=2&b=1", depth=2, parent=parent),
        Entry(url="http://a.test:80/port", key="http://a.test:80/port", depth=3, parent=parent),
        Entry(url="http://A.test/upper", key="http://a.test/upper", depth=3),
        Entry(url="http://user@a.test/u", key="http://user@a.test/u"),
        Entry(url="http://a.test", key="http://a.test"),
        Entry(url="http://a.test:8080/x", key="http://a.test:8080/x", retries=2, redirects=1),
        Entry(url="https://b.test/s.xml", key="https://b.test/s.xml", depth=1, sitemap=True),
        Entry(url="http://[::1]:8000/v6", key="http://[::1]:8000/v6", depth=7, parent=None),
        Entry(url="http://a.test/é", key="http://a.test/%C3%A9", depth=1, parent="http://x.test/"),
    ]


def by_host(entries: list[Entry]) -> list[Entry]:
    order: dict[str, list[Entry]] = defaultdict(list)
    for entry in entries:
        order[host_key(entry.url)].append(entry)
    return [entry for group in order.values() for entry in group]


def test_get_and_pending_rebuild_equal_entries() -> None:
    entries = varied_entries()

    async def main() -> list[Entry]:
        frontier = Frontier(Politeness(respect_robots=False))
        for entry in entries:
            assert frontier.put(entry)
        pending = list(frontier.pending())
        assert pending == by_host(entries)
        assert [type(e) for e in pending] == [Entry] * len(entries)
        got = []
        while (entry := await frontier.get()) is not None:
            got.append(entry)
            frontier.done(entry)
        return got

    got = simulate(main)
    assert sorted(got, key=repr) == sorted(entries, key=repr)
    for entry in got:
        assert entry.kind is EntryKind.PAGE
        if entry.key == entry.url:
            assert entry.key is entry.url  # one string, not two
    urls = {entry.url: entry for entry in got}
    siblings = [urls[e.url].parent for e in entries[:4]]
    assert all(parent is siblings[0] for parent in siblings)  # still one string for siblings


def test_retry_unget_and_robots_sweep_keep_fields() -> None:
    entries = [e for e in varied_entries() if host_key(e.url) == "http://a.test:80"]

    async def main() -> None:
        frontier = Frontier()
        for entry in entries:
            assert frontier.put(entry)
        robots = await frontier.get()  # a.test's robots.txt first
        assert robots is not None and robots.kind is EntryKind.ROBOTS
        policy = policy_from_response(200, b"User-agent: *\nDisallow: /q\n", "sieve-crawler/0.1")
        frontier.set_robots(robots.url, policy)  # sweeps /q?b=1&a=2 to the refusals
        frontier.done(robots)
        refused = await frontier.get()
        assert refused == replace_kind(entries[2], EntryKind.REFUSED)
        first = await frontier.get()
        assert first == entries[0]
        frontier.done(first, retry=True)
        retried = Entry(url=first.url, key=first.key, depth=2, parent=first.parent, retries=1)
        assert list(frontier.pending()) == [retried, *entries[1:2], *entries[3:]]
        second = await frontier.get()
        assert second == retried

        waiter = asyncio.create_task(frontier.get())
        await asyncio.sleep(0)  # parked: the host's one slot is taken
        frontier.done(second)  # hands entries[1] to the waiter's future...
        waiter.cancel()  # ...that the getter never sees: it goes back to the head, unchanged
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert frontier.in_flight == 0
        assert list(frontier.pending()) == [*entries[1:2], *entries[3:]]
        rest = []
        while (entry := await frontier.get()) is not None:
            rest.append(entry)
            frontier.done(entry)
        assert rest == [*entries[1:2], *entries[3:]]

    simulate(main)


def replace_kind(entry: Entry, kind: EntryKind) -> Entry:
    return Entry(url=entry.url, key=entry.key, depth=entry.depth, parent=entry.parent,
                 retries=entry.retries, redirects=entry.redirects, kind=kind,
                 sitemap=entry.sitemap)  # fmt: skip
