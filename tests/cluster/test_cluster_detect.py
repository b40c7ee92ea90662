"""A node of a Redis Cluster is found out (``INFO cluster``); one that cannot serve the crawl
(its slots not all covered) is refused in one line saying why."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from crawler.cluster import ClusterNode
from crawler.config.load import Config
from crawler.engine.components import settings
from crawler.errors import SharedStateError
from crawler.testing.redis_server import RedisServer


@pytest.fixture(scope="module")
def cluster_node() -> Iterator[RedisServer]:
    with RedisServer(cluster=True) as server:
        yield server


async def test_a_cluster_node_without_slots_is_refused_in_one_line(
    cluster_node: RedisServer,
) -> None:
    config = Config().override("cluster", redis=cluster_node.url, crawl_id="c1")
    node = ClusterNode(config, settings(config))
    with pytest.raises(SharedStateError) as caught:
        await node.open(dict)
    await node.close(dict)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"cannot use Redis at {cluster_node.url}")
    assert "Redis Cluster of that node cannot serve the crawl" in message
    assert "0 of 16384 covered" in message
    assert "redis-cli --cluster check" in message
    assert "MOVED" not in message and "CLUSTERDOWN" not in message
