"""Steering each request: extra headers, per-host rules ([[hosts]]), credentials and the proxy.

Rules: each ``[[hosts]]`` table has a ``match`` glob on the host name (fnmatch-style, case-
insensitive, so ``*.example.org`` matches ``a.example.org`` and ``a.b.example.org`` but *not*
``example.org`` itself: list that in a rule of its own), optionally followed by ``:port`` (then
only that port matches; without it every port does). An IPv6 address is written in brackets,
``[::1]`` or ``[::1]:8080``, and matched as a literal. An internationalized name is matched in its
ASCII form (``xn--...``), as URLs carry it. The first rule that matches a host wins.

Credentials: a rule's ``auth`` and ``headers`` are sent only to hosts the rule matches. Redirects
are not followed by the fetcher (the engine fetches each target as a new URL), so a redirect to
another host gets that host's rule, never the first one's. The values of every header named in
the config (``[fetch] headers`` and every rule's ``headers``) and of Authorization,
Proxy-Authorization and Cookie are *secret*: request headers kept for the WARC archive carry
``[redacted]`` instead, and the config's repr never shows them.

Proxy: ``[fetch] proxy`` is used for every request except to hosts the ``NO_PROXY`` (or
``no_proxy``) environment variable lists (`crawler.fetch.noproxy`).

TLS: certificates are verified against the system's CA store, plus the certificates of
``[fetch] ca_file`` if given (an internal CA); ``[fetch] tls_verify = false`` turns verification
off for every host, a rule's ``tls_verify`` for the hosts it matches (either way, or back on).
"""

from __future__ import annotations

import fnmatch
import functools
import ipaddress
import re
import ssl
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

import aiohttp
import idna
from yarl import URL

__all__ = [
    "REDACTED",
    "HostMatch",
    "HostRule",
    "HostRules",
    "check_ca_file",
    "check_headers",
    "check_proxy",
    "redact",
    "shadowed",
    "tls_context",
]

REDACTED: Final = "[redacted]"

#: Headers whose values are secret wherever they come from.
ALWAYS_SECRET: Final = frozenset({"authorization", "proxy-authorization", "cookie"})

# RFC 9110 5.1: a field name is a token.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# RFC 9110 5.5: no CR, LF or NUL in a field value (and no other control character but tab).
_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_RESERVED: Final = {
    "host": "the host comes from the URL",
    "content-length": "the fetcher frames its own requests",
    "transfer-encoding": "the fetcher frames its own requests",
    "connection": "the connection pool manages connections",
    "keep-alive": "the connection pool manages connections",
    "te": "the connection pool manages connections",
    "trailer": "the connection pool manages connections",
    "upgrade": "the connection pool manages connections",
    "proxy-connection": "the connection pool manages connections",
    "proxy-authorization": "give the proxy's user:password in [fetch] proxy (a header would go "
    "to every host the proxy is not used for)",
    "user-agent": "set [crawl] user_agent (robots.txt is matched against it)",
    "accept-encoding": "the fetcher decodes only the encodings it asks for",
}
# Credentials in [fetch] headers would go to every host, a redirect's target too.
_NOT_EVERYWHERE: Final = frozenset({"authorization", "cookie"})
_CACHE_SIZE: Final = 4096


def check_headers(headers: Mapping[str, str], *, everywhere: bool = False) -> str | None:
    """Why these configured headers cannot be sent (None: they can); `everywhere`: they are
    ``[fetch] headers``, sent to every host. Never quotes a value."""
    names: set[str] = set()
    for name, value in headers.items():
        if not _TOKEN.fullmatch(name):
            return f"{name!r} is not a valid header name"
        lower = name.lower()
        if lower in names:
            return f"{name!r} is given twice (header names are case-insensitive)"
        names.add(lower)
        reason = _RESERVED.get(lower)
        if reason is not None:
            return f"{name!r} cannot be set: {reason}"
        if everywhere and lower in _NOT_EVERYWHERE:
            return (
                f"{name!r} would be sent to every host: give it in a [[hosts]] rule for the "
                'hosts it is for (match = "*" if it is really for all)'
            )
        if _BAD_VALUE.search(value):
            return f"the value of {name!r} contains a control character"
        if not value.isascii():
            return f"the value of {name!r} is not ASCII (RFC 9110: encode it, e.g. percent-encode)"
    return None


def check_proxy(proxy: str) -> str | None:
    """Why `proxy` is not a usable proxy URL (None: it is, or it is "" for none)."""
    if not proxy:
        return None
    # Never echo the URL: it may carry a password.
    try:
        url = URL(proxy)
        _ = url.port
    except (ValueError, TypeError):
        return "not a valid URL"
    if url.scheme not in ("http", "https"):
        return "must be an http:// or https:// URL"
    if not url.host:
        return "has no host"
    if url.path not in ("", "/") or url.query_string or url.fragment:
        return "must be scheme://[user:password@]host[:port] only"
    return None


