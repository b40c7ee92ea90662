"""Real `crawl --redis` processes sharing one crawl of the fixture site (and one kill -9).

The fixture site is served by this test's event loop and logs every request with its start time
(server side), so politeness is measured across processes; each process writes its own -o file.
"""

from __future__ import annotations

import asyncio
import io
import json
import signal
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawler.cluster import format_status, read_status
from crawler.testing.fixture import FixtureSite
from crawler.testing.redis_server import RedisServer
from tests.support.shared_procs import (
    DELAY,
    URLS,
    finish,
    keys_of,
    kill_one_mid_crawl,
    start,
    write_config,
)
from tests.support.spacing import assert_spaced


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.mark.slow
async def test_three_processes_crawl_the_site_once_politely(
    site: FixtureSite, redis: RedisServer, tmp_path: Path
) -> None:
    """Real time on purpose: three crawl processes, their requests reaching a real server. The
    exact gaps between instances are asserted on an injected clock by
    tests/frontier/test_frontier_redis.py::test_delay_held_across_two_instances_taking_turns."""
    config = write_config(site, tmp_path / "c.toml")
    outs = [tmp_path / f"out{i}.jsonl" for i in range(3)]
    procs = [await start(site, config, redis.url, out, "-v") for out in outs]
    errs = await finish(procs, 120)
    assert [p.returncode for p in procs] == [0, 0, 0], errs
    per_process = [keys_of(out) for out in outs]
    every = [k for keys in per_process for k in keys]
    assert [k for k, n in Counter(every).items() if n > 1] == []  # no URL fetched twice
    assert set(every) == site.expected() | site.refused()  # the union is the ground truth
    assert sum(bool(keys) for keys in per_process) >= 2  # the work was shared
    starts: dict[str, list[float]] = {}
    for request in site.requests:
        starts.setdefault(request.host, []).append(request.time)
    for host, times in starts.items():  # one politeness per host across processes
        assert_spaced(times, DELAY, host)  # measured on arrival: no tight gap
    status = await read_status(redis.url, "procs")
    assert status["finished"] and status["pages"] == len(every)
    assert len(status["processes"]) == 3
    # a process joining the finished crawl has nothing to do, and says so
    late = await start(site, config, redis.url, tmp_path / "late.jsonl", "-v")
    _, err = await late.communicate()
    assert late.returncode == 0 and keys_of(tmp_path / "late.jsonl") == []
    assert "has nothing left to do" in err.decode()


@pytest.mark.slow
async def test_a_process_killed_mid_crawl_loses_nothing(
    site: FixtureSite, redis: RedisServer, tmp_path: Path
) -> None:
    config = write_config(site, tmp_path / "c.toml", lease_ttl=2.0)
    victim_keys, other_keys = await kill_one_mid_crawl(site, config, redis.url, tmp_path)
    assert set(victim_keys) | set(other_keys) == site.expected() | site.refused()
    repeats = [k for k, n in Counter(victim_keys + other_keys).items() if n > 1]
    # a repeat is a URL the victim held leased when it died (fetched, not yet released)
    assert len(repeats) <= 4 + 2 * 4  # its workers + results waiting (2 x concurrency)
    status = await read_status(redis.url, "procs")
    assert status["finished"] and status["reclaimed"] >= len(repeats)


@pytest.mark.slow
async def test_an_interrupted_process_rejoins_and_the_crawl_completes(
    site: FixtureSite, redis: RedisServer, tmp_path: Path
) -> None:
    config = write_config(site, tmp_path / "c.toml")
    first_out, second_out = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    first = await start(site, config, redis.url, first_out, "-v")
    async with asyncio.timeout(60):
        while len(keys_of(first_out)) < 5:
            assert first.returncode is None, "the crawl finished before the interrupt"
            await asyncio.sleep(0.02)
    first.send_signal(signal.SIGINT)
    (err,) = await finish([first], 60)
    assert first.returncode == 130
    assert "goes on in Redis; rejoin it with:" in err
    status = await read_status(redis.url, "procs")
    assert not status["finished"] and status["leased"] == 0  # nothing left leased: given back
    second = await start(site, config, redis.url, second_out)
    await finish([second], 120)
    assert second.returncode == 0
    keys = keys_of(first_out) + keys_of(second_out)
    assert set(keys) == site.expected() | site.refused()
    assert len(keys) == len(set(keys))  # a clean stop repeats nothing


@pytest.mark.slow
async def test_two_focused_processes_share_one_fetch_budget(
    site: FixtureSite, redis: RedisServer, tmp_path: Path
) -> None:
    config = write_config(site, tmp_path / "c.toml")
    outs = [tmp_path / f"focus{i}.jsonl" for i in range(2)]
    focus = ("--focus", "page", "--max-pages", "12")
    procs = [await start(site, config, redis.url, out, "-v", *focus) for out in outs]
    errs = await finish(procs, 120)
    assert [p.returncode for p in procs] == [0, 0], errs
    rows = [json.loads(line) for out in outs for line in out.read_text().splitlines()]
    keys = [URLS.canonicalize(r["url"]) for r in rows]
    assert len(keys) == len(set(keys))  # no URL fetched twice
    pages = [r for r in rows if not (r["error"] or "").startswith("robots")]
    assert 12 <= len(pages) <= 12 + 2 * 4  # one budget; each process's claims in flight past it
    assert any(r["relevance"] is not None for r in rows)  # rated by each process's scorer
    status = await read_status(redis.url, "procs")
    assert status["pages"] == len(rows) and not status["finished"]  # URLs left queued
    assert status["scored"] >= 1 and 0 <= status["relevant"] <= status["scored"]
    printed = io.StringIO()
    format_status(status, printed)
    rated = f"focus: {status['scored']} pages rated, {status['relevant']} relevant"
    assert rated in printed.getvalue()
    assert any("fetch budget of 12 pages (max_pages) spent" in e for e in errs)
