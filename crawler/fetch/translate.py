"""One place for foreign errors: what aiohttp, asyncio and the OS raise while fetching, translated
into the crawler's own `crawler.errors.FetchError` subclasses.

`crawler.fetch.fetcher` calls `translate_error` on everything a fetch raises; nothing else in the
crawler catches aiohttp's exceptions. Whether the error came while waiting for the response
headers or while reading the body decides between a reset and a truncated body, and names the
phase a timeout cut.

Through a proxy (`Proxied`), what is the proxy's failure becomes a `ProxyError`: a connection
to it refused, its name unresolved (aiohttp raises the same DNS error as for a target: told
apart by the name), the connection closed or reset before the request went out (before it
answered CONNECT), a connect timeout of a plain-HTTP request (its only connection is to the
proxy), a 407 to CONNECT. A 403, 502, 503 or 504 to CONNECT is the proxy *answering* about the
target (its policy, or the target down): a `ConnectError` held against the target host. The
signs that the crawler's own network is down (ENETUNREACH/ENETDOWN, a DNS resolver that cannot
be reached: EAI_AGAIN, never a name that does not exist) are flagged with `network`.
"""

from __future__ import annotations

import asyncio
import errno
import os
import socket
from typing import NamedTuple

import aiohttp

from crawler.errors import (
    BlockedAddress,
    CertificateError,
    ConnectError,
    ConnectionReset,
    DecodingError,
    DNSError,
    FetchError,
    FetchTimeout,
    ProtocolError,
    ProxyError,
    Truncated,
)

__all__ = ["Proxied", "translate_error"]


class Proxied(NamedTuple):
    """A fetch through a proxy: the proxy's host and port; `connecting`: the request had not
    gone out yet (still connecting to the proxy, or waiting for its answer to CONNECT);
    `tunnel`: an https target (CONNECT, then TLS with the target inside the tunnel)."""

    host: str
    port: int
    connecting: bool
    tunnel: bool


