"""A throwaway redis-server (Debian's package) on a free loopback port, in a temporary directory.

    with RedisServer() as server:
        client = redis.asyncio.Redis.from_url(server.url)

No persistence unless asked (``appendonly=True`` turns AOF on, for crash tests); the server's
files, log included, live in the temporary directory, removed on exit; ``cluster=True`` starts it
in cluster mode (a node of a Redis Cluster, no slots assigned; ``node_timeout_ms`` its
cluster-node-timeout). `stop()` and `start()` let a test take Redis away from a crawl and bring it
back on the same port and data; `kill()` is a crash (SIGKILL). A whole cluster of them:
`crawler.testing.redis_cluster.RedisClusterServer`.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

__all__ = ["RedisServer", "redis_binary"]


def redis_binary() -> str:
    path = shutil.which("redis-server") or (
        "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None
    )
    if path is None:
        raise RuntimeError(
            "redis-server not found: `make test` installs Debian's redis-server package"
        )
    return path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    __slots__ = ("_bus_port", "_dir", "_proc", "appendonly", "cluster", "node_timeout_ms", "port")

    def __init__(
        self, *, appendonly: bool = False, cluster: bool = False, node_timeout_ms: int | None = None
    ) -> None:
        self.appendonly = appendonly
        self.cluster = cluster  # cluster mode on (one node, no slots assigned)
        # cluster-node-timeout; when set, any replica may take over (validity factor 0), for
        # tests of a failover that should not wait Redis's 15 s default
        self.node_timeout_ms = node_timeout_ms
        self.port = _free_port()
        self._bus_port: int | None = None  # chosen once: a restarted node keeps its address
        self._dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    @property
    def directory(self) -> Path | None:
        """The temporary directory of its files (None before the first start and after exit)."""
        return self._dir

    def start(self, timeout: float = 10.0) -> None:
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="crawler-redis-"))
        args = [
            redis_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--dir",
            str(self._dir), "--save", "", "--appendonly", "yes" if self.appendonly else "no",
            "--daemonize", "no", "--logfile", str(self._dir / "redis.log"),
        ]  # fmt: skip
        if self.cluster:  # its bus on a free port of its own (port + 10000: taken, or > 65535)
            if self._bus_port is None:
                self._bus_port = _free_port()
            # a replica's first sync starts at once (the default waits 5 s for more replicas)
            args += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                     "--cluster-port", str(self._bus_port),
                     "--repl-diskless-sync-delay", "0"]  # fmt: skip
            if self.node_timeout_ms is not None:
                args += ["--cluster-node-timeout", str(self.node_timeout_ms),
                         "--cluster-replica-validity-factor", "0"]  # fmt: skip
        self._proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            if self._proc.poll() is not None or time.monotonic() > deadline:
                err = self._proc.stderr.read().decode(errors="replace") if self._proc.stderr else ""
                log = self._dir / "redis.log"  # where the server says why
                if log.exists():
                    err += log.read_text(errors="replace")[-2000:]
                self.stop()
                raise RuntimeError(f"redis-server did not start on port {self.port}: {err}")
            time.sleep(0.02)

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc is not None and proc.stderr is not None:
            proc.stderr.close()

    def kill(self) -> None:
        """A crash: SIGKILL, no shutdown and no last save; `start()` brings it back on its files."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            if proc.stderr is not None:
                proc.stderr.close()

    def close(self) -> None:
        """Stopped, and its temporary directory removed."""
        self.stop()
        directory, self._dir = self._dir, None
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        try:
            self.start()
        except BaseException:
            self.close()  # no __exit__ when __enter__ raises: the directory goes here
            raise
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        running = self._proc is not None and self._proc.poll() is None
        return f"<RedisServer {self.url} {'running' if running else 'stopped'}>"
