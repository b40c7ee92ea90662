"""HTTP fetching: one aiohttp session, capped streaming bodies, a floor on the transfer rate.

Redirects are not followed here: a 3xx comes back as a `Response` (`crawler.fetch.response`) with
its `location`, and the engine sends the target through canonicalization, scope and the Sieve like
any other link.
Every aiohttp, asyncio and OS error is translated into a `crawler.errors.FetchError` subclass by
`crawler.fetch.translate.translate_error()`; nothing else in the crawler catches aiohttp's
exceptions.

A transfer slower than ``min_rate`` bytes/s over ``min_rate_window`` seconds is cut
(`crawler.fetch.watch`, like curl's ``--speed-limit``/``--speed-time``): the response headers must
be complete within ``min_rate_window`` of the request being sent, then the body is held to the
floor, both on the event loop's clock, checked every ``min(1 s, window / 4)`` (``TooSlow``). The
peer's address is taken when the request is sent, while the connection is surely open (a
``Connection: close`` response may be gone by the time its headers are parsed).

The resolver is `crawler.fetch.resolver.OverrideResolver` (the ``[fetch] resolve`` overrides) unless
one is given. With an `AddressGuard` (the SSRF guard, `crawler.fetch.guard`) the resolver is wrapped
in a `GuardedResolver`, so aiohttp only ever connects to addresses the guard allows, and IP-literal
URLs (which aiohttp never resolves) are checked before connecting; both raise `BlockedAddress`.
Both sit under `addresses`, the `crawler.fetch.resolver.AddressBook` the connector asks: the crawl's
one DNS cache, where the frontier resolves each host before scheduling it and pins the address it
scheduled it by, which the connection then goes to without another lookup.

Steering (`crawler.fetch.steering`): extra headers for every request, the `[[hosts]]` rules' headers
and basic auth for the hosts they match only, an optional cookie jar and an optional proxy (bypassed
for NO_PROXY hosts). `Response.request_headers` never holds a secret header's value. An `Outage`
gate (`crawler.fetch.outage`) makes a proxy or network outage pause the fetches instead of failing
them.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import ssl
import time
from collections.abc import Mapping
from types import TracebackType
from typing import NoReturn

import aiohttp
from aiohttp.abc import AbstractResolver
from yarl import URL

from crawler.errors import BodyTooLarge, ConnectionReset, DecodingError, TooSlow
from crawler.fetch.bodies import Decoder, read_capped
from crawler.fetch.cookies import CrawlCookieJar
from crawler.fetch.guard import AddressGuard, GuardedResolver, parse_address
from crawler.fetch.headers import content_coding, header_text
from crawler.fetch.noproxy import NoProxy
from crawler.fetch.outage import Outage
from crawler.fetch.resolver import AddressBook, DnsTtl, OverrideResolver
from crawler.fetch.response import Response
from crawler.fetch.settings import FetchLimits, Timeouts, Transport
from crawler.fetch.steering import HostRules, redact, tls_context
from crawler.fetch.translate import Proxied, translate_error
from crawler.fetch.watch import (
    CURRENT,
    STALE_TRIES,
    FetchWatch,
    Pacer,
    StaleConnection,
    WatchedRequest,
)

__all__ = ["Fetcher"]

log = logging.getLogger(__name__)

ACCEPT = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5"


class Fetcher:
    """Fetches URLs with one pooled aiohttp session. Use as an async context manager."""

    __slots__ = ("_connector_limit", "_cookies", "_guarded", "_headers", "_literals_ok",
                 "_no_proxy", "_pacer", "_proxy", "_proxy_auth", "_resolver", "_secret", "_session",
                 "_ssl", "_ssl_rules", "_timeout", "addresses", "guard", "max_body",
                 "max_header_size", "min_rate", "min_rate_window", "outage", "rules",
                 "user_agent")  # fmt: skip

    def __init__(
        self,
        transport: Transport,
        timeouts: Timeouts = Timeouts(),
        limits: FetchLimits = FetchLimits(),
        *,
        guard: AddressGuard | None = None,
        rules: HostRules | None = None,
        outage: Outage | None = None,
        resolver: AbstractResolver | None = None,
        dns: DnsTtl = DnsTtl(),
    ) -> None:
        """`transport`: how requests go out (`crawler.fetch.settings`); `guard` (None: no SSRF
        guard) filters every resolver answer and IP-literal URL; `rules` add their headers and
        TLS setting to the hosts they match; `outage`: the crawl-wide connectivity gate;
        `resolver` replaces the one `transport.resolve` makes; `dns`: how long answers are kept
        (`crawler.fetch.resolver.AddressBook`, the `addresses` the frontier pins). TLS
        certificates are verified unless `transport.tls_verify` is false or a rule says
        otherwise for its hosts."""
        t = timeouts
        self._pacer = Pacer(t.min_rate, t.min_rate_window)  # ValueError if out of range
        self.min_rate = float(t.min_rate)
        self.min_rate_window = float(t.min_rate_window)
        self.user_agent = transport.user_agent
        self.max_body = limits.max_body
        self.max_header_size = limits.max_header_size
        self._timeout = aiohttp.ClientTimeout(
            total=t.total_timeout, sock_connect=t.connect_timeout, sock_read=t.read_timeout
        )
        tls_verify, ca_file, proxy = transport.tls_verify, transport.ca_file, transport.proxy
        base = resolver or OverrideResolver(transport.resolve)
        self.guard = guard
        self._guarded = None if guard is None else GuardedResolver(base, guard)
        # the crawl's one resolution: the frontier pins each host's address here
        self.addresses = AddressBook(base if self._guarded is None else self._guarded, dns)
        self._resolver: AbstractResolver = self.addresses
        self._connector_limit = limits.connections
        self._session: aiohttp.ClientSession | None = None
        self._headers = dict(transport.headers)
        self._cookies = transport.cookies
        self.rules = rules or HostRules(())
        self._secret = self.rules.secret | {name.lower() for name in self._headers}
        # the proxy URL's user:password become Proxy-Authorization, in UTF-8 (aiohttp's own
        # Latin-1 failed on a "€" with an error telling it) and kept out of the URL
        self._proxy = URL(proxy) if proxy else None
        self._proxy_auth: dict[str, str] | None = None
        if self._proxy is not None and (self._proxy.user or self._proxy.password):
            user, password = self._proxy.user or "", self._proxy.password or ""
            self._proxy_auth = {"Proxy-Authorization": aiohttp.encode_basic_auth(user, password)}
            self._proxy = self._proxy.with_user(None)
        self._no_proxy = NoProxy.from_environment()  # read once, when the fetcher is made
        # TLS: the connector's setting (True: aiohttp's default context), and the per-request
        # one for hosts whose rule says otherwise; a rule turning verification back on, or a
        # CA file, needs a verifying context of its own
        context = bool(ca_file) or (not tls_verify and any(r.tls_verify for r in self.rules.rules))
        verifying: ssl.SSLContext | bool = tls_context(ca_file) if context else True
        self._ssl: ssl.SSLContext | bool = verifying if tls_verify else False
        self._ssl_rules: dict[bool, ssl.SSLContext | bool] = {True: verifying, False: False}
        if not tls_verify:
            log.warning("TLS certificates are not verified ([fetch] tls_verify = false)")
        for rule in self.rules.rules:
            if rule.tls_verify is False:
                log.warning("TLS certificates of hosts matching %r are not verified", rule.match)
        # IP-literal hosts the guard allowed: its allowances only grow during a crawl, so a
        # crawl of an address (say 127.0.0.1) checks it once, not on every request
        self._literals_ok: set[str] = set()
        self.outage = outage

    async def __aenter__(self) -> Fetcher:
        connector = aiohttp.TCPConnector(
            resolver=self._resolver,
            limit=self._connector_limit,
            use_dns_cache=False,  # the AddressBook caches, and keeps the frontier's pins
            ssl=self._ssl,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=self._timeout,
            cookie_jar=CrawlCookieJar() if self._cookies else aiohttp.DummyCookieJar(),
            headers={
                "User-Agent": self.user_agent,
                "Accept": ACCEPT,
                "Accept-Encoding": "gzip, deflate",
                **self._headers,
            },
            max_line_size=self.max_header_size,
            max_field_size=self.max_header_size,
            auto_decompress=False,
            request_class=WatchedRequest,
        )
        return self

    async def __aexit__(self, et: type[BaseException] | None, e: BaseException | None,
                        tb: TracebackType | None) -> None:  # fmt: skip
        await self.close()

    async def close(self) -> None:
        self._pacer.close()
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    async def fetch(
        self,
        url: str,
        *,
        max_body: int | None = None,
        truncate: bool = False,
        conditional: Mapping[str, str] | None = None,
    ) -> Response:
        """GET `url` without following redirects. Raises a FetchError subclass on failure.

        A body (after decompression) over `max_body` bytes raises BodyTooLarge, or with
        `truncate` is cut at the cap (robots.txt: RFC 9309 lets crawlers parse the first 500 KiB).
        The body of a response that is not a 2xx is always cut at the cap, and read as empty if
        it cannot be decoded (up to where it can, if that is further on): its status is what
        counts (a redirect's Location, a 503's wait).
        `conditional`: the ``If-None-Match`` / ``If-Modified-Since`` headers of a recrawl.
        A request that met pooled connections the server had closed (`StaleConnection`) is
        sent again: a keep-alive timeout is no failure of the URL.
        """
        if self._session is None:
            raise RuntimeError("Fetcher is not open: use 'async with Fetcher(...)'")
        attempt = functools.partial(self._fetch_fresh, url, max_body, truncate, conditional)
        if self.outage is None:
            return await attempt()
        target = URL(url, encoded=True)
        host = target.raw_host or ""
        proxied = self._proxy_for(host, target.port or 0) is not None
        return await self.outage.through(attempt, host, proxied=proxied)

    async def _fetch_fresh(
        self, url: str, max_body: int | None, truncate: bool, conditional: Mapping[str, str] | None
    ) -> Response:
        """One fetch, sent again while it meets pooled connections the server had closed."""
        for _ in range(STALE_TRIES):
            try:
                return await self._fetch(url, max_body, truncate, conditional, stale=True)
            except StaleConnection as exc:
                log.debug("%s: %s on a pooled connection: sent again", url, exc.args[0])
        return await self._fetch(url, max_body, truncate, conditional, stale=False)

    async def _fetch(
        self,
        url: str,
        max_body: int | None,
        truncate: bool,
        conditional: Mapping[str, str] | None,
        *,
        stale: bool,
    ) -> Response:
        """One `fetch`; `stale`: raise `StaleConnection` for a reset on a reused connection.
        Its pace is watched (`crawler.fetch.watch`) until the body is read."""
        assert self._session is not None
        cap = self.max_body if max_body is None else max_body
        started = time.monotonic()
        waiting = True  # until the response headers are complete
        watch = self._pacer.start()
        token = CURRENT.set(watch)
        proxy: URL | None = None
        https = False
        try:
            target = URL(url, encoded=True)
            if self._guarded is not None:
                await self._check_literal(target)
            https = target.scheme == "https"
            headers, proxy, tunnel, tls = self._steer(target, conditional)
            async with self._session.get(
                target,
                allow_redirects=False,
                headers=headers,
                proxy=proxy,
                proxy_headers=tunnel,
                ssl=tls,
            ) as resp:
                waiting = False
                latency = time.monotonic() - started
                raw, body, cut = await self._read_body(resp, url, cap, truncate, watch)
                return self._response(url, resp, raw, body, cut, latency, started, watch.peer)
        except asyncio.CancelledError:
            if watch.expired():
                raise self._too_slow(waiting) from None
            raise
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
            self._fail(exc, watch, waiting=waiting, proxy=proxy, https=https, stale=stale)
        finally:
            self._pacer.finish(watch)
            CURRENT.reset(token)

    def _steer(
        self, target: URL, conditional: Mapping[str, str] | None
    ) -> tuple[Mapping[str, str] | None, URL | None, dict[str, str] | None, ssl.SSLContext | bool]:
        """(headers, proxy, CONNECT headers, TLS setting) of a request to `target`: its host
        rules' headers and a recrawl's `conditional` ones, the proxy unless NO_PROXY lists the
        host, the proxy's credentials (in the CONNECT for https, else in the request)."""
        host, port = target.raw_host or "", target.port or 0  # as host_key spells it
        scheme = target.scheme
        verify = self.rules.tls_verify(host, port, scheme)
        headers = _merged(self.rules.headers(host, port, scheme), conditional)
        proxy = self._proxy_for(host, port)
        tunnel = None
        if proxy is not None and self._proxy_auth is not None:  # CONNECT's, or the request's
            if scheme == "https":
                tunnel = self._proxy_auth
            else:
                headers = {**(headers or {}), **self._proxy_auth}
        return headers, proxy, tunnel, True if verify is None else self._ssl_rules[verify]

    async def _read_body(
        self, resp: aiohttp.ClientResponse, url: str, cap: int, truncate: bool, watch: FetchWatch
    ) -> tuple[bytes, bytes, bool]:
        """(raw, decoded, cut) body of `resp`, decompressed, held to `cap` as `fetch` tells and
        to the transfer-rate floor. A 2xx in a coding it cannot decode raises DecodingError."""
        declared = resp.content_length
        # a redirect's or an error's status counts, not its body: one that cannot be
        # decoded is read as empty, one past the cap is cut there (browsers follow a
        # redirect without reading it)
        lenient = not 200 <= resp.status < 300
        truncate = truncate or lenient
        try:
            encoding = content_coding(resp.headers)
        except DecodingError:
            if not lenient:
                raise
            encoding = "unsupported"
        if declared is not None and declared > cap and not encoding and not truncate:
            raise BodyTooLarge(f"Content-Length {declared} exceeds the cap of {cap} bytes")
        decoder = Decoder.make(encoding, lenient=lenient)
        self._pacer.body(watch, resp.content)
        raw, body, cut = await read_capped(resp, cap, truncate, decoder)
        if decoder is not None and decoder.failed:
            log.info("%s: the body of a %d cannot be decoded: read where it decodes", url,
                     resp.status)  # fmt: skip
        return raw, body, cut

    def _response(
        self, url: str, resp: aiohttp.ClientResponse, raw: bytes, body: bytes, cut: bool,
        latency: float, started: float, peer: str | None,
    ) -> Response:  # fmt: skip
        """The `Response` record of `resp` and its body, read from `peer`: `latency` seconds
        to the headers, `started` on `time.monotonic()`. Secret request headers are redacted."""
        version = resp.version
        return Response(
            url=url,
            status=resp.status,
            headers=tuple(
                (str(k), v if v.isascii() else header_text(k, v)) for k, v in resp.headers.items()
            ),
            body=body,
            latency=latency,
            elapsed=time.monotonic() - started,
            ip=peer,
            reason=header_text("", resp.reason or ""),
            version=f"HTTP/{version.major}.{version.minor}" if version else "HTTP/1.1",
            request_headers=redact(
                ((str(k), v) for k, v in resp.request_info.headers.items()), self._secret
            ),
            raw_body=None if raw is body else raw,
            truncated=cut,
        )

    def _fail(
        self, exc: BaseException, watch: FetchWatch, *, waiting: bool, proxy: URL | None,
        https: bool, stale: bool,
    ) -> NoReturn:  # fmt: skip
        """Raise what an aiohttp, asyncio or OS error `exc` of a fetch means: `TooSlow` when the
        transfer-rate floor cut it, `StaleConnection` (with `stale`) for a reset of a reused
        connection met before the headers, else its `translate_error` FetchError."""
        if watch.expired():
            raise self._too_slow(waiting) from exc
        via = None  # through a proxy, what failed may be the proxy (crawler.fetch.translate)
        if proxy is not None:
            via = Proxied(proxy.host or "", proxy.port or 0, watch.sent_at is None, https)
        if isinstance(exc, aiohttp.ClientResponseError):
            # its request_info holds the request's headers (credentials), and a proxy's
            # error its URL with the password: not chained, so no traceback shows them
            raise translate_error(exc, waiting=waiting, proxy=via) from None
        error = translate_error(exc, waiting=waiting, proxy=via)
        if stale and waiting and watch.reused and isinstance(error, ConnectionReset):
            raise StaleConnection(error) from exc
        raise error from exc

    def _too_slow(self, waiting: bool) -> TooSlow:
        phase = "the response headers" if waiting else "the body"
        floor = f"less than {self.min_rate:g} bytes/s over {self.min_rate_window:g} s"
        return TooSlow(f"{floor} ({phase})", waiting=waiting)

    def _proxy_for(self, host: str, port: int) -> URL | None:
        """The proxy for `host` on `port`: none when NO_PROXY lists it."""
        if self._proxy is None or self._no_proxy.bypass(host, port):
            return None
        return self._proxy

    async def _check_literal(self, target: URL) -> None:
        """Check an IP-literal host (aiohttp connects to those without calling the resolver)."""
        assert self._guarded is not None and self.guard is not None
        host = target.raw_host
        # aiohttp's own test for "this host is an address": a colon, or only digits and dots.
        if not host or host in self._literals_ok:
            return
        if not (":" in host or host.replace(".", "").isdigit()):
            return
        try:
            address = parse_address(host)
        except ValueError:
            if self.guard.enabled:  # 127.1, 2130706433, 0177.0.0.1: the OS may map them
                raise self.guard.error(host, host, "not a canonical IP address") from None
            return
        await self._guarded.check(host, address)
        if self.guard.enabled:  # allowed (else check raised)
            if len(self._literals_ok) >= _LITERAL_MEMO:
                self._literals_ok.clear()
            self._literals_ok.add(host)

    def __repr__(self) -> str:
        state = "open" if self._session is not None else "closed"
        steering = f"cookies={self._cookies} proxy={self._proxy is not None} rules={self.rules!r}"
        return f"<Fetcher {state} max_body={self.max_body} resolver={self._resolver!r} {steering}>"


_LITERAL_MEMO = 4096  # IP-literal hosts the guard let through, remembered (bounded)


def _merged(
    rule: Mapping[str, str] | None, conditional: Mapping[str, str] | None
) -> Mapping[str, str] | None:
    """A host rule's headers plus a recrawl's conditional ones (None when there are neither)."""
    if not conditional:
        return rule
    return {**rule, **conditional} if rule else conditional
