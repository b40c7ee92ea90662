"""A throwaway Redis Cluster on loopback: Debian redis-servers, masters, replicas.

    with RedisClusterServer() as cluster:  # 3 masters, one replica each, all 16384 slots
        client = redis.asyncio.cluster.RedisCluster.from_url(cluster.url)
        dead = cluster.kill_master(0)  # SIGKILL of the master of slot 0
        cluster.wait_failover(dead)  # its replica serves its slots; cluster_state ok again

Each node is a `RedisServer(cluster=True)` with its own port, cluster-bus port and temporary
directory, a short cluster-node-timeout (a failover takes seconds, not Redis's default 15 s).
`redis-cli --cluster create` joins them; `start()` returns once every node sees the whole
cluster and each replica is in sync with its master. Roles are read from the nodes (CLUSTER
NODES), so `masters()` and `replicas()` follow a failover; `revive()` restarts the killed nodes
on their files, and each comes back as a replica of the node that took its slots.

The nodes are asked with a few lines of RESP over a socket: no Redis client library needed.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

from crawler.testing.redis_server import RedisServer, redis_binary

__all__ = ["SLOTS", "NodeView", "RedisClusterServer", "RedisReplyError"]

SLOTS = 16384
POLL = 0.05  # seconds between two looks at the cluster while waiting


class RedisReplyError(RuntimeError):
    """The node answered with an error reply."""


def command(port: int, *args: str, timeout: float = 2.0) -> str:
    """One command to the node on `port`; its reply (simple, integer or bulk) as text."""
    encoded = [a.encode() for a in args]
    payload = b"*%d\r\n" % len(encoded) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in encoded)
    with (
        socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock,
        sock.makefile("rb") as reader,
    ):
        sock.sendall(payload)
        line = reader.readline()
        kind, rest = line[:1], line[1:].rstrip(b"\r\n").decode(errors="replace")
        if kind == b"$":
            size = int(rest)
            return reader.read(size + 2)[:size].decode(errors="replace") if size >= 0 else ""
        if kind == b"-":
            raise RedisReplyError(rest)
        if kind in (b"+", b":"):
            return rest
        raise RedisReplyError(f"unexpected reply {line[:80]!r}")


def fields(text: str) -> dict[str, str]:
    """The `key:value` lines of CLUSTER INFO or INFO."""
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line and line[:1] != "#")


@dataclass(frozen=True, slots=True)
class NodeView:
    """One line of CLUSTER NODES: a node as another node sees it."""

    id: str
    port: int
    flags: frozenset[str]
    master_id: str | None  # a replica's master
    slots: tuple[tuple[int, int], ...]  # first and last slot of each range it serves

    @classmethod
    def parse(cls, line: str) -> NodeView:
        node_id, address, flags, master, *rest = line.split()
        port = int(address.split("@", 1)[0].rsplit(":", 1)[1])
        ranges = []
        for part in rest[4:]:  # ping-sent pong-recv config-epoch link-state, then the slots
            if part.startswith("["):  # a slot being migrated or imported
                continue
            first, _, last = part.partition("-")
            ranges.append((int(first), int(last or first)))
        master_id = None if master == "-" else master
        return cls(node_id, port, frozenset(flags.split(",")), master_id, tuple(ranges))

    @property
    def failed(self) -> bool:
        return bool(self.flags & {"fail", "fail?", "noaddr", "handshake"})

    @property
    def is_master(self) -> bool:
        return "master" in self.flags


def cluster_nodes(port: int) -> list[NodeView]:
    return [NodeView.parse(line) for line in command(port, "CLUSTER", "NODES").splitlines()]


def _roles(view: list[NodeView]) -> dict[int, tuple[int | None, tuple[tuple[int, int], ...]]]:
    """The nodes up in `view`: port -> (its master's port, None for a master; its slots)."""
    port_of = {n.id: n.port for n in view}
    return {
        n.port: (port_of.get(n.master_id, -1) if n.master_id else None, n.slots)
        for n in view
        if not n.failed
    }


class RedisClusterServer:
    """`masters` masters with `replicas` replicas each, on free loopback ports."""

    def __init__(self, *, masters: int = 3, replicas: int = 1, node_timeout_ms: int = 1000) -> None:
        if masters < 3:
            raise ValueError("redis-cli --cluster create needs at least 3 masters")
        self.master_count = masters
        self.replica_count = replicas
        self.node_timeout_ms = node_timeout_ms
        self.nodes: list[RedisServer] = []
        self._killed: dict[int, tuple[tuple[int, int], ...]] = {}  # port -> the slots it had
        self._stack = contextlib.ExitStack()

    # -- what the cluster is now -------------------------------------------------------------

    def running(self) -> list[RedisServer]:
        return [node for node in self.nodes if node.pid is not None]

    def view(self) -> list[NodeView]:
        """CLUSTER NODES as the first running node that answers sees it."""
        for node in self.running():
            with contextlib.suppress(OSError, RedisReplyError):
                return cluster_nodes(node.port)
        raise RuntimeError(f"no node of the cluster answers: {self.nodes}")

    def masters(self) -> list[int]:
        """The ports of the running masters, in the order of the first slot each serves."""
        alive = {node.port for node in self.running()}
        found = [n for n in self.view() if n.is_master and not n.failed and n.port in alive]
        found.sort(key=lambda n: (n.slots[0][0] if n.slots else SLOTS, n.port))
        return [n.port for n in found]

    def replicas(self) -> dict[int, int]:
        """The running replicas: replica's port -> its master's port."""
        view = self.view()
        alive = {node.port for node in self.running()}
        port_of = {n.id: n.port for n in view}
        return {
            n.port: port_of[n.master_id]
            for n in view
            if not n.is_master and n.master_id in port_of and not n.failed and n.port in alive
        }

    @property
    def url(self) -> str:
        """redis:// of the first running master (the one serving slot 0 while it lives)."""
        return f"redis://127.0.0.1:{self.masters()[0]}/0"

    @property
    def urls(self) -> list[str]:
        """redis:// of every running node."""
        return [node.url for node in self.running()]

    def pids(self) -> list[int]:
        return [node.pid for node in self.nodes if node.pid is not None]

    # -- starting and stopping ---------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> None:
        """Every node started, the cluster created, and whole (see `wait_whole`)."""
        if self.nodes:
            raise RuntimeError(f"{self!r} is started already")
        deadline = time.monotonic() + timeout
        try:
            for _ in range(self.master_count * (1 + self.replica_count)):
                node = RedisServer(cluster=True, node_timeout_ms=self.node_timeout_ms)
                self._stack.callback(node.close)  # its directory goes even if it fails to start
                self.nodes.append(node)
                node.start(timeout=max(deadline - time.monotonic(), 1.0))
            self._create(deadline)
            self.wait_whole(deadline - time.monotonic())
        except BaseException:
            self.stop()
            raise

    def _create(self, deadline: float) -> None:
        cli = shutil.which("redis-cli") or redis_binary().replace("redis-server", "redis-cli")
        args = [cli, "--cluster", "create", *(f"127.0.0.1:{n.port}" for n in self.nodes),
                "--cluster-replicas", str(self.replica_count), "--cluster-yes"]  # fmt: skip
        try:
            done = subprocess.run(
                args, capture_output=True, text=True, timeout=max(deadline - time.monotonic(), 1.0)
            )
        except subprocess.TimeoutExpired as e:
            raise RuntimeError(f"redis-cli --cluster create did not finish: {e.stdout!r}") from e
        if done.returncode != 0 or f"All {SLOTS} slots covered" not in done.stdout:
            output = (done.stdout + done.stderr)[-3000:]
            raise RuntimeError(f"redis-cli --cluster create failed ({done.returncode}): {output}")

    def stop(self) -> None:
        """Every node stopped and its directory removed; safe to call twice, or half started."""
        try:
            self._stack.close()
        finally:
            self.nodes = []
            self._killed = {}

    def __enter__(self) -> RedisClusterServer:
        self.start()
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- waiting -----------------------------------------------------------------------------

    def _state_problem(self, nodes: list[RedisServer]) -> str | None:
        """Why `nodes` do not all report cluster_state ok with every slot served (None: they do)."""
        for node in nodes:
            try:
                info = fields(command(node.port, "CLUSTER", "INFO"))
            except (OSError, RedisReplyError) as e:
                return f"{node.port}: {e}"
            if info.get("cluster_state") != "ok" or info.get("cluster_slots_ok") != str(SLOTS):
                state, ok = info.get("cluster_state"), info.get("cluster_slots_ok")
                return f"{node.port}: cluster_state {state}, {ok} slots ok"
        return None

    def _whole_problem(self) -> str | None:
        """Why the cluster is not whole: every node up, every slot served, every node seeing the
        same masters (each with its replicas) and slots, every replica in sync (None: whole)."""
        if len(self.running()) != len(self.nodes):
            return "a node is not running"
        problem = self._state_problem(self.nodes)
        if problem is not None:
            return problem
        views = {node.port: _roles(cluster_nodes(node.port)) for node in self.nodes}
        first = views[self.nodes[0].port]
        for port, roles in views.items():
            if roles != first or len(roles) != len(self.nodes):
                return f"{port} sees {sorted(roles)}, {self.nodes[0].port} {sorted(first)}"
        masters = [port for port, (master, _) in first.items() if master is None]
        if len(masters) != self.master_count:
            return f"masters {masters}"
        for master in masters:
            if [m for m, _ in first.values()].count(master) != self.replica_count:
                return f"master {master}: not {self.replica_count} replicas"
        for replica in (port for port, (master, _) in first.items() if master is not None):
            link = fields(command(replica, "INFO", "replication")).get("master_link_status")
            if link != "up":
                return f"replica {replica}: master link {link}"
        return None

    def _wait(self, what: str, problem: Callable[[], str | None], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                last = problem()
            except (OSError, RedisReplyError) as e:
                last = str(e)
            if last is None:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} within {timeout:.1f} s: {last}")
            time.sleep(POLL)

    def wait_whole(self, timeout: float = 30.0) -> None:
        """Waits until the cluster is whole (`_whole_problem`); TimeoutError says what is not."""
        self._wait("the cluster is not whole", self._whole_problem, timeout)

    # -- failures ----------------------------------------------------------------------------

    def kill_master(self, index_or_port: int) -> int:
        """SIGKILL of a master: the `index`-th of `masters()`, or the one on that port. Its port."""
        masters = self.masters()
        port = masters[index_or_port] if index_or_port < len(masters) else index_or_port
        if port not in masters:
            raise ValueError(f"{port} is not a running master: {masters}")
        self._killed[port] = next(n.slots for n in self.view() if n.port == port)
        next(node for node in self.nodes if node.port == port).kill()
        return port

    def wait_failover(self, dead_port: int, timeout: float = 30.0) -> int:
        """Waits until a replica serves every slot the killed master `dead_port` had, as each
        running node sees it, with cluster_state ok on each; the new master's port."""
        if dead_port not in self._killed:
            raise ValueError(f"{dead_port} was not killed by kill_master")
        slot = self._killed[dead_port][0][0]

        def problem() -> str | None:
            for node in self.running():
                for n in cluster_nodes(node.port):
                    if n.port == dead_port and n.slots:
                        return f"{node.port} sees {dead_port} serving {n.slots}"
            return self._state_problem(self.running())

        self._wait(f"no failover of {dead_port}", problem, timeout)
        return next(
            n.port for n in self.view() if any(a <= slot <= b for a, b in n.slots) and n.is_master
        )

    def revive(self, timeout: float = 30.0) -> list[int]:
        """The killed nodes restarted on their ports and files, each a replica of the node that
        took its slots, and the cluster whole again; their ports."""
        ports = []
        for node in self.nodes:
            if node.pid is None:
                node.start(timeout=timeout)
                ports.append(node.port)
        self._killed = {}
        if ports:
            self.wait_whole(timeout)
        return ports

    def flushall(self) -> None:
        """FLUSHALL on every running master (their replicas follow)."""
        for port in self.masters():
            command(port, "FLUSHALL")

    def __repr__(self) -> str:
        ports = [node.port for node in self.nodes]
        return f"<RedisClusterServer {ports} {len(self.running())} running>"
