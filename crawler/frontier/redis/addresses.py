"""The shared frontier's resolution step, one process's part of it: `SharedResolution`.

A claim asks the process that makes it to resolve the hosts it found with no address or an
expired one (``CLAIM`` files each such host ``RESOLVE_WAIT`` seconds later, so another process
asks again if this one dies first). The process asks its `crawler.frontier.addresses.Names`
(the fetcher's `crawler.fetch.resolver.AddressBook`: one resolution, checked by the SSRF guard),
in the background (the hand-out of other hosts goes on), and records the answers for every
process (``ADDRESS``): from then on each claim of the host counts against its address's budget.
Each entry claimed comes back with the address it was counted against, and the process that
claimed it *pins* it in its own `Names`, so its connection goes to the address whose budget it
holds, whichever process resolved it. IP-literal hosts are their own address (no lookup).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Final

from crawler.errors import FetchError
from crawler.frontier.addresses import Names, address_key, literal_address
from crawler.frontier.redis.lua_address import HostAddress
from crawler.frontier.settings import Politeness
from crawler.sieve.redis import SharedStateError

__all__ = ["RESOLVE_WAIT", "SharedResolution", "host_name"]

logger = logging.getLogger(__name__)

RESOLVE_WAIT: Final = 30.0  # seconds a host asked to be resolved waits before it is asked again


def host_name(key: str) -> str:
    """The host name of a host key (``https://[::1]:8443`` -> ``[::1]``)."""
    return key.partition("://")[2].rpartition(":")[0]


class SharedResolution:
    """Resolves the hosts a claim asked for (`ask`) and records them (`record`: the ``ADDRESS``
    script); `pin` points a claimed host's connections at its address; `recorded` is called
    after each recording (a waiting claim may find the hosts ready)."""

    __slots__ = ("_bounds", "_record", "_tasks", "names", "recorded")

    def __init__(
        self,
        names: Names,
        politeness: Politeness,
        record: Callable[[list[HostAddress]], Awaitable[None]],
    ) -> None:
        self.names = names
        self._bounds = (politeness.dns_ttl, politeness.dns_min_ttl, politeness.dns_max_ttl)
        self._record = record
        self._tasks: set[asyncio.Task[None]] = set()
        self.recorded: Callable[[], None] | None = None

    @property
    def pending(self) -> int:
        """Resolutions under way here."""
        return len(self._tasks)

    def ask(self, hosts: list[str]) -> None:
        """Resolve `hosts` (their keys) in the background and record the answers."""
        task = asyncio.get_running_loop().create_task(self._resolve(hosts), name="resolve hosts")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def wait(self, seconds: float) -> None:
        """Until a resolution here is recorded, or `seconds`."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=seconds,
                               return_when=asyncio.FIRST_COMPLETED)  # fmt: skip

    async def settle(self) -> None:
        """Until every resolution under way here is recorded."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    def pin(self, host: str, address: str) -> None:
        """Connections to `host` (its key) go to `address` ('' none: looked up as they come)."""
        self.names.pin(host_name(host), address or None)

    def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    async def _resolve(self, hosts: list[str]) -> None:
        answers = list(await asyncio.gather(*(self.lookup(host) for host in hosts)))
        try:
            await self._record(answers)
        except SharedStateError as exc:  # asked again once RESOLVE_WAIT is over
            logger.warning("could not record the addresses of %d hosts: %s", len(hosts), exc)
            return
        if self.recorded is not None:
            self.recorded()

    async def lookup(self, host: str) -> HostAddress:
        """A host's addresses (none when it does not resolve: retried after ``dns_min_ttl``)
        and how long they are kept (the answer's TTL within the DNS settings' bounds)."""
        default, low, high = self._bounds
        name = host_name(host)
        literal = literal_address(name)
        if literal is not None:
            return HostAddress(host, (literal,), high)
        try:
            found = await self.names.lookup(name)
        except (OSError, ValueError, FetchError) as exc:  # its fetch reports it (not pinned)
            logger.debug("%s does not resolve (%s): scheduled by host only", name, exc)
            return HostAddress(host, (), low)
        keys = tuple(dict.fromkeys(address_key(a) for a in found.addresses))
        if not keys:
            return HostAddress(host, (), low)
        ttl = default if found.ttl is None else found.ttl
        return HostAddress(host, keys, min(max(ttl, low), high))
