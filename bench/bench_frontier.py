"""Frontier scheduling benchmark, in simulated time (crawler.testing.simtime.SimulatedLoop).

10,000 hosts x 10 URLs, 1 s politeness delay: the ideal is 10,000 requests per simulated second.
Workers fetch by sleeping the simulated latency (no sleep at all when it is 0), so the simulated
rate measures the scheduler's decisions and the real CPU time measures its cost. A row is limited
either by politeness (hosts / delay) or by the workers (workers / latency): "ideal/s" is the lower.

  achieved/s = requests / span, span = until every worker is free and every host may be fetched
  again (so a perfect delay-bound run of 10 URLs x 1 s spans exactly 10 s).
  % best = against the best span possible for the row: with latency, the first round over all
  hosts takes hosts / (workers / latency) seconds, and every host's chain of delays starts then.
  CPU us/pair = real process time of the run / requests (get() + done() + the worker loop).

Priorities "0" is the default crawl (no scoring: breadth-first within each host); "random" gives
every URL a random priority (seeded; a few ties), so each host's queue is a heap and ready hosts
are taken best first: the cost of best-first crawling, at the same politeness.

A last line measures re-prioritizing (rule 10) on the scored frontier: ``queued_priority()`` and
``reprioritize()`` of random queued URLs (half of them raised), and the hand-out of everything
afterwards, stale heap items skipped.

A last-but-one line measures politeness by address: the same hosts on ``ADDRESSES`` addresses
(resolved by the frontier, at once), ``IP_DELAY`` between two starts to one address: the ideal is
addresses / ip_delay requests per simulated second (the host delay allows far more). The new
hosts' resolution runs before the workers start: its CPU is the put's (a host is resolved once,
not per get()). Its workers wait on every hand-out (the address, not the hosts, sets the pace),
which the host-only rows never do: compare with a host-only crawl of the same pace.

Run: .venv/bin/python -m bench.bench_frontier   (BENCH_QUICK=1 for a few-second smoke run)
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from dataclasses import dataclass

from crawler.frontier import Entry, EntryKind, Frontier, host_key
from crawler.frontier.robots import ALLOW_ALL
from crawler.frontier.settings import Politeness, QueueLimits
from crawler.testing.simtime import SimulatedLoop

DELAY = 1.0
ADDRESSES = 100
IP_DELAY = 0.25


class Instant:
    """Names resolved at once: host ``hostN.test`` on address ``10.0.N % ADDRESSES``."""

    async def lookup(self, name: str) -> Resolved:
        return Resolved((f"10.0.{int(name[4:].split('.')[0]) % ADDRESSES}.1",))

    def pin(self, name: str, address: str | None) -> None:
        pass


@dataclass(frozen=True)
class Resolved:
    addresses: tuple[str, ...]
    ttl: float | None = None


def make_entries(hosts: int, per_host: int, scored: bool = False) -> list[Entry]:
    rng = random.Random(15)
    return [
        Entry(
            url=f"http://host{h}.test/page/{i}",
            key=f"http://host{h}.test/page/{i}",
            depth=i,
            priority=round(rng.random(), 3) if scored else 0.0,
        )
        for i in range(per_host)
        for h in range(hosts)
    ]


def run_case(
    entries: list[Entry], workers: int, latency: float, robots: bool, by_address: bool = False
) -> tuple[int, float, float, float]:
    """Returns (requests, span in simulated s, CPU us per get+done pair, CPU us per put)."""
    last_start: dict[str, float] = {}
    ends: list[float] = [0.0]
    requests = 0

    async def worker(frontier: Frontier, loop: asyncio.AbstractEventLoop) -> None:
        nonlocal requests
        while (entry := await frontier.get()) is not None:
            last_start[host_key(entry.url)] = loop.time()
            requests += 1
            if latency:
                await asyncio.sleep(latency)
            if entry.kind is EntryKind.ROBOTS:
                frontier.set_robots(entry.url, ALLOW_ALL)
            ends.append(loop.time())
            frontier.done(entry)

    async def main() -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        politeness = Politeness(delay=DELAY, respect_robots=robots, ip_delay=IP_DELAY)
        frontier = Frontier(
            politeness,
            QueueLimits(max_queued=len(entries) + 1),
            names=Instant() if by_address else None,
        )
        t0 = time.process_time()
        for entry in entries:
            frontier.put(entry)
        await asyncio.sleep(0)  # by address: the new hosts resolved (at once), as part of put
        put_cpu = time.process_time() - t0
        t0 = time.process_time()
        await asyncio.gather(*(worker(frontier, loop) for _ in range(workers)))
        run_cpu = time.process_time() - t0
        assert len(frontier) == 0, frontier
        assert frontier.in_flight == 0, frontier
        return put_cpu, run_cpu

    with asyncio.Runner(loop_factory=SimulatedLoop) as runner:
        put_cpu, run_cpu = runner.run(main())
    span = max(max(last_start.values()) + DELAY, max(ends))
    _LAST_START[0] = max(last_start.values())
    return requests, span, run_cpu / requests * 1e6, put_cpu / len(entries) * 1e6


def reprioritize_cost(entries: list[Entry]) -> str:
    """CPU per queued_priority() + reprioritize() pair, and per get()+done() after the raises."""
    rng = random.Random(16)
    picks = [rng.choice(entries) for _ in range(len(entries))]

    async def main() -> tuple[float, float, int]:
        frontier = Frontier(
            Politeness(respect_robots=False), QueueLimits(max_queued=len(entries) + 1)
        )
        for entry in entries:
            frontier.put(entry)
        t0 = time.process_time()
        for i, entry in enumerate(picks):
            current = frontier.queued_priority(entry.url, entry.key)
            assert current is not None
            frontier.reprioritize(entry.url, entry.key, current + (i & 1))
        raise_cpu = time.process_time() - t0
        t0 = time.process_time()
        handed = 0
        while (got := await frontier.get()) is not None:
            handed += 1
            frontier.done(got)
        return raise_cpu, time.process_time() - t0, handed

    with asyncio.Runner(loop_factory=SimulatedLoop) as runner:
        raise_cpu, drain_cpu, handed = runner.run(main())
    assert handed == len(entries)
    return (f"re-prioritizing: {len(picks):,} queued_priority()+reprioritize() pairs on the scored "
            f"frontier, {raise_cpu / len(picks) * 1e6:.2f} CPU us each; then get()+done() "
            f"{drain_cpu / handed * 1e6:.2f} CPU us each (1 worker, no delay, stale items "
            f"skipped)")  # fmt: skip


def main() -> None:
    quick = os.environ.get("BENCH_QUICK") == "1"
    hosts, per_host = (500, 4) if quick else (10_000, 10)
    unscored, scored = make_entries(hosts, per_host), make_entries(hosts, per_host, scored=True)
    cases = [  # workers, simulated latency (s), robots.txt on, random priorities
        (1, 0.0, False, False),
        (32, 0.0, False, False),
        (256, 0.020, False, False),
        (32, 0.020, False, False),
        (32, 0.0, True, False),
        (1, 0.0, False, True),
        (32, 0.0, False, True),
        (256, 0.020, False, True),
        (32, 0.0, True, True),
    ]
    print(f"frontier scheduling: {hosts:,} hosts x {per_host} URLs, delay {DELAY:g} s, "
          f"simulated time")  # fmt: skip
    header = (
        f"{'workers':>7} {'latency':>8} {'robots':>6} {'priorities':>10} {'requests':>9} "
        f"{'sim span s':>10} "
        f"{'ideal/s':>9} {'achieved/s':>10} {'% ideal':>8} {'% best':>7} "
        f"{'CPU us/pair':>11} {'CPU us/put':>10}"
    )
    print(header)
    print("-" * len(header))
    for workers, latency, robots, random_priorities in cases:
        entries = scored if random_priorities else unscored
        requests, span, pair_us, put_us = run_case(entries, workers, latency, robots)
        per_host_requests = requests / hosts
        delay_bound = hosts / DELAY
        ideal = min(delay_bound, workers / latency) if latency else delay_bound
        ideal_span = max(per_host_requests * DELAY, requests / ideal)
        achieved = requests / span
        capacity = workers / latency if latency else float("inf")
        best_span = max(per_host_requests * DELAY + max(0.0, hosts / capacity - latency),
                        requests / capacity)  # fmt: skip
        print(
            f"{workers:>7} {latency * 1000:>6.0f}ms {'yes' if robots else 'no':>6} "
            f"{'random' if random_priorities else '0':>10} {requests:>9,} {span:>10.3f} "
            f"{requests / ideal_span:>9,.0f} {achieved:>10,.0f} "
            f"{100 * ideal_span / span:>7.2f}% {100 * best_span / span:>6.2f}% "
            f"{pair_us:>11.2f} {put_us:>10.2f}"
        )
    print(address_cost(hosts, unscored, scored))
    print(reprioritize_cost(scored))


def address_cost(hosts: int, unscored: list[Entry], scored: list[Entry]) -> str:
    """The by-address rows: the rate against its ideal (addresses / ip_delay), and the CPU."""
    lines = [f"by address: {hosts:,} hosts on {ADDRESSES} addresses, ip_delay {IP_DELAY:g} s, "
             f"delay {DELAY:g} s, 32 workers, no latency"]  # fmt: skip
    for name, entries in (("0", unscored), ("random", scored)):
        requests, _, pair_us, put_us = run_case(entries, 32, 0.0, False, by_address=True)
        ideal = ADDRESSES / IP_DELAY
        span = requests / ideal  # the last start of each address: (n - 1) * ip_delay + resolve
        achieved = requests / max(span, _LAST_START[0] + IP_DELAY)
        lines.append(f"  priorities {name:>6}: {requests:,} requests, ideal {ideal:,.0f}/s, "
                     f"achieved {achieved:,.1f}/s ({100 * achieved / ideal:.2f}% of ideal), "
                     f"{pair_us:.2f} CPU us/pair, {put_us:.2f} CPU us/put")  # fmt: skip
    return "\n".join(lines)


_LAST_START = [0.0]  # the last request start of the latest run_case


if __name__ == "__main__":
    main()
