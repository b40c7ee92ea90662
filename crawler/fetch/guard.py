"""The SSRF guard: which IP addresses the crawler may connect to.

`classify(ip)` is a pure function: ``None`` for a public (globally routable unicast) address, else
a short reason ("loopback", "private", "link-local", ...). IPv4-mapped IPv6 addresses are
unwrapped, and IPv6 transition addresses that embed an IPv4 address (6to4, Teredo, NAT64) are
judged by the embedded address. The tables follow the IANA special-purpose address registries and
are spelled out here, so the answer does not change with the Python version's `is_global`.

`AddressGuard` adds the exemptions: networks allowed in config (`allow_networks`), the seeds'
host names (every address such a name resolves to is exempt, for any host name), and single
addresses. The fetcher enforces it where connections are made: `GuardedResolver` filters the
resolver's answers (so a DNS answer cannot change between check and connect), and
`Fetcher.fetch` checks IP-literal URLs, which aiohttp connects to without resolving.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from collections.abc import Iterable
from typing import TypeAlias

from aiohttp.abc import AbstractResolver, ResolveResult

from crawler.errors import BlockedAddress
from crawler.fetch.resolver import TimedResolver

__all__ = [
    "AddressGuard",
    "GuardedResolver",
    "IPAddress",
    "IPNetwork",
    "classify",
    "parse_address",
    "parse_network",
]

log = logging.getLogger(__name__)

IPAddress: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork: TypeAlias = ipaddress.IPv4Network | ipaddress.IPv6Network

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

# IANA IPv4 special-purpose registry, most specific first. Globally reachable exceptions inside a
# blocked block come before it with the reason None.
_V4_TABLE: tuple[tuple[ipaddress.IPv4Network, str | None], ...] = (
    (_V4("0.0.0.0/32"), "unspecified"),
    (_V4("0.0.0.0/8"), "this-network"),  # "this host on this network": Linux connects locally
    (_V4("10.0.0.0/8"), "private"),
    (_V4("100.64.0.0/10"), "shared"),  # carrier-grade NAT
    (_V4("127.0.0.0/8"), "loopback"),
    (_V4("169.254.0.0/16"), "link-local"),  # cloud metadata lives at 169.254.169.254
    (_V4("172.16.0.0/12"), "private"),
    (_V4("192.0.0.9/32"), None),  # Port Control Protocol anycast (globally reachable)
    (_V4("192.0.0.10/32"), None),  # TURN anycast (globally reachable)
    (_V4("192.0.0.0/24"), "ietf-protocol"),
    (_V4("192.0.2.0/24"), "documentation"),
    (_V4("192.88.99.0/24"), "reserved"),  # deprecated 6to4 relay anycast
    (_V4("192.168.0.0/16"), "private"),
    (_V4("198.18.0.0/15"), "benchmark"),
    (_V4("198.51.100.0/24"), "documentation"),
    (_V4("203.0.113.0/24"), "documentation"),
    (_V4("224.0.0.0/4"), "multicast"),
    (_V4("255.255.255.255/32"), "broadcast"),
    (_V4("240.0.0.0/4"), "reserved"),
)

_MAPPED = _V6("::ffff:0:0/96")
_NAT64 = _V6("64:ff9b::/96")
_TEREDO = _V6("2001::/32")
_SIX_TO_FOUR = _V6("2002::/16")
_GLOBAL_UNICAST = _V6("2000::/3")

# IANA IPv6 special-purpose registry (the embedding prefixes above are handled first). Anything
# left outside 2000::/3 is unassigned by IANA and refused as "reserved".
_V6_TABLE: tuple[tuple[ipaddress.IPv6Network, str | None], ...] = (
    (_V6("::/128"), "unspecified"),
    (_V6("::1/128"), "loopback"),
    (_V6("64:ff9b:1::/48"), "private"),  # local-use NAT64
    (_V6("100::/64"), "reserved"),  # discard-only
    (_V6("2001:1::1/128"), None),  # PCP anycast
    (_V6("2001:1::2/128"), None),  # TURN anycast
    (_V6("2001:2::/48"), "benchmark"),
    (_V6("2001:3::/32"), None),  # AMT
    (_V6("2001:4:112::/48"), None),  # AS112-v6
    (_V6("2001:db8::/32"), "documentation"),
    (_V6("2001::/23"), "ietf-protocol"),  # ORCHID and the rest of the IETF block
    (_V6("3fff::/20"), "documentation"),
    (_V6("fc00::/7"), "unique-local"),
    (_V6("fe80::/10"), "link-local"),
    (_V6("fec0::/10"), "site-local"),
    (_V6("ff00::/8"), "multicast"),
)


def parse_address(ip: str | IPAddress) -> IPAddress:
    """An address object from text (``[::1]`` brackets and ``%zone`` suffixes accepted).

    Raises ValueError for anything that is not a canonical IPv4 or IPv6 address.
    """
    if isinstance(ip, ipaddress.IPv4Address | ipaddress.IPv6Address):
        return ip
    text = ip.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    return ipaddress.ip_address(text)


def _unzoned(addr: IPAddress) -> IPAddress:
    """`addr` without an IPv6 zone, and IPv4-mapped IPv6 as IPv4 (the form exemptions use)."""
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.ipv4_mapped is not None:
            return addr.ipv4_mapped
        if addr.scope_id is not None:
            return ipaddress.IPv6Address(int(addr))
    return addr


def _classify_v4(addr: ipaddress.IPv4Address) -> str | None:
    for net, reason in _V4_TABLE:
        if addr in net:
            return reason
    return None


def _embedded(kind: str, inner: ipaddress.IPv4Address) -> str | None:
    reason = _classify_v4(inner)
    return None if reason is None else f"{kind} {reason} ({inner})"


def classify(ip: str | IPAddress) -> str | None:
    """None if `ip` is a public address the crawler may connect to, else why it may not.

    Reasons: unspecified, this-network, loopback, private, shared, link-local, site-local,
    unique-local, multicast, broadcast, documentation, benchmark, ietf-protocol, reserved;
    prefixed by "ipv4-mapped", "6to4", "teredo" or "nat64" when an embedded IPv4 address is the
    problem (e.g. ``"ipv4-mapped loopback (127.0.0.1)"``). Raises ValueError for a non-address.
    """
    addr = parse_address(ip)
    if isinstance(addr, ipaddress.IPv4Address):
        return _classify_v4(addr)
    if addr in _MAPPED:
        assert addr.ipv4_mapped is not None
        return _embedded("ipv4-mapped", addr.ipv4_mapped)
    if addr in _NAT64:
        return _embedded("nat64", ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF))
    if addr in _SIX_TO_FOUR:
        assert addr.sixtofour is not None
        return _embedded("6to4", addr.sixtofour)
    if addr in _TEREDO:
        assert addr.teredo is not None
        server, client = addr.teredo
        return _embedded("teredo", client) or _embedded("teredo-server", server)
    for net, reason in _V6_TABLE:
        if addr in net:
            return reason
    return None if addr in _GLOBAL_UNICAST else "reserved"


def parse_network(text: str) -> IPNetwork:
    """A network from CIDR text (a bare address is a /32 or /128). ValueError says what is wrong."""
    if not isinstance(text, str):
        raise ValueError(f"allow_networks: expected a CIDR string, got {text!r}")
    try:
        return ipaddress.ip_network(text.strip())
    except ValueError as exc:
        hint = ""
        try:
            loose = ipaddress.ip_network(text.strip(), strict=False)
        except ValueError:
            pass
        else:
            hint = f" (did you mean {loose}?)"
        raise ValueError(f"allow_networks: {text!r} is not a valid network: {exc}{hint}") from None


class AddressGuard:
    """Refuses connections to non-public addresses, except the exempt ones.

    Exempt: addresses in `allow_networks`; every address a host name given to `allow_host` (a
    seed's host) resolves to, once the resolver has seen it; addresses given to `allow_address`.
    With ``enabled=False`` every address is allowed.
    """

    __slots__ = ("_addresses", "_hosts", "_networks", "_pending", "blocked", "enabled")

    def __init__(self, allow_networks: Iterable[str] = (), *, enabled: bool = True) -> None:
        if isinstance(allow_networks, str):
            raise ValueError("allow_networks: expected a list of CIDR strings, got one string")
        self._networks: tuple[IPNetwork, ...] = tuple(parse_network(n) for n in allow_networks)
        self.enabled = enabled
        self._hosts: set[str] = set()
        self._pending: set[str] = set()
        self._addresses: set[IPAddress] = set()
        self.blocked = 0

    @staticmethod
    def _host_key(name: str) -> str:
        return name.strip().lower().rstrip(".")

    def allow_host(self, name: str) -> None:
        """Exempt host `name` (a seed's host) and, once resolved, every address it resolves to.

        An IP literal is exempted as an address at once.
        """
        key = self._host_key(name)
        try:
            self.allow_address(key)
            return
        except ValueError:
            pass
        if key and key not in self._hosts:
            self._hosts.add(key)
            self._pending.add(key)

    def allow_address(self, ip: str | IPAddress) -> None:
        """Exempt one address (ValueError if it is not one)."""
        self._addresses.add(_unzoned(parse_address(ip)))

    def is_allowed_host(self, name: str) -> bool:
        return self._host_key(name) in self._hosts

    def learn(self, name: str, addresses: Iterable[str | IPAddress]) -> None:
        """Record what allowed host `name` resolved to: those addresses become exempt."""
        key = self._host_key(name)
        if key not in self._hosts:
            return
        self._pending.discard(key)
        for ip in addresses:
            self.allow_address(ip)

    def pending_hosts(self) -> list[str]:
        """Allowed host names whose addresses the resolver has not seen yet."""
        return sorted(self._pending)

    def forget_pending(self, name: str) -> None:
        self._pending.discard(self._host_key(name))

    def reason(self, host: str, ip: str | IPAddress) -> str | None:
        """None if connecting to `ip` (for `host`) is allowed, else why not."""
        if not self.enabled:
            return None
        addr = parse_address(ip)
        why = classify(addr)
        if why is None:
            return None
        plain = _unzoned(addr)
        if plain in self._addresses or self._host_key(host) in self._hosts:
            return None
        if any(plain.version == net.version and plain in net for net in self._networks):
            return None
        return why

    def error(self, host: str, ip: str | IPAddress, reason: str) -> BlockedAddress:
        """The BlockedAddress for a refused `ip` (counted in `blocked`)."""
        self.blocked += 1
        shown = str(ip)
        literal = self._host_key(host).strip("[]") == shown.lower()
        message = f"{shown} is {reason}" if literal else f"{host}: {shown} is {reason}"
        log.info("SSRF guard refused %s", message)
        return BlockedAddress(f"{message} (SSRF guard: not a seed's address nor in allow_networks)")

    def check(self, host: str, ip: str | IPAddress) -> None:
        """Raise BlockedAddress if connecting to `ip` for `host` is refused."""
        why = self.reason(host, ip)
        if why is not None:
            raise self.error(host, ip, why)

    def __repr__(self) -> str:
        nets = ", ".join(map(str, self._networks))
        state = "on" if self.enabled else "off"
        return (
            f"<AddressGuard {state} allow_networks=[{nets}] hosts={sorted(self._hosts)} "
            f"addresses={len(self._addresses)} blocked={self.blocked}>"
        )


class GuardedResolver(AbstractResolver):
    """Wraps a resolver so that it only returns addresses the SSRF guard allows.

    aiohttp connects to exactly the addresses its resolver returns, so filtering here means a DNS
    answer cannot change between the check and the connection. Refused answers are dropped; when
    none is left the resolver raises `BlockedAddress` (not an OSError, so aiohttp passes it on
    unwrapped). The answers for a seed's host (`guard.allow_host`) are all kept and become exempt
    addresses; before refusing anything, seed hosts not resolved yet are resolved once, so that
    exemption does not depend on which host happened to be fetched first.
    """

    __slots__ = ("_guard", "_inner", "_lock")

    def __init__(self, inner: AbstractResolver, guard: AddressGuard) -> None:
        self._inner = inner
        self._guard = guard
        self._lock = asyncio.Lock()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return (await self.resolve_timed(host, port, family))[0]

    async def resolve_timed(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> tuple[list[ResolveResult], float | None]:
        """`resolve`, with the TTL of the inner resolver's answer when it gives one
        (`crawler.fetch.resolver.TimedResolver`), else None."""
        inner, ttl = self._inner, None
        if isinstance(inner, TimedResolver):
            answers, ttl = await inner.resolve_timed(host, port, family)
        else:
            answers = await inner.resolve(host, port, family)
        return await self._kept(host, answers), ttl

    async def _kept(self, host: str, answers: list[ResolveResult]) -> list[ResolveResult]:
        """The answers the guard allows for `host` (BlockedAddress when none is left)."""
        guard = self._guard
        if guard.is_allowed_host(host):
            guard.learn(host, [answer["host"] for answer in answers])
            return answers
        kept = [a for a in answers if guard.reason(host, a["host"]) is None]
        if len(kept) < len(answers) and guard.pending_hosts():
            await self._learn_seed_addresses()
            kept = [a for a in answers if guard.reason(host, a["host"]) is None]
        if answers and not kept:
            first = answers[0]["host"]
            raise guard.error(host, first, guard.reason(host, first) or "refused")
        return kept

    async def check(self, host: str, ip: str | IPAddress) -> None:
        """Raise BlockedAddress unless the guard allows `ip` for `host` (for IP-literal URLs,
        which aiohttp connects to without calling the resolver)."""
        if self._guard.reason(host, ip) is not None and self._guard.pending_hosts():
            await self._learn_seed_addresses()
        self._guard.check(host, ip)

    async def _learn_seed_addresses(self) -> None:
        async with self._lock:
            for name in self._guard.pending_hosts():
                self._guard.forget_pending(name)
                try:
                    found = await self._inner.resolve(name, 0, socket.AF_UNSPEC)
                except (OSError, ValueError) as exc:  # the seed's own fetch reports it
                    log.debug("SSRF guard: seed host %s does not resolve: %s", name, exc)
                    continue
                self._guard.learn(name, [answer["host"] for answer in found])

    async def close(self) -> None:
        await self._inner.close()

    def __repr__(self) -> str:
        return f"<GuardedResolver {self._inner!r} {self._guard!r}>"
