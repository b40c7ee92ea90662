"""One crawl sharded over a real Redis Cluster (3 masters, one replica each, on loopback):
exact crawls with 2 and 4 processes, a process and a master killed with SIGKILL, the sharded
Sieve's bound at ten times its capacity, and the figures summed over the groups."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from pathlib import Path

import pytest
from redis.asyncio import Redis

from crawler.cluster import ClusterNode, read_status
from crawler.config.load import Config
from crawler.engine.components import settings
from crawler.frontier.entries import Entry
from crawler.frontier.redis.lua_admit import AdmitFlag
from crawler.testing.fixture import FixtureSite
from crawler.testing.redis_cluster import RedisClusterServer
from tests.support.shared_procs import finish, keys_of, kill_one_mid_crawl, start, write_config


async def key_counts(cluster: RedisClusterServer) -> list[int]:
    """The keys each master holds."""
    counts = []
    for port in cluster.masters():
        client = Redis(host="127.0.0.1", port=port)
        counts.append(int(await client.dbsize()))
        await client.aclose()
    return counts


@pytest.mark.parametrize("processes", [2, 4])
async def test_processes_crawl_the_site_exactly_once_through_the_cluster(
    site: FixtureSite, redis_cluster: RedisClusterServer, redis_cluster_url: str,
    tmp_path: Path, processes: int,
) -> None:  # fmt: skip
    config = write_config(site, tmp_path / "c.toml")
    outs = [tmp_path / f"out{i}.jsonl" for i in range(processes)]
    procs = [await start(site, config, redis_cluster_url, out, "-v") for out in outs]
    errs = await finish(procs, 120)
    assert [p.returncode for p in procs] == [0] * processes, errs
    assert all("12 groups of hosts" in err for err in errs)  # 4 a master, found out
    every = [k for out in outs for k in keys_of(out)]
    assert [k for k, n in Counter(every).items() if n > 1] == []  # no URL fetched twice
    assert set(every) == site.expected() | site.refused()  # its breadth-first truth
    assert sum(n > 0 for n in await key_counts(redis_cluster)) >= 2  # spread over masters
    status = await read_status(redis_cluster_url, "procs")
    assert status["finished"] and status["pages"] == len(every)
    assert status["seen_urls"] >= len(every) and len(status["processes"]) == processes


async def test_a_process_killed_mid_crawl_loses_nothing(
    site: FixtureSite, redis_cluster_url: str, tmp_path: Path
) -> None:
    config = write_config(site, tmp_path / "c.toml", lease_ttl=2.0)
    victim_keys, other_keys = await kill_one_mid_crawl(site, config, redis_cluster_url, tmp_path)
    keys = victim_keys + other_keys
    assert set(keys) == site.expected() | site.refused()
    repeats = [k for k, n in Counter(keys).items() if n > 1]
    assert len(repeats) <= 4 + 2 * 4  # what the victim held leased: its workers and results
    status = await read_status(redis_cluster_url, "procs")
    assert status["finished"] and status["reclaimed"] >= len(repeats)


@pytest.mark.parametrize("victim", ["busiest", "wake"])
async def test_a_master_killed_mid_crawl_fails_over_and_loses_nothing(
    site: FixtureSite, redis_cluster: RedisClusterServer, redis_cluster_url: str,
    tmp_path: Path, victim: str,
) -> None:  # fmt: skip
    # "wake": the master of slot 0, where every process's wake-up subscription is (the first
    # group's channel) as well as the first groups' keys
    config = write_config(site, tmp_path / "c.toml", lease_ttl=5.0)
    outs = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    procs = [await start(site, config, redis_cluster_url, out, "-v") for out in outs]
    async with asyncio.timeout(60):
        while sum(len(keys_of(out)) for out in outs) < 8:
            assert all(p.returncode is None for p in procs), "the crawl ended before the kill"
            await asyncio.sleep(0.02)
    counts = await key_counts(redis_cluster)
    busiest = redis_cluster.masters()[counts.index(max(counts))]
    port = busiest if victim == "busiest" else int(redis_cluster.url.split(":")[2].split("/")[0])
    dead = redis_cluster.kill_master(port)
    redis_cluster.wait_failover(dead)
    errs = await finish(procs, 180)
    assert [p.returncode for p in procs] == [0, 0], errs
    keys = [k for out in outs for k in keys_of(out)]
    assert set(keys) == site.expected() | site.refused()  # nothing lost
    said = "\n".join(errs)
    assert "retrying through the cluster's redirects" in said
    status = await read_status(redis_cluster.url, "procs")
    assert status["finished"]


async def test_max_pages_is_exact_over_the_groups(redis_cluster_url: str) -> None:
    # Two processes admit links of many sites at once: the crawl-wide count stops at the cap.
    config = Config().override("cluster", redis=redis_cluster_url, crawl_id="cap")
    nodes = [ClusterNode(config, settings(config)) for _ in range(2)]
    for node in nodes:
        await node.open(dict)
    batches = [[Entry(url=f"http://s{n}-{i}.test/", key=f"http://s{n}-{i}.test/")
                for i in range(40)] for n in range(6)]  # fmt: skip
    answers = await asyncio.gather(*(nodes[n % 2].admit(batch, 100)
                                     for n, batch in enumerate(batches)))  # fmt: skip
    flags = Counter(flag for batch in answers for flag in batch)
    assert flags[AdmitFlag.ADMITTED] == 100 and flags[AdmitFlag.OVER_LIMIT] == 140
    stats = await nodes[0].frontier.stats()
    assert stats.queued == 100 and stats.hosts == 100
    assert len({nodes[0].keyspace.group_of(b[0].url) for b in batches}) > 1
    # before completions: the admissions are on a replica of each master that took them
    assert nodes[0].frontier.durable == 1 and await nodes[0].frontier.sync()
    assert nodes[0].frontier.replicas.waits >= 1
    assert await nodes[0].frontier.sync() and nodes[0].frontier.replicas.waits >= 1  # none new
    for node in nodes:
        await node.close(dict)


@pytest.mark.parametrize("groups", [12])
async def test_the_sharded_sieve_keeps_its_bound_at_ten_times_capacity(
    redis_cluster_url: str, caplog: pytest.LogCaptureFixture, groups: int
) -> None:
    # The family's growth test through the cluster: 4,000 URLs of capacity in 12 groups, 40,000
    # admitted (exact tier off: the Bloom filters' own answers), 40,000 others looked up.
    p = 0.02
    config = (Config().override("cluster", redis=redis_cluster_url, crawl_id="fp")
              .override("sieve", capacity=4000, error_rate=p, confirm="none"))  # fmt: skip
    node = ClusterNode(config, settings(config))
    await node.open(dict)
    caplog.set_level(logging.WARNING, logger="crawler.sieve")
    urls = [f"http://h{i % 500}.test/p/{i}" for i in range(40_000)]
    flags: Counter[AdmitFlag] = Counter()
    for i in range(0, len(urls), 200):  # ~17 URLs a group a call: a crawl's pages, not a flood
        flags.update(await node.frontier.admit([Entry(url=u, key=u) for u in urls[i : i + 200]]))
    assert set(flags) <= {AdmitFlag.ADMITTED, AdmitFlag.SEEN}  # SEEN: a false positive
    assert flags[AdmitFlag.SEEN] <= 1.25 * p * len(urls)
    figures = node.sieve_stats()
    assert figures["groups"] == groups and figures["count"] == flags[AdmitFlag.ADMITTED]
    assert figures["false_positive_bound"] < p  # each group's compounded bound
    grew = [r for r in caplog.records if "opening stage" in r.message]
    assert len(grew) >= groups  # every group grew past its share of the capacity
    probes = [(f"http://h{i % 500}.test/q/{i}", f"http://h{i % 500}.test/q/{i}")
              for i in range(40_000)]  # fmt: skip
    known = await node.frontier.peek(probes)
    rate = sum(x is True for x in known) / len(known)
    # measured 0.89% against the stages' bound of 0.96% (P 2%); 1.25x the bound is ~6 sigma
    # above. (In batches of 2,000, ~170 URLs a group a call, 1.8%: a stage of 334 URLs overshot
    # by half before the growth check that follows each call.)
    assert rate <= 1.25 * figures["false_positive_bound"]
    await node.close(dict)
