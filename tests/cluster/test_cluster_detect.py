"""A node of a Redis Cluster is refused when joining, with a message saying why."""

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


async def test_a_redis_cluster_node_is_refused_in_one_line(cluster_node: RedisServer) -> None:
    config = Config().override("cluster", redis=cluster_node.url, crawl_id="c1")
    node = ClusterNode(config, settings(config))
    with pytest.raises(SharedStateError) as caught:
        await node.open(dict)
    await node.close(dict)
    message = str(caught.value)
    assert "\n" not in message
    assert "is a node of a Redis Cluster" in message
    assert "needs one Redis node" in message
    assert "MOVED" not in message and "CLUSTERDOWN" not in message
