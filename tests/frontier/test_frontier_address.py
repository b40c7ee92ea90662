"""Politeness by IP address (`crawler.frontier.addresses`), in simulated time: hosts resolved by
the frontier before they are scheduled, each address's ip_delay and ip_concurrency held together
with each host's own rules, hosts parked on a busy address holding no worker."""

from __future__ import annotations

import asyncio
import itertools
from collections import defaultdict
from dataclasses import dataclass

from crawler.frontier import Entry, Frontier, host_key
from crawler.frontier.addresses import address_key
from crawler.frontier.settings import Politeness
from tests.support.frontier_sim import Record, crawl, page, simulate

EPS = 1e-9  # float sums of simulated times


@dataclass(frozen=True)
class Answer:
    addresses: tuple[str, ...]
    ttl: float | None = None


class Names:
    """A resolver in simulated time: `table` (changeable) name -> addresses, `slow` names take
    that long to answer; `pins` the frontier's choices, `asked` every lookup."""

    def __init__(self, table: dict[str, list[str]], slow: dict[str, float] | None = None) -> None:
        self.table = table
        self.slow = slow or {}
        self.pins: dict[str, str | None] = {}
        self.asked: list[str] = []

    async def lookup(self, name: str) -> Answer:
        self.asked.append(name)
        await asyncio.sleep(self.slow.get(name, 0.01))
        if name not in self.table:
            raise OSError(f"cannot resolve {name}")
        return Answer(tuple(self.table[name]))

    def pin(self, name: str, address: str | None) -> None:
        self.pins[name] = address


def starts_of(log: list[Record], where: dict[str, str]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    for start, _, entry in sorted(log, key=lambda r: r[0]):
        out[where[host_key(entry.url).split("://")[1].rsplit(":", 1)[0]]].append(start)
    return out


def gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(times)]


def fill(frontier: Frontier, hosts: list[str], per_host: int) -> None:
    for i in range(per_host):
        for h in hosts:
            assert frontier.put(page(f"http://{h}/p{i}"))


def politeness(**kw: object) -> Politeness:
    return Politeness(**{"respect_robots": False, "delay": 1.0, **kw})  # type: ignore[arg-type]


def test_many_hosts_on_few_addresses_get_one_budget_each_at_the_ideal_rate() -> None:
    hosts = [f"h{i}.test" for i in range(40)]
    table = {h: [f"10.0.0.{i % 4 + 1}"] for i, h in enumerate(hosts)}  # 10 hosts per address
    names = Names(table)

    async def main() -> list[Record]:
        frontier = Frontier(politeness(ip_delay=0.25), names=names)
        fill(frontier, hosts, 5)
        return await crawl(frontier, workers=16, fetch=0.05)

    log = simulate(main)
    assert len(log) == 200
    starts = starts_of(log, {h: a[0] for h, a in table.items()})
    assert len(starts) == 4
    for times in starts.values():
        assert min(gaps(times)) >= 0.25 - EPS  # never two starts to one address within ip_delay
        # 50 requests an address, 0.25 s apart: the address is the bound (hosts allow 10/s)
        assert times[-1] - times[0] <= 49 * 0.25 + EPS
    assert all(names.pins[h] == table[h][0] for h in hosts)
    assert sorted(names.asked) == sorted(hosts)  # each host resolved once (TTL 300 s)


def test_the_stricter_of_host_and_address_rules_wins() -> None:
    # one host per address, ip_delay below the host delay: the host's 1 s holds
    table = {"a.test": ["10.0.0.1"], "b.test": ["10.0.0.2"]}

    async def loose_ip() -> list[Record]:
        frontier = Frontier(politeness(ip_delay=0.1), names=Names(table))
        fill(frontier, list(table), 5)
        return await crawl(frontier, workers=4, fetch=0.05)

    for times in starts_of(simulate(loose_ip), {h: a[0] for h, a in table.items()}).values():
        assert min(gaps(times)) >= 1.0 - EPS
    # four slots per host, one per address: never two requests in flight to the address
    shared = {"a.test": ["10.0.0.1"], "b.test": ["10.0.0.1"]}

    async def tight_ip() -> list[Record]:
        frontier = Frontier(
            politeness(delay=0.0, per_host_concurrency=4, ip_concurrency=1), names=Names(shared)
        )
        fill(frontier, list(shared), 6)
        return await crawl(frontier, workers=8, fetch=0.5)

    log = sorted(simulate(tight_ip), key=lambda r: r[0])
    for (_, end, _), (start, _, _) in itertools.pairwise(log):
        assert start >= end - EPS  # each request starts after the previous one ended
    assert log[-1][1] == 0.01 + 12 * 0.5  # resolved, then back to back


def test_a_host_waiting_on_its_address_blocks_no_worker_and_no_other_host() -> None:
    # 10 hosts on one address 0.5 s apart (20 s of turns), one host alone on another; 2 workers
    crowd = {f"c{i}.test": ["10.0.0.1"] for i in range(10)}
    table = {**crowd, "alone.test": ["10.0.0.2"]}

    async def main() -> list[Record]:
        frontier = Frontier(politeness(delay=0.5, ip_delay=0.5), names=Names(table))
        fill(frontier, list(table), 4)
        return await crawl(frontier, workers=2, fetch=0.01)

    log = simulate(main)
    alone = sorted(s for s, _, e in log if "alone" in e.url)
    # its own 0.5 s apart only: the crowd's turns on their address never hold it
    assert alone[-1] <= 0.01 + 3 * 0.5 + EPS
    crowd_starts = sorted(s for s, _, e in log if "alone" not in e.url)
    assert min(gaps(crowd_starts)) >= 0.5 - EPS
    assert crowd_starts[-1] <= 0.01 + 39 * 0.5 + EPS  # and the crowd's address lost no turn


