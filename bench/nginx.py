"""A throwaway nginx on loopback serving a directory, for the end-to-end benchmarks.

    with Nginx(root) as server:
        print(server.base_url)  # http://127.0.0.1:PORT/

Everything nginx writes (pid, error log, temp dirs) goes to a fresh temporary directory, so it runs
as root or not, beside a system nginx or not. nginx runs in the foreground (``daemon off``) as a
child process; leaving the block stops it (SIGTERM, fast shutdown) and removes the directory.
One worker process, no access log, keep-alive for the whole crawl, no gzip: the server stays a
small, constant share of the machine for every crawler measured against it. With
``access_log=True`` it logs each request's start time (``Nginx.request_times``), for measuring a
crawler's start-up from outside its process.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

__all__ = ["Nginx", "NginxError", "free_port", "nginx_binary"]

DEBIAN_PACKAGE = "nginx-light"

CONF = """\
worker_processes {workers};
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{
    worker_connections 1024;
}}
http {{
    types {{
        text/html html htm;
        text/plain txt py;
        text/css css;
        application/javascript js;
        application/json json;
        image/png png;
        image/svg+xml svg;
        image/x-icon ico;
        application/zip zip;
    }}
    default_type application/octet-stream;
    log_format stamps '$msec $request_time $status';
    access_log {access_log};
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    gzip off;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    server {{
        listen 127.0.0.1:{port};
        server_name _;
        root {root};
        index index.html;
    }}
}}
"""


class NginxError(RuntimeError):
    """nginx is missing or did not start."""


def nginx_binary(install: bool = True) -> str:
    """Path of the nginx binary; as root with apt-get, install Debian's nginx-light if missing."""
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/sbin")
    if found is None and install and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", DEBIAN_PACKAGE], check=True, env=env)
        found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/sbin")
    if found is None:
        raise NginxError(f"nginx not found: install the Debian package {DEBIAN_PACKAGE}")
    return found


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


class Nginx:
    """nginx serving `root` on 127.0.0.1 (a free port unless `port` is given)."""

    __slots__ = ("_proc", "_tmp", "access_log", "port", "root", "workers")

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        port: int = 0,
        workers: int = 1,
        access_log: bool = False,
    ) -> None:
        self.root = Path(root).resolve()
        self.port = port
        self.workers = workers
        self.access_log = access_log
        self._proc: subprocess.Popen[bytes] | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self, timeout: float = 10.0) -> None:
        binary = nginx_binary()
        attempts = 1 if self.port else 3  # a chosen free port can be taken before nginx binds
        for attempt in range(attempts):
            port = self.port or free_port()
            self._tmp = tempfile.TemporaryDirectory(prefix="bench-nginx-")
            tmp = Path(self._tmp.name)
            tmp.chmod(0o755)  # as root, workers run as nobody and must reach the temp dirs
            conf = tmp / "nginx.conf"
            access = f"{tmp}/access.log stamps" if self.access_log else "off"
            conf.write_text(
                CONF.format(
                    workers=self.workers, tmp=tmp, port=port, root=self.root, access_log=access
                )
            )
            self._proc = subprocess.Popen(
                [binary, "-p", str(tmp), "-c", str(conf), "-e", str(tmp / "error.log")],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self._proc.poll() is None:
                if _accepts(port):
                    self.port = port
                    return
                time.sleep(0.02)
            log = (tmp / "error.log").read_text() if (tmp / "error.log").exists() else ""
            self.stop()
            if attempt == attempts - 1:
                raise NginxError(f"nginx did not start on 127.0.0.1:{port}: {log.strip()}")

    def request_times(self) -> list[float]:
        """Start of each request logged so far (Unix time, ms resolution), in log order: the
        log line's time (when the response was sent) less the request's duration."""
        if self._tmp is None or not self.access_log:
            return []
        path = Path(self._tmp.name) / "access.log"
        if not path.exists():
            return []
        out = []
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 2:
                out.append(float(parts[0]) - float(parts[1]))
        return out

    def clear_log(self) -> None:
        """Empty the access log (nginx keeps appending to the same file)."""
        if self._tmp is not None and self.access_log:
            path = Path(self._tmp.name) / "access.log"
            if path.exists():
                with open(path, "r+") as fh:
                    fh.truncate(0)

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        tmp, self._tmp = self._tmp, None
        if tmp is not None:
            tmp.cleanup()

    def __enter__(self) -> Nginx:
        self.start()
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self._proc is not None else "stopped"
        return f"<Nginx {state} root={str(self.root)!r} port={self.port}>"
