"""One place for foreign errors: what aiohttp, asyncio and the OS raise while fetching, translated
into the crawler's own `crawler.errors.FetchError` subclasses.

`crawler.fetcher` calls `translate_error` on everything a fetch raises; nothing else in the
crawler catches aiohttp's exceptions. Whether the error came while waiting for the response
headers or while reading the body decides between a reset and a truncated body, and names the
phase a timeout cut.
"""

from __future__ import annotations

import asyncio
import errno
import os

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
    Truncated,
)

__all__ = ["translate_error"]


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
_UNKNOWN_ISSUER_HINT = " (trust its CA with [fetch] ca_file, or turn tls_verify off for the host)"


def translate_error(exc: BaseException, *, waiting: bool = True) -> FetchError:
    """Map a foreign exception raised while fetching to the crawler's own FetchError.

    `waiting`: raised before the response headers were complete (else while reading the body).
    """
    if isinstance(exc, FetchError):
        return exc
    blocked = _blocked_cause(exc)
    if blocked is not None:
        return blocked
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return DNSError(f"cannot resolve {exc.host}")
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        cert = exc.certificate_error
        why = getattr(cert, "verify_message", None) or str(cert)
        hint = _UNKNOWN_ISSUER_HINT if getattr(cert, "verify_code", None) in _UNKNOWN_ISSUER else ""
        return CertificateError(
            f"TLS: certificate verify failed for {exc.host}:{exc.port}: {why}{hint}"
        )
    if isinstance(exc, aiohttp.ClientProxyConnectionError):
        why = os.strerror(exc.errno) if exc.errno else exc.strerror or str(exc)
        return ConnectError(f"cannot connect to the proxy {exc.host}:{exc.port}: {why}")
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
        return ConnectError(f"cannot connect to {exc.host}:{exc.port}: {why}")
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
        return ConnectError(text)
    if isinstance(exc, aiohttp.ClientError | ValueError | UnicodeError):
        return ProtocolError(f"{type(exc).__name__}: {exc}")
    raise exc
