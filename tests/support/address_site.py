"""Virtual hosts on one loopback address, for the address budget's real-server tests: a site
that logs when each request arrives, and the config that resolves the hosts to it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from aiohttp import web

from crawler.config.load import Config

__all__ = ["address_config", "logging_site"]


def logging_site(
    starts: list[float], pages: int
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """A handler that appends each request's arrival time to `starts`; every host's robots.txt
    allows all, and each page links `pages - 1` others of its host."""

    async def handler(request: web.Request) -> web.StreamResponse:
        starts.append(asyncio.get_running_loop().time())
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        links = "".join(f'<a href="/p{n}">{n}</a>' for n in range(1, pages))
        return web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")

    return handler


def address_config(hosts: list[str], ip_delay: float) -> Config:
    """`hosts` resolved to 127.0.0.1, no host delay, `ip_delay` between starts to the address."""
    config = Config().override("fetch", resolve=dict.fromkeys(hosts, "127.0.0.1"))
    config = config.override("politeness", delay=0.0, ip_delay=ip_delay)
    return config.override("crawl", concurrency=8)
