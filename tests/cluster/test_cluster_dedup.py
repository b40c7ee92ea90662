"""Content dedup in a crawl shared through Redis: one index for every process.

The Redis index must answer as the in-memory one does (`ContentIndex`), page after page; two
crawlers of one shared crawl (each with its own connection and owner id, as two processes)
must know each other's pages as originals, and not follow a duplicate's links when asked not
to. Against a real `redis-server` on loopback.
"""

from __future__ import annotations

import asyncio
import io
import random

import pytest
from redis.asyncio import Redis

from crawler.cluster import ClusterNode
from crawler.cluster.status import format_status, read_status
from crawler.config.load import Config
from crawler.content import ContentIndex, Fingerprint
from crawler.content.redis import RedisContentIndex
from crawler.engine.components import settings
from crawler.engine.crawler import Crawler
from crawler.errors import SharedStateError
from crawler.output.results import CrawlResult
from tests.support.content import ORIG, flip, site_handler
from tests.support.server import serve


def fingerprints(rng: random.Random, k: int, n: int) -> list[tuple[str, Fingerprint]]:
    """(URL, fingerprint) pages: new contents, exact copies, near copies (0..k+2 bits
    flipped, crowded in one block or spread), pages fetched again (their own URL), and pages
    with no word (simhash 0)."""
    pages: list[tuple[str, Fingerprint]] = []
    for i in range(n):
        roll = rng.random()
        if pages and roll < 0.15:
            pages.append(rng.choice(pages))  # the same page fetched again
        elif pages and roll < 0.3:
            pages.append((f"http://m.test/{i}", rng.choice(pages)[1]))  # an exact copy
        elif pages and roll < 0.75:
            base = rng.choice(pages)[1].simhash
            lo = rng.choice([0, 8, 16, 40])
            where = range(lo, lo + 16) if rng.random() < 0.5 else range(64)
            sim = flip(base, rng.sample(where, rng.randint(0, k + 2)))
            pages.append((f"http://n.test/{i}", Fingerprint(rng.randbytes(16), sim)))
        else:
            sim = 0 if roll > 0.97 else rng.getrandbits(64)
            pages.append((f"http://a.test/{i}", Fingerprint(rng.randbytes(16), sim)))
    return pages


@pytest.mark.parametrize("k", [0, 1, 2, 3, 4])
async def test_the_shared_index_answers_as_the_in_memory_one(redis_url: str, k: int) -> None:
    client = Redis.from_url(redis_url)
    try:
        shared, memory = RedisContentIndex(client, "crawl:t:", k), ContentIndex(k)
        kinds = {"exact": 0, "near": 0}
        for url, fp in fingerprints(random.Random(k), k, 600):
            expected = memory.check(url, fp)
            assert await shared.check(url, fp) == expected, (url, fp)
            kinds["exact"] += expected.duplicate_of is not None
            kinds["near"] += expected.near_duplicate_of is not None
        assert await shared.pages() == len(memory)
        assert kinds["exact"] > 50 and kinds["near"] > 50  # both kinds were exercised
    finally:
        await client.aclose()


async def test_pages_alike_but_for_numbers_do_not_crowd_a_shared_bucket(redis_url: str) -> None:
    # one simhash for many distinct contents (or simhash 0): filed once, so the bucket every
    # insert rewrites (and Redis is blocked meanwhile, for every process) stays one record
    client = Redis.from_url(redis_url)
    try:
        index, rng = RedisContentIndex(client, "crawl:t:", 3), random.Random(8)
        for sim in (0x0123_4567_89AB_CDEF, 0):
            for i in range(300):
                match = await index.check(f"http://c.test/{sim}/{i}",
                                          Fingerprint(rng.randbytes(16), sim))  # fmt: skip
                first = None if i == 0 or sim == 0 else f"http://c.test/{sim}/0"
                assert match == (None, first)
            bucket = await client.hstrlen("crawl:t:content:t0", str(sim & 0xFFFF))
            assert bucket == 12  # one record
        assert await index.pages() == 600
    finally:
        await client.aclose()


async def test_the_shared_index_checks_its_arguments(redis_url: str) -> None:
    client = Redis.from_url(redis_url)
    try:
        with pytest.raises(ValueError, match="distance"):
            RedisContentIndex(client, "crawl:t:", 11)
        index = RedisContentIndex(client, "crawl:t:")
        with pytest.raises(ValueError, match="16 bytes"):
            await index.check("http://a.test/", Fingerprint(b"x", 1))
    finally:
        await client.aclose()


async def test_a_lost_redis_is_a_shared_state_error() -> None:
    client = Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=1.0)
    try:
        index = RedisContentIndex(client, "crawl:t:")
        with pytest.raises(SharedStateError, match="Redis"):
            await index.check("http://a.test/", Fingerprint(b"A" * 16, 1))
    finally:
        await client.aclose()