def test_a_host_whose_address_changes_moves_to_the_new_budget() -> None:
    table = {"mover.test": ["10.0.0.1"], "stay.test": ["10.0.0.2"]}
    names = Names(table)
    moved_at = 5.0

    async def main() -> list[Record]:
        frontier = Frontier(
            politeness(delay=0.5, ip_delay=0.5, dns_ttl=2.0, dns_min_ttl=1.0), names=names
        )
        fill(frontier, list(table), 20)

        async def move() -> None:
            await asyncio.sleep(moved_at)
            table["mover.test"] = ["10.0.0.2"]  # now behind stay.test's address

        mover = asyncio.create_task(move())
        log = await crawl(frontier, workers=4, fetch=0.05)
        await mover
        return log

    log = simulate(main)
    assert names.pins["mover.test"] == "10.0.0.2"
    assert names.asked.count("mover.test") >= 3  # asked again each TTL (2 s)
    # once its new answer is in (within a TTL of the move), both hosts share 10.0.0.2's budget
    late = sorted(s for s, _, _ in log if s >= moved_at + 2.0 + 0.02)
    assert len(late) > 5 and min(gaps(late)) >= 0.5 - EPS
    early = sorted(s for s, _, e in log if s < moved_at and "mover" in e.url)
    assert min(gaps(early)) >= 0.5 - EPS and len(early) >= 8  # its own budget meanwhile


def test_a_host_on_two_addresses_uses_one_and_keeps_it_while_answers_hold_it() -> None:
    table = {"two.test": ["10.0.0.1", "2001:db8::1"], "other.test": ["2001:db8::1"]}
    names = Names(table)

    async def main() -> list[Record]:
        frontier = Frontier(
            politeness(delay=0.0, ip_delay=0.3, dns_ttl=1.0, dns_min_ttl=1.0), names=names
        )
        fill(frontier, list(table), 10)

        async def reorder() -> None:
            await asyncio.sleep(1.5)
            table["two.test"] = ["2001:db8::1", "10.0.0.1"]  # round-robin DNS

        task = asyncio.create_task(reorder())
        log = await crawl(frontier, workers=4, fetch=0.01)
        await task
        return log

    log = simulate(main)
    assert names.pins == {"two.test": "10.0.0.1", "other.test": "2001:db8::1"}
    two = sorted(s for s, _, e in log if "two.test" in e.url)
    other = sorted(s for s, _, e in log if "other.test" in e.url)
    assert min(gaps(two)) >= 0.3 - EPS and min(gaps(other)) >= 0.3 - EPS
    # two budgets, not one: the two hosts' requests interleave closer than 0.3 s
    assert min(gaps(sorted(two + other))) < 0.3


def test_resolution_blocks_no_other_host_and_a_name_that_fails_goes_by_host() -> None:
    table = {"fast.test": ["10.0.0.1"]}
    names = Names(table, slow={"slow.test": 30.0})

    async def main() -> tuple[list[Record], Frontier]:
        frontier = Frontier(politeness(delay=0.2), names=names)
        fill(frontier, ["slow.test", "fast.test", "gone.test"], 5)
        return await crawl(frontier, workers=2, fetch=0.01), frontier

    log, frontier = simulate(main)
    fast = sorted(s for s, _, e in log if "fast" in e.url)
    gone = sorted(s for s, _, e in log if "gone" in e.url)
    slow = sorted(s for s, _, e in log if "slow" in e.url)
    assert fast[-1] <= 0.01 + 4 * 0.2 + EPS and gone[-1] <= 0.01 + 4 * 0.2 + EPS
    assert slow[0] >= 30.0  # not ready until its answer came
    assert names.pins["gone.test"] is None  # not resolved: scheduled by host only
    assert frontier.stats.addresses == 1 and frontier.stats.resolving == 0


def test_address_spellings_are_one_server() -> None:
    assert address_key("::ffff:10.0.0.1") == "10.0.0.1"
    assert address_key("2001:DB8:0::1") == "2001:db8::1"


def test_ip_literal_hosts_are_their_own_address_and_robots_counts() -> None:
    names = Names({})

    async def main() -> list[Record]:
        frontier = Frontier(Politeness(delay=0.0, ip_delay=0.5), names=names)
        for port in (8001, 8002):
            for i in range(3):
                assert frontier.put(Entry(url=f"http://[::1]:{port}/{i}", key=f"k{port}{i}"))
        return await crawl(frontier, workers=4, fetch=0.01)

    log = sorted(simulate(main), key=lambda r: r[0])
    assert names.asked == []  # never resolved
    assert len(log) == 8  # two robots.txt and six pages, one address: 0.5 s apart
    assert min(gaps([s for s, _, _ in log])) >= 0.5 - EPS
