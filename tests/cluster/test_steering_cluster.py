"""A shared crawl (Redis) with credentials configured: none of them reaches Redis or --status."""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Iterator

import pytest
from redis.asyncio import Redis

from crawler.cluster import format_status, read_status
from crawler.config.sections import HostConfig
from crawler.engine.crawler import Crawler
from crawler.testing.fixture import A, FixtureSite
from crawler.testing.redis_server import RedisServer
from tests.support.server import site_config

PASSWORD = "pw-secret-9"
API_KEY = "key-secret-8"
SECRETS = (PASSWORD, API_KEY, base64.b64encode(f"alice:{PASSWORD}".encode()).decode())


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    with RedisServer() as s:
        yield s


@pytest.mark.slow
async def test_no_credential_in_redis_or_the_status(site: FixtureSite, server: RedisServer) -> None:
    client = Redis.from_url(server.url)
    await client.flushall()
    config = site_config(site).override("cluster", redis=server.url, crawl_id="steer")
    config = config.override("fetch", cookies=True)
    rule = HostConfig(match=A, auth=("alice", PASSWORD), headers={"X-Api-Key": API_KEY})
    config = dataclasses.replace(config, hosts=(rule,))
    async with Crawler(config) as crawler:
        results = [r async for r in crawler.crawl(site.seeds)]
    assert len(results) > 10
    stored = b""
    async for key in client.scan_iter(count=1000):
        stored += key + repr(await _value(client, key)).encode()
    await client.aclose()
    assert A.encode() in stored  # the shared crawl is in Redis, read as it is stored
    lines: list[str] = []

    class Out:
        def write(self, text: str) -> None:
            lines.append(text)

    format_status(await read_status(server.url, "steer"), Out())  # type: ignore[arg-type]
    assert "".join(lines).strip()
    for secret in SECRETS:
        assert secret.encode() not in stored
        assert secret not in "".join(lines)


async def _value(client: Redis, key: bytes) -> object:
    """A key's value, whatever its type (DUMP would compress it)."""
    kind = (await client.type(key)).decode()
    if kind == "string":
        return await client.get(key)
    if kind == "hash":
        return await client.hgetall(key)
    if kind == "list":
        return await client.lrange(key, 0, -1)
    if kind == "set":
        return await client.smembers(key)
    if kind == "zset":
        return await client.zrange(key, 0, -1, withscores=True)
    if kind == "stream":
        return await client.xrange(key)
    raise AssertionError(f"unexpected Redis type {kind} of {key!r}")
