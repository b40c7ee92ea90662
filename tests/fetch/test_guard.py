"""The SSRF guard: address classification (pure), exemptions, and enforcement in the fetcher.

Only loopback is ever contacted: the forbidden end-to-end target is a listener on 127.0.0.2 (not
the seeds' 127.0.0.1); every other range is tested as a pure function or through fake resolvers.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import AsyncIterator, Iterator

import aiohttp
import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

from crawler.errors import BlockedAddress, ConnectError
from crawler.fetch.fetcher import Fetcher
from crawler.fetch.guard import AddressGuard, GuardedResolver, classify, parse_network
from crawler.fetch.resolver import OverrideResolver
from crawler.fetch.settings import Timeouts, Transport
from crawler.fetch.translate import translate_error
from tests.support.server import serve

UA = "test-crawler/1.0"

# -- classification (pure) -------------------------------------------------------------------

CLASSIFIED: dict[str, list[str]] = {
    "unspecified": ["0.0.0.0", "::"],
    "this-network": ["0.0.0.1", "0.255.255.255"],
    "loopback": ["127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "[::1]"],
    "private": [
        "10.0.0.0", "10.1.2.3", "10.255.255.255", "172.16.0.1", "172.31.255.255",
        "192.168.0.1", "192.168.255.255", "64:ff9b:1::1",
    ],
    "shared": ["100.64.0.1", "100.127.255.255"],
    "link-local": [
        "169.254.0.1", "169.254.169.254", "169.254.255.255", "fe80::1", "fe80::1%eth0",
        "febf:ffff::1",
    ],
    "site-local": ["fec0::1"],
    "unique-local": ["fc00::1", "fd00::1", "fd12:3456:789a::1", "fdff:ffff::"],
    "multicast": ["224.0.0.1", "239.255.255.250", "ff02::1", "ff05::1:3", "ff0e::1"],
    "broadcast": ["255.255.255.255"],
    "reserved": [
        "240.0.0.1", "250.1.2.3", "255.255.255.254", "192.88.99.1", "100::1", "5f00::1",
        "1000::1", "::127.0.0.1", "4000::1", "e000::1",
    ],
    "documentation": [
        "192.0.2.1", "198.51.100.7", "203.0.113.255", "2001:db8::1", "2001:db8:ffff::1",
        "3fff::1",
    ],
    "benchmark": ["198.18.0.1", "198.19.255.255", "2001:2::1"],
    "ietf-protocol": ["192.0.0.1", "192.0.0.8", "192.0.0.170", "2001:10::1", "2001:20::1"],
    "ipv4-mapped loopback (127.0.0.1)": ["::ffff:127.0.0.1", "::ffff:7f00:1"],
    "ipv4-mapped private (10.0.0.1)": ["::ffff:10.0.0.1"],
    "ipv4-mapped link-local (169.254.169.254)": ["::ffff:169.254.169.254", "::ffff:a9fe:a9fe"],
    "ipv4-mapped unspecified (0.0.0.0)": ["::ffff:0.0.0.0"],
    "6to4 loopback (127.0.0.1)": ["2002:7f00:1::1"],
    "6to4 private (192.168.1.1)": ["2002:c0a8:101::"],
    "nat64 link-local (169.254.169.254)": ["64:ff9b::169.254.169.254"],
    "nat64 private (10.0.0.1)": ["64:ff9b::a00:1"],
    "teredo documentation (192.0.2.45)": ["2001:0:4136:e378:8000:63bf:3fff:fdd2"],
    "teredo loopback (127.0.0.1)": ["2001:0:808:808::80ff:fffe"],  # client bits inverted
}  # fmt: skip

PUBLIC = [
    "1.1.1.1", "8.8.8.8", "93.184.216.34", "9.255.255.255", "11.0.0.0", "100.63.255.255",
    "100.128.0.0", "126.255.255.255", "128.0.0.0", "169.253.255.255", "169.255.0.0",
    "172.15.255.255", "172.32.0.0", "192.0.0.9", "192.0.0.10", "192.0.1.1", "192.0.3.0",
    "192.167.255.255", "192.169.0.0", "198.17.255.255", "198.20.0.0", "223.255.255.255",
    "2606:4700:4700::1111", "2a00:1450:4001::200e", "2000::1", "3ffe::1", "2001:4860::8888",
    "2001:1::1", "2001:3::1", "2001:4:112::1", "::ffff:8.8.8.8", "64:ff9b::808:808",
    "2002:808:808::1", ipaddress.IPv4Address("8.8.4.4"), ipaddress.IPv6Address("2001:4860::1"),
]  # fmt: skip


def _cases() -> Iterator[tuple[str, str]]:
    for reason, addresses in CLASSIFIED.items():
        for address in addresses:
            yield address, reason


@pytest.mark.parametrize(("address", "reason"), list(_cases()))
def test_classify_refused(address: str, reason: str) -> None:
    assert classify(address) == reason


@pytest.mark.parametrize("address", PUBLIC, ids=str)
def test_classify_public(address: str | ipaddress.IPv4Address | ipaddress.IPv6Address) -> None:
    assert classify(address) is None


def test_classify_takes_address_objects() -> None:
    assert classify(ipaddress.ip_address("169.254.169.254")) == "link-local"
    mapped = ipaddress.ip_address("::ffff:192.168.0.1")
    assert classify(mapped) == "ipv4-mapped private (192.168.0.1)"


@pytest.mark.parametrize("text", ["", "example.org", "127.1", "2130706433", "0177.0.0.1", "1.2.3"])
def test_classify_rejects_non_addresses(text: str) -> None:
    with pytest.raises(ValueError, match="does not appear to be"):
        classify(text)


def test_every_ipv4_slash8_agrees_with_the_stdlib_where_it_is_unambiguous() -> None:
    # Cross-check the table against ipaddress on one address per /8: where the stdlib says
    # "private" or "loopback" etc., the guard refuses too.
    for first in range(256):
        addr = ipaddress.IPv4Address(f"{first}.1.2.3")
        if addr.is_private or addr.is_loopback or addr.is_multicast or addr.is_reserved:
            assert classify(addr) is not None, addr


# -- AddressGuard ----------------------------------------------------------------------------


def test_guard_refuses_with_a_clear_message() -> None:
    guard = AddressGuard()
    with pytest.raises(BlockedAddress, match=r"169\.254\.169\.254 is link-local") as info:
        guard.check("169.254.169.254", "169.254.169.254")
    assert info.value.describe().startswith("blocked: 169.254.169.254 is link-local")
    with pytest.raises(BlockedAddress, match=r"^metadata\.test: 169\.254\.169\.254 is link-local"):
        guard.check("metadata.test", "169.254.169.254")
    assert guard.blocked == 2
    guard.check("example.org", "93.184.216.34")  # public: no exception
    assert guard.reason("example.org", "10.0.0.1") == "private"


def test_allow_networks_v4_v6_and_mapped() -> None:
    guard = AddressGuard(["10.0.0.0/8", "fd00::/8", "192.168.1.7"])
    for ip in ["10.0.0.1", "10.255.0.9", "::ffff:10.1.1.1", "fd00::1", "fdff::2", "192.168.1.7"]:
        assert guard.reason("h.test", ip) is None, ip
    for ip in ["172.16.0.1", "127.0.0.1", "fc00::1", "192.168.1.8", "::ffff:192.168.1.8"]:
        assert guard.reason("h.test", ip) is not None, ip


@pytest.mark.parametrize(
    ("networks", "needle"),
    [
        (["10.0.0.1/8"], r"'10\.0\.0\.1/8' is not a valid network: .*did you mean 10\.0\.0\.0/8"),
        (["10.0.0.0/33"], r"'10\.0\.0\.0/33' is not a valid network"),
        (["localhost"], r"'localhost' is not a valid network"),
        (["fd00::/129"], r"'fd00::/129' is not a valid network"),
        ("10.0.0.0/8", r"expected a list of CIDR strings"),
        ([10], r"expected a CIDR string, got 10"),
    ],
)
def test_bad_allow_networks(networks: object, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        AddressGuard(networks)  # type: ignore[arg-type]


def test_parse_network() -> None:
    assert parse_network(" 127.0.0.0/8 ") == ipaddress.ip_network("127.0.0.0/8")
    assert parse_network("::1") == ipaddress.ip_network("::1/128")


def test_allowed_host_exempts_its_addresses_for_every_name() -> None:
    guard = AddressGuard()
    guard.allow_host("Seed.Test.")
    assert guard.is_allowed_host("seed.test")
    assert guard.pending_hosts() == ["seed.test"]
    assert guard.reason("seed.test", "127.0.0.1") is None  # the seed's own name: any answer
    assert guard.reason("other.test", "127.0.0.1") == "loopback"
    guard.learn("SEED.test", ["127.0.0.1", "fe80::1%eth0"])
    assert guard.pending_hosts() == []
    assert guard.reason("other.test", "127.0.0.1") is None
    assert guard.reason("other.test", "::ffff:127.0.0.1") is None
    assert guard.reason("other.test", "fe80::1") is None
    assert guard.reason("other.test", "127.0.0.2") == "loopback"
    guard.learn("not-a-seed.test", ["127.0.0.2"])  # only seed hosts teach addresses
    assert guard.reason("other.test", "127.0.0.2") == "loopback"


def test_allow_host_with_an_ip_literal_and_allow_address() -> None:
    guard = AddressGuard()
    guard.allow_host("127.0.0.3")
    guard.allow_host("[::1]")
    guard.allow_address("10.9.8.7")
    assert guard.pending_hosts() == []
    for ip in ["127.0.0.3", "::1", "10.9.8.7"]:
        assert guard.reason("x.test", ip) is None
    with pytest.raises(ValueError, match="does not appear to be"):
        guard.allow_address("nonsense")


def test_disabled_guard_allows_everything_and_repr() -> None:
    guard = AddressGuard(["10.0.0.0/8"], enabled=False)
    guard.check("x.test", "169.254.169.254")
    assert repr(guard).startswith("<AddressGuard off allow_networks=[10.0.0.0/8]")
    on = AddressGuard()
    on.allow_host("seed.test")
    expected = "<AddressGuard on allow_networks=[] hosts=['seed.test'] addresses=0 blocked=0>"
    assert repr(on) == expected


# -- GuardedResolver (fake resolvers: nothing is contacted) --------------------------------------


class FakeResolver(AbstractResolver):
    """Answers from a table; counts calls. A name may map to several addresses."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table
        self.calls: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.calls.append(host)
        if host not in self.table:
            raise OSError(socket.EAI_NONAME, "Name or service not known")
        return [
            {"hostname": host, "host": ip, "port": port,
             "family": socket.AF_INET6 if ":" in ip else socket.AF_INET, "proto": 0,
             "flags": socket.AI_NUMERICHOST}
            for ip in self.table[host]
        ]  # fmt: skip

    async def close(self) -> None:
        pass