def _blocked_cause(exc: BaseException) -> BlockedAddress | None:
    """A BlockedAddress that `exc` was raised from, however deep (aiohttp may wrap it)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, BlockedAddress):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


_RESET_ERRNOS = frozenset({errno.ECONNRESET, errno.EPIPE, errno.ECONNABORTED})
# OpenSSL's X509_V_ERR_ codes of a certificate whose issuer is not trusted: self-signed (18),
# self-signed in the chain (19), issuer unknown (20)
_UNKNOWN_ISSUER = frozenset({18, 19, 20})
_NETWORK_ERRNOS = frozenset({errno.ENETUNREACH, errno.ENETDOWN})  # no route: our own network
_UNKNOWN_ISSUER_HINT = " (trust its CA with [fetch] ca_file, or turn tls_verify off for the host)"


_NO_SUCH_NAME = frozenset(
    getattr(socket, name) for name in ("EAI_NONAME", "EAI_NODATA") if hasattr(socket, name)
)


def translate_error(
    exc: BaseException, *, waiting: bool = True, proxy: Proxied | None = None
) -> FetchError:
    """Map a foreign exception raised while fetching to the crawler's own FetchError.

    `waiting`: raised before the response headers were complete (else while reading the body);
    `proxy`: the fetch went through that proxy (module docstring).
    """
    if isinstance(exc, FetchError):
        return exc
    blocked = _blocked_cause(exc)
    if blocked is not None:
        return blocked
    if proxy is not None and (failed := _proxy_failure(exc, proxy)) is not None:
        return failed
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        if exc.os_error.errno == socket.EAI_AGAIN:  # the resolver did not answer, or SERVFAIL
            return _network(DNSError(f"cannot resolve {exc.host}: temporary failure"))
        unknown = DNSError(f"cannot resolve {exc.host}")
        # the name does not exist (a typo): an answer, as a refused connection is
        unknown.refused = exc.os_error.errno in _NO_SUCH_NAME
        return unknown
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        cert = exc.certificate_error
        why = getattr(cert, "verify_message", None) or str(cert)
        hint = _UNKNOWN_ISSUER_HINT if getattr(cert, "verify_code", None) in _UNKNOWN_ISSUER else ""
        return CertificateError(
            f"TLS: certificate verify failed for {exc.host}:{exc.port}: {why}{hint}"
        )
    if isinstance(exc, aiohttp.ClientProxyConnectionError):
        why = os.strerror(exc.errno) if exc.errno else exc.strerror or str(exc)
        return ProxyError(f"cannot connect to the proxy {exc.host}:{exc.port}: {why}")
    if isinstance(exc, aiohttp.ClientHttpProxyError):  # its str() holds the proxy's password
        target = exc.request_info.url
        return ConnectError(
            f"the proxy answered {exc.status} {exc.message} to CONNECT {target.host}:{target.port}"
        )
    if isinstance(exc, aiohttp.ClientSSLError):
        return ConnectError(f"TLS: {exc}")
    if isinstance(exc, aiohttp.ClientConnectorError):
        # "Connection refused" (the errno's own words), not asyncio's "Connect call failed"
        why = os.strerror(exc.errno) if exc.errno else exc.strerror or str(exc)
        error = ConnectError(f"cannot connect to {exc.host}:{exc.port}: {why}")
        error.refused = exc.errno == errno.ECONNREFUSED
        return _network(error) if exc.errno in _NETWORK_ERRNOS else error
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return ConnectError(f"connect timed out: {exc}")
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        cls = ConnectionReset if waiting else Truncated
        return cls("server disconnected")
    if isinstance(exc, asyncio.TimeoutError | aiohttp.ServerTimeoutError):
        what = "waiting for the response headers" if waiting else "reading the body"
        return FetchTimeout(f"{exc or 'timed out'} ({what})", waiting=waiting)
    if isinstance(exc, aiohttp.ClientPayloadError):
        text = str(exc)
        # first: a chunked body cut short says "not completed: <TransferEncodingError ...>"
        if "not completed" in text:
            return Truncated(text)
        if "encoding" in text.lower() or "decompress" in text.lower():
            return DecodingError(text)
        return ProtocolError(text)
    if isinstance(exc, aiohttp.ClientResponseError):
        return ProtocolError(exc.message or str(exc))
    if isinstance(exc, aiohttp.InvalidURL):
        return ProtocolError(f"invalid URL {exc}")
    if isinstance(exc, aiohttp.ClientOSError | OSError):
        text = str(exc) or type(exc).__name__
        if isinstance(exc, ConnectionResetError) or exc.errno in _RESET_ERRNOS:
            return ConnectionReset(text) if waiting else Truncated(text)
        return _network(ConnectError(text)) if exc.errno in _NETWORK_ERRNOS else ConnectError(text)
    if isinstance(exc, aiohttp.ClientError | ValueError | UnicodeError):
        return ProtocolError(f"{type(exc).__name__}: {exc}")
    raise exc


def _network(error: FetchError) -> FetchError:
    """`error`, flagged as a sign that the crawler's own network is down
    (`crawler.fetch.outage`)."""
    error.network = True
    return error


def _proxy_failure(exc: BaseException, proxy: Proxied) -> ProxyError | None:
    """The proxy's own failure (module docstring), or None: the target's, or no failure."""
    where = f"{proxy.host}:{proxy.port}"
    if isinstance(exc, aiohttp.ClientConnectorDNSError) and exc.host == proxy.host:
        temporary = " (temporary failure)" if exc.os_error.errno == socket.EAI_AGAIN else ""
        return ProxyError(f"cannot resolve the proxy's name {proxy.host}{temporary}")
    if isinstance(exc, aiohttp.ClientHttpProxyError) and exc.status == 407:
        target = exc.request_info.url  # its str() holds the proxy's password: not quoted
        return ProxyError(
            f"the proxy {where} refused the credentials of [fetch] proxy: it answered 407 "
            f"{exc.message} to CONNECT {target.host}:{target.port}",
            status=407,
        )
    if not proxy.connecting or isinstance(exc, aiohttp.ClientConnectorError):
        return None  # a ClientConnectorError naming the target: its TLS, inside the tunnel
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return ProxyError(f"the proxy {where} closed the connection before answering")
    if isinstance(exc, ConnectionResetError) or (
        isinstance(exc, OSError) and exc.errno in _RESET_ERRNOS
    ):
        return ProxyError(f"the proxy {where} reset the connection before answering")
    if isinstance(exc, aiohttp.ConnectionTimeoutError) and not proxy.tunnel:
        return ProxyError(f"connecting to the proxy {where} timed out")
    return None
