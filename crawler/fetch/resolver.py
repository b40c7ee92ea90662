"""Resolving host names: the `[fetch] resolve` overrides, and the crawl's one resolution.

`OverrideResolver`: host names resolved to given addresses, like curl's --resolve (several
virtual hosts on loopback without touching /etc/hosts); every other name goes to aiohttp's
default resolver (getaddrinfo in a thread). `crawler.fetch.fetcher.Fetcher` uses it unless given
a resolver, wrapped in the SSRF guard's `crawler.fetch.guard.GuardedResolver` when there is a
guard, and that in an `AddressBook`: the resolver aiohttp's connector asks.

`AddressBook` is the crawl's one DNS cache and the place where politeness and the SSRF guard
meet. The frontier resolves each host through it before scheduling it
(`crawler.frontier.addresses`), picks one address of the answer and *pins* it; a connection to
a pinned name goes to that address without another lookup, so the address the guard checked,
the address the frontier scheduled the host by and the address connected to are one (no DNS
rebinding window). A name nobody pinned (the renderer's subresources, a library caller, a name
that did not resolve for the frontier) is looked up through the same cache; a failed lookup is
not cached, but answers the next connection to its name (within seconds), which is the fetch the
frontier resolved it for: one question to the resolver per attempt, as before. Lookups of one name
at once share one query. aiohttp's own DNS cache is off: it would keep an address after the
frontier moved the host to another.

TTLs: getaddrinfo gives none (aiohttp's `ThreadedResolver`; its `AsyncResolver` over aiodns
drops the TTL that c-ares reads), so an answer is kept `DnsTtl.default` seconds. A resolver that
knows its answers' TTL says so by having ``resolve_timed`` (`TimedResolver`); the guard passes it
on. Either way the TTL is held within `DnsTtl`'s bounds (the frontier's ``[politeness]
dns_min_ttl`` .. ``dns_max_ttl``): a 0-second TTL would resolve a name before every request, a
week-long one would never see a server move.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

__all__ = ["AddressBook", "Answer", "DnsTtl", "OverrideResolver", "TimedResolver"]

_MAX_NAMES = 1 << 16  # cached answers kept before the expired ones are swept
_FAILURE_KEPT = 5.0  # seconds a failed lookup answers the next connection to its name


@dataclass(frozen=True, slots=True)
class DnsTtl:
    """How long an answer is kept: its TTL (`default` when the resolver gives none), held
    within [`low`, `high`] seconds."""

    default: float = 300.0
    low: float = 30.0
    high: float = 3600.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.low <= self.high < float("inf") or self.default < 0.0:
            raise ValueError(f"DNS TTLs: need 0 <= low <= high and default >= 0, got {self!r}")

    def bound(self, ttl: float | None) -> float:
        return min(max(self.default if ttl is None else ttl, self.low), self.high)


@dataclass(frozen=True, slots=True)
class Answer:
    """A name's addresses (in the resolver's order, each once) and the TTL it gave (None: none
    given)."""

    addresses: tuple[str, ...]
    ttl: float | None = None


@runtime_checkable
class TimedResolver(Protocol):
    """A resolver that knows its answers' TTL (seconds; None when it does not)."""

    async def resolve_timed(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> tuple[list[ResolveResult], float | None]: ...


def numeric(host: str, address: str, port: int) -> ResolveResult:
    """The resolver answer connecting `host` to `address` (no lookup)."""
    return {
        "hostname": host,
        "host": address,
        "port": port,
        "family": socket.AF_INET6 if ":" in address else socket.AF_INET,
        "proto": 0,
        "flags": socket.AI_NUMERICHOST,
    }


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
        return [numeric(host, address, port)]

    async def close(self) -> None:
        if self._fallback is not None:
            await self._fallback.close()

    def __repr__(self) -> str:
        return f"<OverrideResolver {self._overrides!r}>"


class AddressBook(AbstractResolver):
    """The crawl's one resolution (module docstring): `lookup` (cached, by TTL), `pin` (the
    address a name's connections go to), and `resolve` for aiohttp's connector."""

    __slots__ = ("_answers", "_failed", "_inner", "_pending", "_pins", "lookups", "ttl")

    def __init__(self, inner: AbstractResolver, ttl: DnsTtl = DnsTtl()) -> None:
        self._inner = inner
        self.ttl = ttl
        self._answers: dict[str, tuple[Answer, float]] = {}  # name -> answer, expires
        self._pending: dict[str, asyncio.Future[Answer]] = {}
        self._pins: dict[str, str] = {}
        self._failed: dict[str, tuple[Exception, float]] = {}  # name -> its last failure, until
        self.lookups = 0  # queries sent to the resolver

    @staticmethod
    def _key(name: str) -> str:
        return name.lower().rstrip(".")

    async def lookup(self, name: str) -> Answer:
        """The addresses of `name` the guard allows (raises what the resolver raises)."""
        key = self._key(name)
        cached = self._answers.get(key)
        if cached is not None and cached[1] > time.monotonic():
            return cached[0]
        pending = self._pending.get(key)
        if pending is None:
            pending = self._pending[key] = asyncio.ensure_future(self._ask(key, name))
            pending.add_done_callback(lambda _: self._pending.pop(key, None))
        return await asyncio.shield(pending)

    async def _ask(self, key: str, name: str) -> Answer:
        self.lookups += 1
        inner, ttl = self._inner, None
        try:
            if isinstance(inner, TimedResolver):
                results, ttl = await inner.resolve_timed(name, 0, socket.AF_UNSPEC)
            else:
                results = await inner.resolve(name, 0, socket.AF_UNSPEC)
        except Exception as exc:  # the next connection to it fails so, without asking again
            if len(self._failed) >= _MAX_NAMES:
                self._failed.clear()
            self._failed[key] = (exc, time.monotonic() + _FAILURE_KEPT)
            raise
        answer = Answer(tuple(dict.fromkeys(r["host"] for r in results)), ttl)
        answers = self._answers
        now = time.monotonic()
        if len(answers) >= _MAX_NAMES:
            for old in [k for k, (_, expires) in answers.items() if expires <= now]:
                del answers[old]
        answers[key] = (answer, now + self.ttl.bound(ttl))
        return answer

    def pin(self, name: str, address: str | None) -> None:
        """Connections to `name` go to `address` (one the guard allowed: from `lookup`) from now
        on; None: looked up again (cached) at each connection."""
        if address is None:
            self._pins.pop(self._key(name), None)
        else:
            self._pins[self._key(name)] = address

    def pinned(self, name: str) -> str | None:
        return self._pins.get(self._key(name))

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        key = self._key(host)
        address = self._pins.get(key)
        if address is not None:
            return [numeric(host, address, port)]
        failed = self._failed.pop(key, None)
        if failed is not None and failed[1] > time.monotonic():
            raise failed[0]  # the frontier's lookup of it just failed: one question, one answer
        answer = await self.lookup(host)
        return [numeric(host, address, port) for address in answer.addresses]

    async def close(self) -> None:
        await self._inner.close()

    def __repr__(self) -> str:
        return (
            f"<AddressBook names={len(self._answers)} pins={len(self._pins)} "
            f"lookups={self.lookups} {self._inner!r}>"
        )