async def test_guarded_resolver_filters_mixed_answers() -> None:
    inner = FakeResolver({"mixed.test": ["10.0.0.1", "93.184.216.34", "::ffff:127.0.0.1",
                                         "2606:4700::1", "169.254.169.254"]})  # fmt: skip
    resolver = GuardedResolver(inner, AddressGuard())
    answers = await resolver.resolve("mixed.test", 80)
    assert [a["host"] for a in answers] == ["93.184.216.34", "2606:4700::1"]


async def test_guarded_resolver_raises_when_nothing_is_left() -> None:
    inner = FakeResolver({"metadata.test": ["169.254.169.254", "fd00::1"],
                          "hex.test": ["127.0.0.2"]})  # fmt: skip
    guard = AddressGuard()
    resolver = GuardedResolver(inner, guard)
    with pytest.raises(BlockedAddress, match=r"metadata\.test: 169\.254\.169\.254 is link-local"):
        await resolver.resolve("metadata.test", 80)
    with pytest.raises(BlockedAddress, match="is loopback"):
        await resolver.resolve("hex.test", 80)
    assert guard.blocked == 2
    with pytest.raises(OSError, match="not known"):  # resolution errors pass through
        await resolver.resolve("nxdomain.test", 80)


async def test_rebinding_each_answer_is_checked() -> None:
    # A name that answers public first and private next (DNS rebinding) is refused the second
    # time: the addresses checked are the ones aiohttp connects to.
    inner = FakeResolver({"rebind.test": ["93.184.216.34"]})
    resolver = GuardedResolver(inner, AddressGuard())
    assert len(await resolver.resolve("rebind.test", 80)) == 1
    inner.table["rebind.test"] = ["10.0.0.5"]
    with pytest.raises(BlockedAddress, match="is private"):
        await resolver.resolve("rebind.test", 80)