def check_ca_file(path: str) -> str | None:
    """Why `path` is not a usable file of CA certificates (None: it is, or it is "" for none)."""
    if not path:
        return None
    try:
        tls_context(path)
    except FileNotFoundError:
        return f"{path}: no such file"
    except IsADirectoryError:
        return f"{path}: is a directory, not a file of PEM certificates"
    except ssl.SSLError as exc:
        return f"{path}: not a file of PEM certificates ({exc.reason or exc})"
    except (OSError, ValueError) as exc:
        return f"{path}: cannot be read ({getattr(exc, 'strerror', None) or exc})"
    return None


def tls_context(ca_file: str = "") -> ssl.SSLContext:
    """A verifying TLS client context: the system's CA store, and `ca_file`'s certificates."""
    context = ssl.create_default_context()
    if ca_file:
        context.load_verify_locations(cafile=ca_file)
    return context


def redact(
    headers: Iterable[tuple[str, str]], secret: frozenset[str]
) -> tuple[tuple[str, str], ...]:
    """`headers` with the value of every header named in `secret` (lower case) replaced."""
    return tuple((k, REDACTED if k.lower() in secret else v) for k, v in headers)


class HostConfig(Protocol):
    """One ``[[hosts]]`` rule as steering reads it (`crawler.config.sections.HostConfig`)."""

    @property
    def match(self) -> str: ...

    @property
    def delay(self) -> float | None: ...

    @property
    def per_host_concurrency(self) -> int | None: ...

    @property
    def headers(self) -> dict[str, str]: ...

    @property
    def auth(self) -> tuple[str, ...] | None: ...

    @property
    def tls_verify(self) -> bool | None: ...


@dataclass(frozen=True, slots=True)
class HostRule:
    """Politeness overrides for one host; None keeps the global setting."""

    delay: float | None = None  # replaces [politeness] delay for this host
    per_host_concurrency: int | None = None  # replaces [politeness] per_host_concurrency

    def __post_init__(self) -> None:
        if self.delay is not None and not 0.0 <= self.delay < float("inf"):
            raise ValueError(f"delay must be a finite number of seconds >= 0, got {self.delay!r}")
        if self.per_host_concurrency is not None and self.per_host_concurrency < 1:
            raise ValueError(
                f"per_host_concurrency must be >= 1, got {self.per_host_concurrency!r}"
            )


class HostMatch:
    """One ``match`` value: ``http://`` or ``https://`` if given, a host glob, a port if given."""

    __slots__ = ("_glob", "_literal", "port", "scheme", "text")

    def __init__(self, text: str) -> None:
        """Raises ValueError (without echoing secrets: a match holds none) on a bad pattern."""
        self.text = text
        scheme, sep, rest = text.strip().rpartition("://")
        self.scheme = scheme.lower() if sep else ""
        if sep and self.scheme not in ("http", "https"):
            raise ValueError(f"{text!r}: the scheme may only be http:// or https://")
        host, port = _split_port(rest)
        if not host:
            raise ValueError(f"{text!r} has no host")
        self.port = port
        self._literal = host.startswith("[")
        if self._literal:
            try:
                address = ipaddress.IPv6Address(host[1:-1] if host.endswith("]") else "")
            except ValueError:
                raise ValueError(f"{text!r}: an IPv6 address is written [address]") from None
            self._glob = address.compressed  # as URLs carry it: [0:0::1] is [::1]
        else:
            self._glob = _ascii_glob(text, host.lower().rstrip("."))

    def matches(self, host: str, port: int, scheme: str = "") -> bool:
        """Does `host` (a name or address, lower-case, no brackets) on `port` match? A match
        naming a scheme matches only that `scheme` ("": unknown, no match)."""
        if self.port is not None and port != self.port:
            return False
        if self.scheme and scheme != self.scheme:
            return False
        if self._literal:
            return host == self._glob
        return fnmatch.fnmatchcase(host, self._glob)

    def covers(self, other: HostMatch) -> bool:
        """Does this match take every request `other` would (so that `other`, after it, is never
        used)? Only decided for an `other` without glob characters (else False)."""
        if other._literal != self._literal and self._literal:
            return False
        if not other._literal and any(c in other._glob for c in "*?["):
            return False
        port_ok = self.port is None or self.port == other.port
        scheme_ok = not self.scheme or self.scheme == other.scheme
        host_ok = (
            self._glob == other._glob
            if self._literal
            else fnmatch.fnmatchcase(other._glob, self._glob)
        )
        return port_ok and scheme_ok and host_ok

    def __repr__(self) -> str:
        return f"<HostMatch {self.text!r}>"


def shadowed(matches: Sequence[str]) -> str | None:
    """Why a rule among these ``match`` values is never used (an earlier one takes all its
    requests: the first match wins), or None."""
    built = [HostMatch(m) for m in matches]
    for j, later in enumerate(built):
        for i, earlier in enumerate(built[:j]):
            if earlier.covers(later):
                return (
                    f"#{j + 1} (match = {later.text!r}) is never used: #{i + 1} "
                    f"(match = {earlier.text!r}) matches all its hosts first (the first "
                    "matching rule wins: put the narrower rule first)"
                )
    return None


