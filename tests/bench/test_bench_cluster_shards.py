"""The cluster column's plumbing (bench/bench_cluster_shards.py, bench/crawl_durable_off.py), on
real Redis: the synthetic admission batches are distinct and shaped like a crawl's, the memory
figures tell queued from seen and the exact tier's share, the stream admits every URL into
the cluster and reads each master's memory and CPU, the Sieve's size at N URLs is its stages',
and the bench-only knob turns the wait for replicas off."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from urllib.parse import urlsplit

import pytest
from redis.asyncio import RedisCluster

from bench import bench_cluster_shards as shards
from bench.crawl_durable_off import _open_not_durable
from crawler.cluster import ClusterNode
from crawler.config.load import Config
from crawler.engine.components import settings
from crawler.frontier.redis.lua_admit import AdmitFlag
from crawler.sieve.bloom import stage_params, stage_shape
from crawler.testing.redis_cluster import RedisClusterServer
from crawler.testing.redis_server import RedisServer


def test_the_batches_are_distinct_urls_shaped_like_a_crawls_links() -> None:
    batches = list(shards.page_batches(5_000, 40, seed=3))
    urls = [e.url for batch in batches for e in batch]
    assert len(urls) == len(set(urls)) == 5_000
    assert all(50 <= len(batch) <= 200 for batch in batches[:-1])
    hosts = {urlsplit(u).hostname for u in urls}
    assert 30 <= len(hosts) <= 40
    # most links of a page are on the page's own host
    home = sum(urlsplit(e.url).hostname == urlsplit(e.parent or "").hostname
               for batch in batches for e in batch)  # fmt: skip
    assert 0.75 < home / len(urls) < 0.9
    assert next(shards.page_batches(500, 40, seed=3)) == batches[0]  # deterministic


def test_the_sieve_at_n_urls_is_the_size_of_its_stages() -> None:
    s = Config().sieve

    def stage(i: int, capacity: int) -> int:
        return stage_shape(*stage_params(capacity, s.error_rate, s.ratio, s.growth, i))[0] // 8

    assert shards.sieve_bytes(1000, 1000) == stage(0, 1000)
    assert shards.sieve_bytes(1001, 1000) == stage(0, 1000) + stage(1, 1000)
    assert shards.sieve_bytes(3001, 1000) == sum(stage(i, 1000) for i in range(3))


async def test_memory_tells_queued_from_seen_and_the_exact_tier(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shards, "MEMORY_URLS", 3_000)
    monkeypatch.setattr(shards, "MEMORY_HOSTS", 50)
    url = redis_server.url
    figures = {(exact, seen): await shards.url_memory(url, [url], exact=exact, seen=seen)
               for exact in (False, True) for seen in (False, True)}  # fmt: skip
    for exact in (False, True):
        assert figures[exact, False] > figures[exact, True] + 50  # the queue goes once drained
    assert figures[True, True] > figures[False, True] + 8  # the fingerprints stay


def test_the_stream_admits_every_url_into_every_master() -> None:
    with RedisClusterServer(masters=3, replicas=1) as cluster:
        figures = shards.stream(cluster, 3_000)
    assert figures["flags"][AdmitFlag.ADMITTED] == 3_000
    assert sum(figures["flags"].values()) == 3_000
    assert len(figures["memory"]) == len(figures["cpu"]) == 3
    assert all(m > 0 for m in figures["memory"]) and all(c > 0 for c in figures["cpu"])


async def replicas_listed(url: str, count: int) -> None:
    """Until CLUSTER SLOTS lists `count` replicas: Redis leaves out a replica whose replication
    offset is still 0 (a cluster seconds old), and a process decides on waiting at its start."""
    deadline = time.monotonic() + 60
    while True:
        client = RedisCluster.from_url(url)
        await client.initialize()
        listed = len(client.get_replicas())
        await client.aclose()
        if listed >= count:
            return
        assert time.monotonic() < deadline, f"{listed} replicas listed, not {count}"
        await asyncio.sleep(0.5)


@pytest.mark.slow
async def test_the_knob_turns_the_wait_for_replicas_off(
    redis_cluster_url: str, redis_cluster: RedisClusterServer
) -> None:
    await replicas_listed(redis_cluster_url, len(redis_cluster.replicas()))
    durable: Counter[int] = Counter()
    for i, opener in enumerate((ClusterNode.open, _open_not_durable)):
        config = Config().override("cluster", redis=redis_cluster_url, crawl_id=f"knob{i}")
        node = ClusterNode(config, settings(config))
        await opener(node, dict)
        durable[node.frontier.durable] += 1
        await node.close(dict)
    assert durable == Counter({1: 1, 0: 1})
