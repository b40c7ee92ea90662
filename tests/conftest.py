"""Fixtures every test folder shares, and the markers that pick a subset of the suite.

The folders under tests/ mirror crawler/; helpers shared by several modules live in
tests/support/, never in another test module. Markers (`pytest -m`, see docs/quickstart.md):

- `redis`: the test starts Debian's redis-server (it uses the `redis_server` or `redis_cluster`
  fixture, or its module starts a `RedisServer` or `RedisClusterServer` itself): marked here, from
  the fixtures a test asks for;
- `browser`: the test drives the real Chromium (its module uses `requires_browser`): marked here;
- `slow`: marked by hand on each test that takes over about a second (a crawl in a subprocess, a
  real server's timing, a large property run); marked here on a test of a Redis Cluster (a
  `redis_cluster` fixture, or a `RedisClusterServer` in its module): one takes ~2 s to form.

`make test-fast` runs the rest: the edit-and-test loop.

Simulated time: an async test marked `simtime` (`@pytest.mark.simtime`, or `pytestmark` for a
whole module) runs on `crawler.testing.simtime.SimulatedLoop`, and so do the async fixtures it
uses: the loop's clock jumps to the next timer whenever nothing is runnable, so `asyncio.sleep(30)`
returns at once with `loop.time()` exactly 30 s later. Use it wherever the crawler's own timing is
the subject (politeness gaps, backoff, leases, retries, the outage gate): give the component the
loop's clock (`clock=asyncio.get_running_loop().time`) and assert exact times. No real I/O on it
(no sockets, subprocesses or threads to wait for): where a real server's timing is the point, use
real time with a generous watchdog and no tight gap. The mechanism is pytest-asyncio's
`pytest_asyncio_loop_factories` hook below (one factory per test, so test ids are unchanged).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterator, Mapping

import pytest
from hypothesis import settings
from pytest_asyncio import is_async_test

from crawler.testing.fixture import FixtureSite
from crawler.testing.redis_cluster import RedisClusterServer
from crawler.testing.redis_server import RedisServer
from crawler.testing.simtime import SimulatedLoop

# Property tests draw the same examples on every run (a fixed seed): a failure found once is
# found again, and CI is not a lottery over examples. `HYPOTHESIS_PROFILE=explore` draws anew.
settings.register_profile("fixed", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fixed"))


CLUSTER_FIXTURES = frozenset({"redis_cluster", "redis_cluster_url"})
REDIS_FIXTURES = frozenset({"redis_server", "redis_url"}) | CLUSTER_FIXTURES


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "simtime: runs on crawler.testing.simtime.SimulatedLoop (tests/conftest.py)"
    )


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    """The event loop of each async test: simulated time for `simtime`, the usual one else."""
    if item.get_closest_marker("simtime") is not None:
        return {"simtime": SimulatedLoop}
    return {"asyncio": asyncio.new_event_loop}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("simtime") is not None and not is_async_test(item):
            raise pytest.UsageError(f"{item.nodeid}: the simtime marker is for async tests")
        module = vars(item.module) if isinstance(item, pytest.Function) else {}
        fixtures = set(getattr(item, "fixturenames", ()))
        cluster = bool(fixtures & CLUSTER_FIXTURES) or "RedisClusterServer" in module
        if fixtures & REDIS_FIXTURES or "RedisServer" in module or cluster:
            item.add_marker(pytest.mark.redis)
        if cluster:  # one worker runs them all (`--dist loadgroup`): one cluster of 6 nodes
            item.add_marker(pytest.mark.slow)  # at a time on the machine, not one a worker
            item.add_marker(pytest.mark.xdist_group("redis-cluster"))
        if "requires_browser" in module:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(autouse=True)
def _crawler_logger() -> Iterator[None]:
    """The `crawler` logger as it was: the command run in-process (`crawler.cli.main.main`)
    gives it a handler of its own and stops its propagation, which would hide the records of
    the tests that run after it on the same worker from `caplog`."""
    logger = logging.getLogger("crawler")
    saved = logger.handlers[:], logger.level, logger.propagate
    yield
    logger.handlers[:], logger.level, logger.propagate = saved[0], saved[1], saved[2]


@pytest.fixture
async def site() -> AsyncIterator[FixtureSite]:
    """The fixture site on a free loopback port, with a short Crawl-delay."""
    async with FixtureSite(crawl_delay=0.02, slow=0.1) as s:
        yield s


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    """A throwaway Debian redis-server on a free loopback port, one per test module."""
    with RedisServer() as server:
        yield server


@pytest.fixture
async def redis_url(redis_server: RedisServer) -> str:
    """The module's redis-server, emptied for this test."""
    from redis.asyncio import Redis  # redis-py: only the tests of a shared crawl need it

    client = Redis.from_url(redis_server.url)
    await client.flushall()
    await client.aclose()
    return redis_server.url


@pytest.fixture(scope="module")
def redis_cluster() -> Iterator[RedisClusterServer]:
    """A throwaway Redis Cluster (3 masters, one replica each) on loopback, one per test module."""
    with RedisClusterServer() as cluster:
        yield cluster


@pytest.fixture
def redis_cluster_url(redis_cluster: RedisClusterServer) -> str:
    """The module's Redis Cluster, whole again (a node killed by a test before is back, as a
    replica) and emptied for this test: redis:// of a master, for a cluster client to start from."""
    redis_cluster.revive()
    redis_cluster.flushall()
    return redis_cluster.url
