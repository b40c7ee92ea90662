"""The throwaway Redis Cluster: it forms whole, spreads keys over its masters, survives a master's
crash through its replica, and leaves no process or directory behind."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

from crawler.testing.redis_cluster import (
    SLOTS,
    RedisClusterServer,
    RedisReplyError,
    cluster_nodes,
    command,
    fields,
)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def key_on(client: RedisCluster, master: int) -> str:
    """A key whose slot `master` serves (hash tags {t0}, {t1}, ... tried in turn)."""
    for n in range(1000):
        key = f"{{t{n}}}:page"
        if client.get_node_from_key(key).port == master:
            return key
    raise AssertionError(f"no key of 1000 on {master}")


def test_the_cluster_forms_with_three_masters_each_with_a_replica_and_every_slot(
    redis_cluster: RedisClusterServer,
) -> None:
    redis_cluster.revive()  # whole, whatever the module's tests did before
    masters, replicas = redis_cluster.masters(), redis_cluster.replicas()
    assert len(masters) == 3
    assert sorted(replicas.values()) == sorted(masters)  # one replica each
    assert set(masters) | set(replicas) == {node.port for node in redis_cluster.nodes}
    served = sorted(r for n in cluster_nodes(masters[0]) for r in n.slots)
    assert served[0][0] == 0 and served[-1][1] == SLOTS - 1
    assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(served))  # no gap
    for node in redis_cluster.nodes:
        info = fields(command(node.port, "CLUSTER", "INFO"))
        assert info["cluster_state"] == "ok"
        assert info["cluster_slots_assigned"] == info["cluster_slots_ok"] == str(SLOTS)
        assert info["cluster_known_nodes"] == "6" and info["cluster_size"] == "3"
    for replica, master in replicas.items():
        replication = fields(command(replica, "INFO", "replication"))
        assert replication["role"] == "slave" and replication["master_port"] == str(master)
        assert replication["master_link_status"] == "up"


async def test_keys_of_different_hash_tags_land_on_different_masters(
    redis_cluster: RedisClusterServer, redis_cluster_url: str
) -> None:
    client = await RedisCluster.from_url(redis_cluster_url).initialize()  # the slot map
    try:
        masters = redis_cluster.masters()
        keys = {master: await key_on(client, master) for master in masters}
        for master, key in keys.items():
            slot = int(command(master, "CLUSTER", "KEYSLOT", key))
            assert client.keyslot(key) == slot
            assert int(command(master, "CLUSTER", "KEYSLOT", key.replace("page", "robots"))) == slot
            await client.set(key, f"on {master}")
        for master, key in keys.items():  # each master holds its key, and only its key
            assert command(master, "GET", key) == f"on {master}"
            assert command(master, "DBSIZE") == "1"
            other = next(m for m in masters if m != master)
            with pytest.raises(RedisReplyError, match=r"^MOVED"):
                command(other, "GET", key)
    finally:
        await client.aclose()


async def test_a_replica_takes_over_a_killed_master_and_the_client_writes_on(
    redis_cluster: RedisClusterServer, redis_cluster_url: str
) -> None:
    client = await RedisCluster.from_url(redis_cluster_url).initialize()  # the slot map
    try:
        victim = redis_cluster.masters()[1]
        heir = next(r for r, m in redis_cluster.replicas().items() if m == victim)
        key = await key_on(client, victim)
        direct = Redis(port=victim)  # WAIT counts the writes of its own connection only
        try:
            await direct.set(key, "before")
            assert await direct.wait(1, 5000) == 1  # the replica has it
        finally:
            await direct.aclose()

        assert redis_cluster.kill_master(victim) == victim
        assert redis_cluster.wait_failover(victim, timeout=30) == heir
        assert victim not in redis_cluster.masters() and heir in redis_cluster.masters()
        assert heir not in redis_cluster.replicas()
        assert command(heir, "GET", key) == "before"

        await client.set(key, "after")  # the dead node refuses; redis-py asks again, then writes
        assert command(heir, "GET", key) == "after"
        assert await client.get(key) == b"after"

        assert redis_cluster.revive() == [victim]  # back on its files, as the heir's replica
        assert redis_cluster.replicas()[victim] == heir
    finally:
        await client.aclose()


def test_every_process_and_directory_goes_with_the_cluster() -> None:
    with RedisClusterServer() as cluster:
        pids, dirs = cluster.pids(), [node.directory for node in cluster.nodes]
        assert len(pids) == 6 and not any(gone(pid) for pid in pids)
        dead = cluster.kill_master(0)
        assert dead not in [node.port for node in cluster.running()]
        assert sum(gone(pid) for pid in pids) == 1  # SIGKILLed, and reaped
    assert all(gone(pid) for pid in pids)
    assert all(d is not None and not d.exists() for d in dirs)
    assert cluster.nodes == []


def test_a_cluster_that_fails_to_form_leaves_nothing_behind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started: list[tuple[int, Path | None]] = []

    def create(self: RedisClusterServer, deadline: float) -> None:
        started.extend((node.pid or 0, node.directory) for node in self.nodes)
        raise RuntimeError("redis-cli --cluster create failed")

    monkeypatch.setattr(RedisClusterServer, "_create", create)
    with pytest.raises(RuntimeError, match="create failed"), RedisClusterServer():
        pass
    assert len(started) == 6
    assert all(pid and gone(pid) for pid, _ in started)
    assert all(d is not None and not d.exists() for _, d in started)
