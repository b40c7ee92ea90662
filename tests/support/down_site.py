"""Helpers shared by several test modules (moved from test_host_down.py)."""

from __future__ import annotations

import socket

from crawler.config.load import Config
from crawler.frontier.entries import Entry


def pages(host: str, n: int) -> list[Entry]:
    return [Entry(url=f"http://{host}/{i}", key=f"http://{host}/{i}") for i in range(n)]


def down_site(n: int) -> tuple[Config, list[str]]:
    """A config giving up a host after 3 failures in a row, and `n` seeds on down.test, which
    resolves to a loopback port nobody listens on (every connection is refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = (
        Config()
        .override(
            "politeness",
            delay=0.0,
            ip_delay=0.0,
            backoff_base=0.01,
            backoff_max=0.05,
            respect_robots=False,
            max_host_failures=3,
        )
        .override("fetch", resolve={"down.test": "127.0.0.1"})
        .override("security", allow_networks=["127.0.0.0/8"])
    )
    return config, [f"http://down.test:{port}/{i}" for i in range(n)]
