"""A URL's authority as `crawler.urls.canonical` writes it: the host mapped and encoded, the port
checked.

Userinfo is dropped; a plain ASCII host name is lowercased here (what yarl would do, faster);
any other host is mapped by idna (UTS #46, as browsers do: soft hyphens vanish...) and encoded
by yarl (IDNA, IPv6 compression, validation); an IPv4 host is read as browsers read it (WHATWG:
"127.1", "0x7f.1"); a default port is dropped. A name no DNS can hold (a label over 63 bytes,
over 253 in all, once encoded) is no host: aiohttp would fail on it at fetch time. Pure
functions, no state: `crawler.urls.parts` caches the results per authority.
"""

from __future__ import annotations

from urllib.parse import unquote

from idna import uts46_remap
from yarl import URL

from crawler.urls.syntax import ASCII_HOST_OK, DEFAULT_PORTS, ends_in_number, parse_ipv4

__all__ = ["MAX_LABEL", "MAX_NAME", "host_problem", "make_netloc", "split_host"]

MAX_LABEL = 63  # bytes of a DNS label (RFC 1035 §2.3.4)
MAX_NAME = 253  # bytes of a DNS name, dots included, without the root's


def _long_label(name: str) -> bool:
    return any(len(label) > MAX_LABEL for label in name.split("."))


def make_netloc(scheme: str, auth: str, strip_www: bool) -> tuple[str, str] | None:
    """(netloc, key netloc) for the authority of a `scheme` URL, or None if it is not valid:
    userinfo dropped, host encoded, port checked; with `strip_www` the key netloc drops a
    leading "www."."""
    hostport = auth.rpartition("@")[2]
    if hostport.startswith("["):
        host, bracket, rest = hostport[1:].partition("]")
        if not bracket or (rest and rest[0] != ":") or not host or "%" in host:
            return None
        port = rest[1:]
        ipv6 = True
    else:
        host, _, port = hostport.partition(":")
        if "%" in host:
            host = unquote(host)
            if "%" in host:
                return None
        ipv6 = False
    if not host:
        return None
    if not ipv6 and host.isascii() and not host[-1].isdigit() and ASCII_HOST_OK(host):
        encoded: str | None = host.lower()  # plain reg-name: what yarl would do, faster
    else:  # IDNA (UTS #46), IP addresses and validation are yarl's
        try:
            if not host.isascii():  # map first as browsers do (soft hyphens vanish...)
                host = uts46_remap(host, std3_rules=False, transitional=False)
            encoded = URL.build(scheme=scheme, host=host).raw_host
        except (ValueError, UnicodeError):
            return None
    if not encoded or ipv6 != (":" in encoded):
        return None
    if ipv6:
        encoded = f"[{encoded}]"
    else:
        encoded = encoded.rstrip(".")
        if not encoded:
            return None
        if (encoded[-1].isdigit() or "0x" in encoded) and ends_in_number(encoded):
            # "127.1", "0x7f.1", "2130706433": an IPv4 address as browsers read it
            encoded = parse_ipv4(encoded)
            if encoded is None:
                return None
        elif len(encoded) > MAX_NAME or (len(encoded) > MAX_LABEL and _long_label(encoded)):
            return None  # no DNS name (RFC 1035: 63-byte labels, 253 bytes): never resolvable
    if port:
        port = port.lstrip("0") or "0"
        if not (port.isascii() and port.isdigit()) or len(port) > 5 or not 0 < int(port) < 65536:
            return None
        if port != DEFAULT_PORTS[scheme]:
            encoded = f"{encoded}:{port}"
    key_netloc = encoded
    if strip_www and encoded.startswith("www.") and "." in encoded[4:]:
        key_netloc = encoded[4:]
    return encoded, key_netloc


def host_problem(scheme: str, auth: str) -> str:
    """Why `make_netloc` refuses the authority `auth`, in words for an error message ("" when
    it takes it): what a user wrote wrong in a seed (`crawler.urls.canonical.why_not`)."""
    if make_netloc(scheme, auth, False) is not None:
        return ""
    hostport = auth.rpartition("@")[2]
    if hostport.startswith("["):
        host, _, rest = hostport[1:].partition("]")
        port, what = rest[1:], f"not a valid IPv6 address: [{host}]"
    else:
        host, _, port = hostport.partition(":")
        what = f"not a valid host name: {host!r}"
    if port and not (port.isascii() and port.isdigit()):
        return f"the port {port!r} is not a number"
    if port and not 0 < int(port) < 65536:
        return f"port {port} is out of range (1-65535)"
    if not host:
        return "no host"
    host = unquote(host)  # (as make_netloc reads it)
    if space := next((c for c in host if c.isspace()), ""):
        return f"a {'space' if space == ' ' else repr(space)} in the host {host!r}"
    bad = next((c for c in host if c.isascii() and not ASCII_HOST_OK(c)), "")
    if bad and not hostport.startswith("["):
        return f"the character {bad!r} in the host {host!r}"
    if len(host) > MAX_NAME or _long_label(host):
        return f"the host is longer than DNS allows ({MAX_LABEL} per label, {MAX_NAME} in all)"
    return what


def split_host(key: str) -> str:
    """The host (without port) of a canonical absolute URL such as ``https://a.b:8080/x``."""
    start = key.find("//") + 2
    end = key.find("/", start)
    authority = key[start:] if end < 0 else key[start:end]
    if authority.startswith("["):
        return authority[: authority.find("]") + 1]
    colon = authority.rfind(":")
    return authority if colon < 0 else authority[:colon]