def _config(redis_url: str, port: int, *, follow: bool) -> Config:
    config = Config().override("fetch", resolve={"site.test": "127.0.0.1"})
    config = config.override("politeness", delay=0.0, ip_delay=0.0, respect_robots=False)
    config = config.override("crawl", concurrency=2)
    config = config.override("dedup", enabled=True, follow_duplicates=follow)
    return config.override("cluster", redis=redis_url, crawl_id="d")


async def _crawl(crawler: Crawler, seeds: list[str]) -> list[CrawlResult]:
    async with crawler:
        return [r async for r in crawler.crawl(seeds)]


async def _two_processes(
    redis_url: str, *, follow: bool
) -> tuple[str, Crawler, Crawler, dict[str, CrawlResult]]:
    async with serve(site_handler()) as port:
        base = f"http://site.test:{port}"
        seeds = [f"{base}/orig/", f"{base}/mirror/"]
        a = Crawler(_config(redis_url, port, follow=follow))
        b = Crawler(_config(redis_url, port, follow=follow))
        ra, rb = await asyncio.gather(_crawl(a, seeds), _crawl(b, seeds))
    paths = [r.url.removeprefix(base) for r in ra + rb]
    assert len(paths) == len(set(paths)), "a URL was fetched by both"
    assert ra and rb, "both took part"
    return base, a, b, {r.url.removeprefix(base): r for r in ra + rb}


async def test_processes_know_each_others_pages(redis_url: str) -> None:
    _, a, b, results = await _two_processes(redis_url, follow=True)
    assert set(results) == {f"/{t}/{n}" for t in ("orig", "mirror") for n in ORIG} | {
        "/static/x.txt"
    }
    for name in ORIG:
        orig, mirror = results[f"/orig/{name}"], results[f"/mirror/{name}"]
        # whichever process fetched it, and whichever copy reached the index first, the
        # later names the earlier: exactly one of the pair is an original
        names = [
            r.duplicate_of or r.near_duplicate_of
            for r in (orig, mirror)
            if r.duplicate_of or r.near_duplicate_of
        ]
        assert names in ([orig.url], [mirror.url]), name
        if name:  # the mirror's timestamp line: another content hash, the same simhash
            assert orig.duplicate_of is None and mirror.duplicate_of is None
        else:
            assert (orig.duplicate_of or mirror.duplicate_of) in (orig.url, mirror.url)
    exact = a.stats.exact_duplicates + b.stats.exact_duplicates
    near = a.stats.near_duplicates + b.stats.near_duplicates
    assert (exact, near) == (1, len(ORIG) - 1)
    index = a.content
    assert isinstance(index, RedisContentIndex)
    assert await index.pages() == 2 * len(ORIG) - 1  # the exact copy is not added
    assert a.stats_dict()["content_index"]["shared"] is True
    status = await read_status(redis_url, "d")
    assert status["content_pages"] == 2 * len(ORIG) - 1
    assert (status["exact_duplicates"], status["near_duplicates"]) == (exact, near)
    out = io.StringIO()
    format_status(status, out)
    assert f"content dedup: {2 * len(ORIG) - 1} distinct pages, duplicates 1 exact / " in (
        out.getvalue()
    )


async def test_a_duplicates_links_are_not_followed_by_any_process(redis_url: str) -> None:
    base, _, _, results = await _two_processes(redis_url, follow=False)
    # the entry page whose copy reached the index second is a duplicate: whichever process
    # fetched it, its links are not followed, so only one tree is crawled
    first = "/orig/" if results["/mirror/"].duplicate_of else "/mirror/"
    other = "/mirror/" if first == "/orig/" else "/orig/"
    assert results[other].duplicate_of == base + first
    assert results[other].new_links == 0
    assert set(results) == {first + n for n in ORIG} | {other, "/static/x.txt"}


async def test_processes_must_agree_on_dedup(redis_url: str) -> None:
    async with serve(site_handler()) as port:
        seeds = [f"http://site.test:{port}/orig/"]
        plain = _config(redis_url, port, follow=True).override("dedup", enabled=False)
        await _crawl(Crawler(plain), seeds)
        with pytest.raises(SharedStateError, match=r"dedup\.enabled"):
            await _crawl(Crawler(_config(redis_url, port, follow=True)), seeds)


async def test_a_process_makes_many_calls_to_redis_at_once(redis_url: str) -> None:
    # redis-py's default pool raises "Too many connections" past 100 calls at once: a shared
    # crawl of concurrency 100+ whose workers all await Redis must wait for a connection
    config = Config().override("cluster", redis=redis_url, crawl_id="many")
    config = config.override("dedup", enabled=True)
    node = ClusterNode(config, settings(config))
    await node.open(dict)
    try:
        index = node.content_index(3)
        rng = random.Random(3)
        pages = [(f"http://a.test/{i}", Fingerprint(rng.randbytes(16), rng.getrandbits(64)))
                 for i in range(300)]  # fmt: skip
        matches = await asyncio.gather(*(index.check(url, fp) for url, fp in pages))
        assert all(m == (None, None) for m in matches)
        assert await index.pages() == 300
    finally:
        await node.close(dict)