# What a host glob may hold once in ASCII: a host name's characters and fnmatch's * ? [ ] !
_HOST_GLOB = re.compile(r"[a-z0-9\-._*?\[\]!]+")


def _ascii_glob(text: str, glob: str) -> str:
    """`glob` with its internationalized labels in their ASCII (``xn--``) form, as URLs carry
    them; ValueError if it holds what no host name does (a path, a blank, userinfo)."""
    if not glob.isascii():
        labels = []
        for label in glob.split("."):
            try:
                labels.append(label if label.isascii() else idna.encode(label, uts46=True).decode())
            except idna.IDNAError:
                raise ValueError(
                    f"{text!r}: {label!r} is not a host name label (write it in its xn-- form)"
                ) from None
        glob = ".".join(labels)
    if not _HOST_GLOB.fullmatch(glob):
        raise ValueError(
            f"{text!r}: a host glob holds letters, digits, '-', '.', '_' and * ? [ ] ! only "
            "(optionally http:// or https:// before it and :port after it)"
        )
    return glob


def _split_port(text: str) -> tuple[str, int | None]:
    if text.startswith("["):
        close = text.find("]")
        rest = text[close + 1 :] if close != -1 else ""
        if not rest:
            return text, None
        host, port_s = text[: close + 1], rest[1:] if rest.startswith(":") else "x"
    else:
        host, sep, port_s = text.rpartition(":")
        if not sep:
            return text, None
    if not port_s.isdigit() or not 0 < int(port_s) <= 65535:
        raise ValueError(f"{text!r} has an invalid port")
    return host, int(port_s)


class HostRules:
    """The ``[[hosts]]`` rules: the first one matching a host, and the headers it adds.

    Lookups are cached per (host, port, scheme) in a bounded LRU cache; with no rules every
    lookup is a constant-time None.
    """

    __slots__ = ("_headers", "_matches", "find", "rules", "secret")

    def __init__(self, rules: Sequence[HostConfig], global_headers: Iterable[str] = ()) -> None:
        """`global_headers`: names of headers sent to every host (their values are secret too)."""
        self.rules = tuple(rules)
        self._matches = tuple(HostMatch(rule.match) for rule in self.rules)
        self._headers = tuple(_rule_headers(rule) for rule in self.rules)
        names = {n.lower() for n in global_headers}
        for extra in self._headers:
            names.update(n.lower() for n in extra)
        self.secret = frozenset(names | ALWAYS_SECRET)
        self.find = functools.lru_cache(maxsize=_CACHE_SIZE)(self._find)

    def _find(self, host: str, port: int, scheme: str = "") -> int | None:
        host = host.lower().rstrip(".")
        for i, m in enumerate(self._matches):
            if m.matches(host, port, scheme):
                return i
        return None

    def rule(self, host: str, port: int, scheme: str = "") -> HostConfig | None:
        """The first rule matching `host` on `port` by `scheme` (http, https), or None."""
        if not self.rules:
            return None
        i = self.find(host, port, scheme)
        return None if i is None else self.rules[i]

    def headers(self, host: str, port: int, scheme: str = "") -> dict[str, str] | None:
        """Headers the matching rule adds to a request (Authorization from ``auth`` included)."""
        if not self.rules:
            return None
        i = self.find(host, port, scheme)
        return None if i is None else self._headers[i]

    def tls_verify(self, host: str, port: int, scheme: str = "") -> bool | None:
        """Whether the matching rule verifies TLS certificates (None: no rule says)."""
        if not self.rules:
            return None
        i = self.find(host, port, scheme)
        return None if i is None else self.rules[i].tls_verify

    def host_rule(self, key: str) -> HostRule | None:
        """The frontier's politeness overrides for a host key ``scheme://host:port`` (see
        `crawler.frontier.hosts.host_key`): the first matching rule's delay and
        per_host_concurrency."""
        if not self.rules:
            return None
        scheme, _, rest = key.partition("://")
        host, _, port = rest.rpartition(":")
        rule = self.rule(host.removeprefix("[").removesuffix("]"), int(port), scheme)
        if rule is None or (rule.delay is None and rule.per_host_concurrency is None):
            return None
        return HostRule(delay=rule.delay, per_host_concurrency=rule.per_host_concurrency)

    def __repr__(self) -> str:
        patterns = [m.text for m in self._matches]
        return f"<HostRules {patterns!r} cache={self.find.cache_info().currsize}>"


def _rule_headers(rule: HostConfig) -> dict[str, str]:
    headers = dict(rule.headers)
    if rule.auth is not None:
        user, password = rule.auth
        headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
        headers["Authorization"] = aiohttp.encode_basic_auth(user, password)
    return headers
