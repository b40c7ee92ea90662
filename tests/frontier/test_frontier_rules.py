"""Per-host politeness overrides (HostRule through Frontier(host_rule=...)), in simulated time."""

from __future__ import annotations

import pytest

from crawler.config.load import Config
from crawler.engine.components import make_frontier
from crawler.frontier import EntryKind, Frontier, HostRule
from crawler.frontier.entries import Entry, Outcome
from crawler.frontier.settings import Politeness
from tests.support.frontier_sim import crawl, fill, min_gap, robots_body, simulate, starts_by_host


def test_rule_delay_replaces_the_global_delay_for_its_host_only() -> None:
    asked: list[str] = []

    def host_rule(key: str) -> HostRule | None:
        asked.append(key)
        return {"http://h0.test:80": HostRule(delay=3.0)}.get(key)

    frontier = Frontier(Politeness(delay=1.0, respect_robots=False), host_rule=host_rule)
    fill(frontier, hosts=2, per_host=4)
    starts = starts_by_host(simulate(lambda: crawl(frontier, workers=4, fetch=0.1)))
    assert starts["http://h0.test:80"] == [0.0, 3.0, 6.0, 9.0]
    assert starts["http://h1.test:80"] == [0.0, 1.0, 2.0, 3.0]
    assert sorted(asked) == ["http://h0.test:80", "http://h1.test:80"]  # once per host


def test_rule_may_lower_the_global_delay() -> None:
    host_rule = {"http://h0.test:80": HostRule(delay=0.5)}.get
    frontier = Frontier(Politeness(delay=2.0, respect_robots=False), host_rule=host_rule)
    fill(frontier, hosts=2, per_host=3)
    starts = starts_by_host(simulate(lambda: crawl(frontier, workers=4, fetch=0.1)))
    assert starts["http://h0.test:80"] == [0.0, 0.5, 1.0]
    assert starts["http://h1.test:80"] == [0.0, 2.0, 4.0]


def test_rule_concurrency_replaces_the_global_one() -> None:
    host_rule = {"http://h0.test:80": HostRule(per_host_concurrency=3)}.get
    frontier = Frontier(Politeness(respect_robots=False), host_rule=host_rule)
    fill(frontier, hosts=2, per_host=6)
    log = simulate(lambda: crawl(frontier, workers=8, fetch=1.0))

    def most_in_flight(key: str) -> int:
        spans = [(s, e) for s, e, entry in log if entry.url.startswith(key)]
        return max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)

    assert most_in_flight("http://h0.test/") == 3
    assert most_in_flight("http://h1.test/") == 1
    assert len(log) == 12


@pytest.mark.parametrize(
    ("rule_delay", "crawl_delay", "gap"),
    [(1.0, 3.0, 3.0), (5.0, 3.0, 5.0), (0.5, None, 0.5), (0.0, 3.0, 3.0), (0.0, 100.0, 10.0)],
)
def test_crawl_delay_raises_a_rule_delay_never_lowers_it(
    rule_delay: float, crawl_delay: float | None, gap: float
) -> None:
    frontier = Frontier(
        Politeness(delay=2.0, max_delay=10.0), host_rule=lambda key: HostRule(rule_delay)
    )
    fill(frontier, hosts=1, per_host=3)
    text = "User-agent: *\n" + (f"Crawl-delay: {crawl_delay:g}\n" if crawl_delay else "")
    log = simulate(lambda: crawl(frontier, fetch=0.0, robots=robots_body(text)))
    assert log[0][2].kind is EntryKind.ROBOTS
    starts = [s for s, _, _ in log]
    assert starts == [0.0, gap, 2 * gap, 3 * gap]
    assert min_gap(starts) == gap


def test_no_rule_keeps_the_globals_and_make_frontier_passes_the_hook() -> None:
    asked: list[str] = []

    def host_rule(key: str) -> HostRule | None:
        asked.append(key)
        return None

    config = Config().override("politeness", delay=1.5, respect_robots=False)
    frontier = make_frontier(config, host_rule=host_rule)
    fill(frontier, hosts=1, per_host=3, scheme="https")
    starts = starts_by_host(simulate(lambda: crawl(frontier, fetch=0.1)))
    assert starts == {"https://h0.test:443": [0.0, 1.5, 3.0]}
    assert asked == ["https://h0.test:443"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"delay": -1.0},
        {"delay": float("inf")},
        {"delay": float("nan")},
        {"per_host_concurrency": 0},
    ],
)
def test_host_rule_rejects_bad_values(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="must be"):
        HostRule(**kwargs)  # type: ignore[arg-type]


def test_a_429_retry_after_holds_a_host_whose_rule_has_no_delay() -> None:
    # the rule's delay 0 is a floor on the spacing, not a licence to ignore a 429's Retry-After
    frontier = Frontier(
        Politeness(delay=2.0, respect_robots=False), host_rule=lambda key: HostRule(0.0)
    )
    fill(frontier, hosts=1, per_host=3)

    def respond(entry: Entry, start: float) -> tuple[Outcome, bool]:
        if entry.url.endswith("/p0") and entry.retries == 0:
            return Outcome(status=429, retry_after="7", latency=0.1), True
        return Outcome(status=200, latency=0.1), False

    log = simulate(lambda: crawl(frontier, workers=2, fetch=0.1, respond=respond))
    starts = [s for s, _, _ in log]
    assert starts[0] == 0.0 and all(s >= 7.0 for s in starts[1:])  # nothing before Retry-After
    assert len(log) == 4  # p0 twice


def test_adaptive_delay_uses_the_rules_concurrency() -> None:
    # AutoThrottle's target is latency / concurrency: the host's own, from its rule
    def host_rule(key: str) -> HostRule | None:
        return HostRule(delay=0.0, per_host_concurrency=4) if "h0" in key else None

    frontier = Frontier(
        Politeness(delay=0.0, max_delay=60.0, adaptive=True, respect_robots=False),
        host_rule=host_rule,
    )
    fill(frontier, hosts=2, per_host=2)

    def respond(entry: Entry, start: float) -> tuple[Outcome, bool]:
        return Outcome(status=200, latency=8.0), False

    starts = starts_by_host(
        simulate(lambda: crawl(frontier, workers=1, fetch=0.0, respond=respond))
    )
    assert starts == {"http://h0.test:80": [0.0, 1.0], "http://h1.test:80": [0.0, 4.0]}