async def test_seed_hosts_are_resolved_before_refusing() -> None:
    # other.test shares the seed's private address; it is fetched before the seed's own host,
    # and still allowed: the guard learns the seed's addresses before refusing anything.
    inner = FakeResolver({"seed.test": ["10.1.1.1"], "other.test": ["10.1.1.1"],
                          "evil.test": ["10.1.1.2"], "gone.test": []})  # fmt: skip
    guard = AddressGuard()
    guard.allow_host("seed.test")
    guard.allow_host("nxdomain.test")  # does not resolve: ignored, never retried
    resolver = GuardedResolver(inner, guard)
    assert [a["host"] for a in await resolver.resolve("other.test", 80)] == ["10.1.1.1"]
    assert guard.pending_hosts() == []
    with pytest.raises(BlockedAddress):
        await resolver.resolve("evil.test", 80)
    assert await resolver.resolve("gone.test", 80) == []
    assert inner.calls.count("seed.test") == 1
    assert inner.calls.count("nxdomain.test") == 1
    assert "GuardedResolver" in repr(resolver)


def test_translate_error_unwraps_a_wrapped_blocked_address() -> None:
    blocked = BlockedAddress("10.0.0.1 is private")
    wrapped = aiohttp.ClientOSError("wrapped")
    wrapped.__cause__ = blocked
    assert translate_error(wrapped) is blocked
    assert isinstance(translate_error(aiohttp.ClientOSError("plain")), ConnectError)


