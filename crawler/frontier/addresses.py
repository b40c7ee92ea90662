"""Politeness by IP address: each host resolved before it is scheduled, each address's budget.

Hosts that share an address (the virtual hosts of one server, a hosting provider's customers,
a CDN edge) share one server: besides each host's own delay and slots, an :class:`Address`
holds ``ip_delay`` between two request starts to it, whichever of its hosts they are for, and
at most ``ip_concurrency`` requests in flight (0: no limit). The stricter of the host's rule and
its address's wins: a request starts when both allow it (robots.txt and sitemap fetches count,
as every hand-out does).

Resolution is the frontier's own step, before a host is scheduled, never inside the connection:
a new host (or one whose answer expired) is *resolving*, not filed, while a task asks the
:class:`Names` it was given (the fetcher's `crawler.fetch.resolver.AddressBook`: the crawl's one
DNS cache, whose answers the SSRF guard already checked); the answer files it again. Resolution
never blocks the hand-out of other hosts. A host keeps its answer for the answer's TTL (bounded:
``Politeness.dns_min_ttl`` .. ``dns_max_ttl``; ``dns_ttl`` when the resolver gives none). A host
with several addresses uses one at a time: the first of the answer, kept while later answers
still hold it (round-robin DNS does not move it between budgets); a host whose answer no longer
holds its address moves to the new address's budget (its requests in flight still count
against the old one until done). The frontier *pins* the chosen address in the `Names`
(`AddressBook.pin`), so the connection goes to the address the host was scheduled by and the
guard checked: one resolution. IP-literal hosts are their own address. A name that does not
resolve (or whose every address the guard refuses) is scheduled by host only and retried after
``dns_min_ttl``: its fetch fails with the resolver's error, as it would have.

Scheduling (`crawler.frontier.schedule.Schedule`): a host whose own time has come but whose
address is busy (too soon after its last start, or every slot taken) is *parked* on the address,
in the order hosts came to it (scored crawls: best priority first), and the address is filed in
the schedule at its own ready time (or again when a slot frees): when it comes up, its first
parked host goes. A parked host holds no worker and no other host back.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from crawler.errors import FetchError

if TYPE_CHECKING:
    from crawler.frontier.settings import Politeness

__all__ = ["Address", "AddressStep", "Lookup", "Names", "Resolvable", "address_key",
           "literal_address"]  # fmt: skip

logger = logging.getLogger(__name__)


class Lookup(Protocol):
    """A resolver's answer: the addresses (in its order, those the SSRF guard refused left out)
    and its TTL in seconds (None: the resolver gives none)."""

    @property
    def addresses(self) -> tuple[str, ...]: ...

    @property
    def ttl(self) -> float | None: ...


class Names(Protocol):
    """What the frontier asks to resolve host names (`crawler.fetch.resolver.AddressBook`)."""

    def lookup(self, name: str) -> Awaitable[Lookup]:
        """The addresses of `name` (raises what the resolver raises: OSError, BlockedAddress)."""
        ...

    def pin(self, name: str, address: str | None) -> None:
        """Connections to `name` go to `address` from now on (None: no pin)."""
        ...


class Resolvable(Protocol):
    """What the resolution step reads and sets of a host (`crawler.frontier.hosts.Host`, which
    imports this module: hence a protocol)."""

    address: Address | None
    resolving: bool
    resolve_at: float

    @property
    def name(self) -> str: ...


H = TypeVar("H", bound=Resolvable)


@functools.lru_cache(maxsize=4096)  # many hosts share few addresses: each parsed once
def address_key(address: str) -> str:
    """One spelling of an address (``::FFFF:1.2.3.4`` and ``1.2.3.4`` are one server)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def literal_address(name: str) -> str | None:
    """The address of an IP-literal host name (``[::1]``, ``127.0.0.1``), None for a name."""
    text = name[1:-1] if name.startswith("[") and name.endswith("]") else name
    if not text[:1].isdigit() and ":" not in text:  # a name (parsing it would fail, slowly)
        return None
    try:
        return address_key(str(ipaddress.ip_address(text)))
    except ValueError:
        return None


