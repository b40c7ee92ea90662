"""The Sieve in Redis (a real redis-server on loopback) against the in-memory Sieve."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Iterator

import pytest
from bitarray import bitarray
from redis.asyncio import Redis

from crawler.sieve import Sieve
from crawler.sieve.redis import SEGMENT_BITS, RedisSieve, SharedStateError
from crawler.testing.redis_server import RedisServer


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    with RedisServer() as s:
        yield s


@pytest.fixture
async def client(server: RedisServer) -> AsyncIterator[Redis]:
    r = Redis.from_url(server.url)
    await r.flushall()
    yield r
    await r.aclose()


def keys(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [f"http://h{rng.randrange(50)}.test/p/{rng.getrandbits(48):x}" for _ in range(n)]


def bits_of(stage_bytes: bytes) -> bitarray:
    out = bitarray(endian="big")  # Redis bit offsets: most significant bit of byte 0 first
    out.frombytes(stage_bytes)
    return out


async def test_same_answers_and_bits_as_the_in_memory_sieve(client: Redis) -> None:
    items = keys(3000)
    items += items[:500]  # repeats are "seen"
    local = Sieve(capacity=10_000, error_rate=1e-3)
    shared = RedisSieve(client, "t:", capacity=10_000, error_rate=1e-3)
    await shared.open()
    got: list[bool] = []
    for i in range(0, len(items), 97):
        got += await shared.add_many(items[i : i + 97])
    assert got == local.add_many(items)
    assert got.count(True) == 3000
    await shared.refresh()
    assert shared.count == local.count == 3000
    stage = local._stages[0]
    redis_bits = bits_of(await shared.stage_bytes(0))
    assert redis_bits.count() == stage.set_bits > 0
    assert redis_bits.tolist() == stage.bits.tolist()
    assert shared.approx_items == pytest.approx(local.approx_items)


async def test_growth_follows_the_in_memory_stages_and_warns(
    client: Redis, caplog: pytest.LogCaptureFixture
) -> None:
    items = keys(1200, seed=1)
    local = Sieve(capacity=100, error_rate=0.01, ratio=0.5, growth=2)
    shared = RedisSieve(client, "g:", capacity=100, error_rate=0.01, ratio=0.5, growth=2)
    await shared.open()
    caplog.set_level(logging.WARNING, logger="crawler.sieve")
    got = [await shared.add(key) for key in items]  # one key at a time: growth at the same key
    assert got == [local.add(key) for key in items]
    await shared.refresh()
    assert shared.stages == len(local.stages) >= 4
    for i, stage in enumerate(local._stages):
        assert bits_of(await shared.stage_bytes(i)).tolist() == stage.bits.tolist()
    assert shared.false_positive_bound == pytest.approx(local.false_positive_bound)
    assert shared.false_positive_bound < 0.01
    grew = [r for r in caplog.records if r.module == "redis" and "opening stage" in r.message]
    assert len(grew) == shared.stages - 1


@pytest.mark.slow
async def test_two_processes_adding_the_same_new_keys_exactly_one_wins(
    server: RedisServer, client: Redis
) -> None:
    items = keys(4000, seed=2)
    other = Redis.from_url(server.url)  # a second connection: another process's view
    try:
        a = RedisSieve(client, "c:", capacity=1500, error_rate=1e-3)
        b = RedisSieve(other, "c:", capacity=1500, error_rate=1e-3)
        await a.open()
        await b.open()

        # Both add every key, in batches, interleaved by the event loop; the stage count grows
        # past 0 on the way (capacity 1500), so the stale-stage path is exercised too.
        async def run(sieve: RedisSieve, order: list[str]) -> dict[str, bool]:
            out: dict[str, bool] = {}
            for i in range(0, len(order), 50):
                batch = order[i : i + 50]
                out.update(zip(batch, await sieve.add_many(batch), strict=True))
            return out

        rng = random.Random(3)
        shuffled = items[:]
        rng.shuffle(shuffled)
        got_a, got_b = await asyncio.gather(run(a, items), run(b, shuffled))
    finally:
        await other.aclose()
    winners = [got_a[k] + got_b[k] for k in items]
    assert set(winners) <= {0, 1}
    lost = winners.count(0)  # both said "seen": only a Bloom false positive can do that
    assert lost <= 0.01 * len(items)
    await a.refresh()
    assert a.stages >= 2


async def test_other_settings_are_refused_by_name(client: Redis) -> None:
    await RedisSieve(client, "s:", capacity=1000, error_rate=1e-3).open()
    other = RedisSieve(client, "s:", capacity=2000, error_rate=1e-3, ratio=0.5)
    with pytest.raises(SharedStateError, match=r"sieve\.capacity .*sieve\.ratio"):
        await other.open()
    await RedisSieve(client, "s:", capacity=1000, error_rate=1e-3).open()  # same: joins


async def test_redis_gone_is_a_clear_error(server: RedisServer) -> None:
    dead = Redis.from_url(f"redis://127.0.0.1:{server.port + 1 if server.port < 65535 else 1}/0")
    try:
        with pytest.raises(SharedStateError, match="Redis"):
            await RedisSieve(dead, "x:").open()
    finally:
        await dead.aclose()


def test_parameters_are_validated() -> None:
    with pytest.raises(ValueError, match="ratio"):
        RedisSieve(Redis(), "v:", ratio=1.5)


async def test_a_process_behind_on_stages_settles_against_the_newest(
    server: RedisServer, client: Redis
) -> None:
    other = Redis.from_url(server.url)
    try:
        a = RedisSieve(client, "b:", capacity=100, error_rate=0.01)
        b = RedisSieve(other, "b:", capacity=100, error_rate=0.01)
        await a.open()
        await b.open()  # b knows stage 0 only, and will not look again before its next batch
        for key in keys(400, seed=4):
            await a.add(key)
        assert a.stages >= 3 and b.stages == 1
        taken_by_a, new = "http://late.test/a", "http://late.test/b"
        assert await a.add(taken_by_a)
        assert await b.add_many([taken_by_a, new]) == [False, True]
        assert b.stages == a.stages
        assert await a.add(new) is False
    finally:
        await other.aclose()


async def test_a_stage_over_one_redis_string_is_split_into_segments(client: Redis) -> None:
    # 1,092 MiB, over a Redis string's 512 MB: 18 segments of at most 64 MiB, laid out without
    # touching them; an add writes one segment only, every probe of the key in it
    sieve = RedisSieve(client, "big:", capacity=500_000_000, error_rate=0.001)
    await sieve.open()
    assert sieve.segment_layout() == [(18, 63_632_624)]
    assert sieve.size_in_bytes == 18 * 63_632_624 >= 1_092 * 2**20
    assert SEGMENT_BITS // 8 >= 63_632_624
    assert await sieve.add("http://one.test/") is True
    assert await sieve.add("http://one.test/") is False
    assert await sieve.contains_many(["http://one.test/", "http://two.test/"]) == [True, False]
    meta = {b"big:sieve:meta", b"big:sieve:count", b"big:sieve:bits:0", b"big:sieve:stages"}
    segments = set(await client.keys("big:sieve:*")) - meta
    assert len(segments) == 1
    await client.flushall()  # give the ~60 MiB back at once


@pytest.mark.slow
async def test_segmented_stages_keep_the_bound_at_ten_times_capacity(
    client: Redis, caplog: pytest.LogCaptureFixture
) -> None:
    # the family's growth test through Redis, every stage split into 4,096-bit segments
    p = 0.02
    sieve = RedisSieve(client, "fp:", capacity=4000, error_rate=p, segment_bits=4096)
    await sieve.open()
    caplog.set_level(logging.WARNING, logger="crawler.sieve")
    items = keys(40_000, seed=5)
    for i in range(0, len(items), 1000):
        await sieve.add_many(items[i : i + 1000])
    await sieve.refresh()
    layout = sieve.segment_layout()
    assert all(n > 1 and size <= 512 for n, size in layout) and layout[-1][0] >= 50
    assert sieve.false_positive_bound < p
    grew = [r for r in caplog.records if "opening stage" in r.message]
    assert len(grew) == sieve.stages - 1 >= 3
    assert all(await sieve.contains_many(items[:2000]))
    probes = [f"http://probe.test/{i}" for i in range(40_000)]
    rate = sum(await sieve.contains_many(probes)) / len(probes)
    assert rate <= 1.25 * p  # 40,000 probes: ~800 expected at P, a 1.25 P margin is ~5 sigma


async def test_a_shared_sieve_of_the_one_string_format_is_refused(client: Redis) -> None:
    # format 1 kept a stage of up to 512 MB in one string: read as segments it would be wrong
    await client.hset("old:sieve:meta", "format", "1")
    with pytest.raises(SharedStateError, match=r"sieve\.format \(shared: 1, here: 2\)"):
        await RedisSieve(client, "old:").open()