# -- end to end: a real server on 127.0.0.1, a forbidden listener on 127.0.0.2 --------------------


@pytest.fixture
async def server() -> AsyncIterator[int]:
    """An aiohttp server on 127.0.0.1 (the seeds' address)."""

    async def handler(request: web.Request) -> web.StreamResponse:
        if request.path == "/redirect":
            target = request.query["to"]
            return web.Response(status=302, headers={"Location": target})
        return web.Response(text=f"hello from {request.host}")

    async with serve(handler) as port:
        yield port


class Forbidden:
    """A bare TCP listener on 127.0.0.2 that counts connections (and answers HTTP 200)."""

    def __init__(self) -> None:
        self.connections = 0
        self.port = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nConnection: close\r\n\r\n")
            writer.write(b"forbidden")
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@pytest.fixture
async def forbidden() -> AsyncIterator[Forbidden]:
    target = Forbidden()
    try:
        srv = await asyncio.start_server(target.handle, "127.0.0.2", 0)
    except OSError as exc:  # pragma: no cover - Linux routes all of 127/8 to loopback
        pytest.skip(f"cannot listen on 127.0.0.2: {exc}")
    target.port = srv.sockets[0].getsockname()[1]
    async with srv:
        yield target


def make_fetcher(guard: AddressGuard | None, port: int = 0) -> Fetcher:
    overrides = {"seed.test": "127.0.0.1", "also-local.test": "127.0.0.1",
                 "evil.test": "127.0.0.2"}  # fmt: skip
    return Fetcher(
        Transport(user_agent=UA, resolve=overrides),
        timeouts=Timeouts(total_timeout=5.0),
        guard=guard,
    )


async def test_seed_host_fetched_forbidden_host_refused_without_connecting(
    server: int, forbidden: Forbidden
) -> None:
    guard = AddressGuard()
    guard.allow_host("seed.test")
    async with make_fetcher(guard) as fetcher:
        assert fetcher.guard is guard
        response = await fetcher.fetch(f"http://seed.test:{server}/")
        assert response.status == 200
        assert response.ip == "127.0.0.1"
        with pytest.raises(BlockedAddress, match=r"evil\.test: 127\.0\.0\.2 is loopback") as info:
            await fetcher.fetch(f"http://evil.test:{forbidden.port}/")
        assert info.value.kind == "blocked"
        # the literal form, IPv4-mapped, and a legacy numeric form of the same address
        for host in ["127.0.0.2", "[::ffff:127.0.0.2]", "2130706434", "127.2"]:
            with pytest.raises(BlockedAddress):
                await fetcher.fetch(f"http://{host}:{forbidden.port}/")
    assert forbidden.connections == 0
    assert guard.blocked == 5