class Address:
    """One IP address's budget: ``ready_at`` (its last start + ``delay``), ``in_flight`` of
    ``concurrency`` (0: no limit), the hosts ``parked`` on it (heap items ``(rank, seq, host)``),
    and the fields of its filing in the schedule (``in_heap``, ``filed_best``, ``token``) and
    ``hosts`` (how many hosts use it now)."""

    __slots__ = ("concurrency", "delay", "filed_best", "hosts", "in_flight", "in_heap", "key",
                 "parked", "ready_at", "token")  # fmt: skip

    def __init__(self, key: str, delay: float, concurrency: int) -> None:
        self.key = key
        self.delay = delay
        self.concurrency = concurrency
        self.ready_at = float("-inf")
        self.in_flight = 0
        self.parked: list[tuple[float, int, Any]] = []  # (rank, seq, Host)
        self.in_heap = False
        self.filed_best = float("inf")
        self.token = -1
        self.hosts = 0

    def free(self, now: float) -> bool:
        """Whether a request to this address may start at `now`."""
        return self.ready_at <= now and (not self.concurrency or self.in_flight < self.concurrency)

    @property
    def room(self) -> bool:
        """Whether a slot is free (its time apart)."""
        return not self.concurrency or self.in_flight < self.concurrency

    @property
    def best(self) -> float:
        """The priority its first parked host was parked with (-inf when none is)."""
        return -self.parked[0][0] if self.parked else float("-inf")

    def start(self, now: float) -> None:
        self.in_flight += 1
        self.ready_at = now + self.delay

    def __repr__(self) -> str:
        return (
            f"Address({self.key!r}, hosts={self.hosts}, in_flight={self.in_flight}, "
            f"parked={len(self.parked)}, ready_at={self.ready_at:.3f})"
        )


class AddressStep(Generic[H]):
    """The frontier's resolution step (module docstring): which address each host is scheduled
    by, the addresses' budgets, and the resolutions under way. `resolved(host)` is called (on
    the loop) when a host's answer came in: the frontier files it again."""

    __slots__ = ("_bounds", "_clock", "_loop", "_resolved", "_tasks", "_waiting", "addresses",
                 "concurrency", "delay", "names")  # fmt: skip

    def __init__(
        self,
        names: Names,
        politeness: Politeness,
        resolved: Callable[[H], None],
        clock: Callable[[], float],
    ) -> None:
        self.names = names
        self._clock = clock
        self.delay = float(politeness.ip_delay)
        self.concurrency = politeness.ip_concurrency
        self._bounds = (politeness.dns_ttl, politeness.dns_min_ttl, politeness.dns_max_ttl)
        self._resolved = resolved
        self.addresses: dict[str, Address] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._waiting: list[H] = []  # new hosts put before a loop ran: resolved once one does
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def resolving(self) -> int:
        """Resolutions under way (or waiting for the loop)."""
        return len(self._tasks) + len(self._waiting)

    def new_host(self, host: H) -> None:
        """A host seen for the first time: its literal address, or a resolution started."""
        literal = literal_address(host.name)
        if literal is not None:
            self._move(host, self._address(literal))
            return
        self.resolve(host)

    def resolve(self, host: H) -> None:
        """Resolve a host (new, or its answer expired): not filed until the answer is in."""
        host.resolving = True
        loop = self._loop
        if loop is None:
            try:
                loop = self._loop = asyncio.get_running_loop()
            except RuntimeError:  # put() before any loop ran: started by bind()
                self._waiting.append(host)
                return
        task = loop.create_task(self._resolution(host), name=f"resolve {host.name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The frontier's loop runs: start the resolutions asked for before it did."""
        self._loop = loop
        waiting, self._waiting = self._waiting, []
        for host in waiting:
            self.resolve(host)

    def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    async def _resolution(self, host: H) -> None:
        name = host.name
        try:
            found: Lookup | None = await self.names.lookup(name)
        except (OSError, ValueError, FetchError) as exc:  # its fetch reports it (not pinned)
            logger.debug("%s does not resolve (%s): scheduled by host only", name, exc)
            found = None
        self.answer(host, found, self._clock())
        self._resolved(host)

    def answer(self, host: H, found: Lookup | None, now: float) -> None:
        """Take `found` as the answer for `host` at `now` (None: it did not resolve)."""
        host.resolving = False
        default, low, high = self._bounds
        keys = [address_key(a) for a in found.addresses] if found is not None else []
        if not keys:
            self._move(host, None)
            host.resolve_at = now + low
            self.names.pin(host.name, None)
            return
        current = host.address
        key = current.key if current is not None and current.key in keys else keys[0]
        self._move(host, self._address(key))
        ttl = default if found is None or found.ttl is None else found.ttl
        host.resolve_at = now + min(max(ttl, low), high)
        self.names.pin(host.name, key)

    def _address(self, key: str) -> Address:
        address = self.addresses.get(key)
        if address is None:
            address = self.addresses[key] = Address(key, self.delay, self.concurrency)
        return address

    def _move(self, host: H, address: Address | None) -> None:
        old = host.address
        if old is address:
            return
        if old is not None:  # kept (its last start counts): as hosts are, for the crawl
            old.hosts -= 1
        if address is not None:
            address.hosts += 1
        host.address = address

    def __repr__(self) -> str:
        return (
            f"<AddressStep addresses={len(self.addresses)} resolving={self.resolving} "
            f"ip_delay={self.delay} ip_concurrency={self.concurrency}>"
        )
