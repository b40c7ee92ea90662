"""The `[fetch] resolve` overrides: host names resolved to given addresses, like curl's --resolve.

Used to crawl several virtual hosts on loopback without touching /etc/hosts; every other name
goes to aiohttp's default resolver. `crawler.fetch.fetcher.Fetcher` uses it unless given a resolver,
wrapped in the SSRF guard's `crawler.fetch.guard.GuardedResolver` when there is a guard.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

__all__ = ["OverrideResolver"]


class OverrideResolver(AbstractResolver):
    """Like curl's ``--resolve``: names in `overrides` resolve to the given address.

    Every other name goes to aiohttp's default resolver. Used to crawl several virtual hosts on
    loopback without touching /etc/hosts.
    """

    __slots__ = ("_fallback", "_overrides")

    def __init__(self, overrides: Mapping[str, str]) -> None:
        self._overrides = {k.lower().rstrip("."): v for k, v in overrides.items()}
        self._fallback: AbstractResolver | None = None

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        address = self._overrides.get(host.lower().rstrip("."))
        if address is None:
            if self._fallback is None:
                self._fallback = aiohttp.ThreadedResolver()
            return await self._fallback.resolve(host, port, family)
        addr_family = socket.AF_INET6 if ":" in address else socket.AF_INET
        return [
            {
                "hostname": host,
                "host": address,
                "port": port,
                "family": addr_family,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
        ]

    async def close(self) -> None:
        if self._fallback is not None:
            await self._fallback.close()

    def __repr__(self) -> str:
        return f"<OverrideResolver {self._overrides!r}>"