async def test_seed_address_is_exempt_for_other_names_and_literals(server: int) -> None:
    # The seed's address (127.0.0.1) is exempt for any name and as a literal, even when it is
    # fetched before the seed's own host: the guard resolves seed hosts before refusing.
    guard = AddressGuard()
    guard.allow_host("seed.test")
    async with make_fetcher(guard) as fetcher:
        assert (await fetcher.fetch(f"http://127.0.0.1:{server}/")).status == 200
        assert (await fetcher.fetch(f"http://also-local.test:{server}/")).status == 200


async def test_without_seed_loopback_is_refused(server: int) -> None:
    async with make_fetcher(AddressGuard()) as fetcher:
        with pytest.raises(BlockedAddress, match=r"seed\.test: 127\.0\.0\.1 is loopback"):
            await fetcher.fetch(f"http://seed.test:{server}/")
        with pytest.raises(BlockedAddress, match=r"^127\.0\.0\.1 is loopback"):
            await fetcher.fetch(f"http://127.0.0.1:{server}/")


async def test_redirect_target_is_checked(server: int, forbidden: Forbidden) -> None:
    # Redirects are not followed by the fetcher: the engine fetches the Location like any URL.
    guard = AddressGuard()
    guard.allow_host("seed.test")
    target = f"http://evil.test:{forbidden.port}/latest/meta-data/"
    async with make_fetcher(guard) as fetcher:
        response = await fetcher.fetch(f"http://seed.test:{server}/redirect?to={target}")
        assert response.status == 302
        assert response.location == target
        with pytest.raises(BlockedAddress):
            await fetcher.fetch(target)
    assert forbidden.connections == 0


@pytest.mark.parametrize(
    "guard",
    [AddressGuard(enabled=False), AddressGuard(["127.0.0.2/32"]), None],
    ids=["disabled", "allow_networks", "no-guard"],
)
async def test_control_the_forbidden_listener_is_reachable_when_allowed(
    forbidden: Forbidden, guard: AddressGuard | None
) -> None:
    # Positive control: the same fetches do reach 127.0.0.2 when the guard lets them, so the
    # zero-connection assertions above are meaningful.
    async with make_fetcher(guard) as fetcher:
        by_name = await fetcher.fetch(f"http://evil.test:{forbidden.port}/")
        literal = await fetcher.fetch(f"http://127.0.0.2:{forbidden.port}/")
    assert by_name.body == literal.body == b"forbidden"
    assert forbidden.connections == 2


async def test_override_resolver_is_wrapped_not_replaced() -> None:
    guard = AddressGuard()
    fetcher = Fetcher(Transport(user_agent=UA, resolve={"a.test": "127.0.0.1"}), guard=guard)
    assert "GuardedResolver" in repr(fetcher) and "OverrideResolver" in repr(fetcher)
    plain = Fetcher(Transport(user_agent=UA), resolver=OverrideResolver({}))
    assert plain.guard is None and "GuardedResolver" not in repr(plain)


async def test_an_allowed_literal_is_checked_once_and_a_blocked_one_every_time(
    server: int, forbidden: Forbidden, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The fetcher remembers IP-literal hosts the guard allowed (allowances only grow during a
    # crawl); a refused literal is refused, and counted, on every request.
    guard = AddressGuard()
    guard.allow_host("seed.test")
    checks: list[str] = []
    check = AddressGuard.check

    def counting(self: AddressGuard, host: str, ip: str) -> None:
        checks.append(host)
        check(self, host, ip)

    monkeypatch.setattr(AddressGuard, "check", counting)
    async with make_fetcher(guard) as fetcher:
        for _ in range(3):
            assert (await fetcher.fetch(f"http://127.0.0.1:{server}/")).status == 200
        for _ in range(3):
            with pytest.raises(BlockedAddress):
                await fetcher.fetch(f"http://127.0.0.2:{forbidden.port}/")
    assert checks.count("127.0.0.1") == 1
    assert checks.count("127.0.0.2") == 3
    assert guard.blocked == 3
    assert forbidden.connections == 0
