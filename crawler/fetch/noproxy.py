"""Which hosts bypass ``[fetch] proxy``: the ``no_proxy`` / ``NO_PROXY`` environment variable.

Read as curl reads it (the lower-case variable first), and a little more: a comma-separated
list of

- ``*``: no host uses the proxy;
- a host name, optionally with a leading ``.`` or ``*.``: that host and its subdomains
  (``example.org`` and ``.example.org`` both cover ``a.example.org`` and ``example.org``);
- an IP address (an IPv6 one with or without brackets) or a network in CIDR notation
  (``10.0.0.0/8``, ``fd00::/8``): IP-literal hosts in it (names are not resolved for this);
- any of these but ``*`` followed by ``:port``: that port only.

Case and trailing dots are ignored. curl reads less: ``*`` only as the whole value, no ``*.``,
no ``:port`` (an entry with one never matches), and entries separated by blanks alone end the
list after the first; each of these is read here as its writer meant it, bypassing the proxy
for a host curl would send through it, never the other way round. The standard library's
``proxy_bypass_environment`` knew neither networks nor ports (``a.test:8080`` never matched),
nor ``a.test.`` as ``a.test``.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping

__all__ = ["NoProxy"]

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class NoProxy:
    """The parsed list; `bypass(host, port)` says whether a request goes direct."""

    __slots__ = ("_all", "_names", "_networks", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._all = False
        self._names: list[tuple[str, int | None]] = []
        self._networks: list[tuple[Network, int | None]] = []
        for raw in text.replace(" ", ",").split(","):
            entry = raw.strip().lower()
            if entry == "*":
                self._all = True
            elif entry:
                self._add(entry)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> NoProxy:
        env = os.environ if environ is None else environ
        return cls(env.get("no_proxy") or env.get("NO_PROXY") or "")

    def _add(self, entry: str) -> None:
        host, port = _split(entry)
        try:
            self._networks.append((ipaddress.ip_network(host, strict=False), port))
            return
        except ValueError:
            pass
        name = host.removeprefix("*").lstrip(".").rstrip(".")
        if name:
            self._names.append((name, port))

    def bypass(self, host: str, port: int) -> bool:
        """Does a request to `host` (a name or an address without brackets) on `port` go direct?"""
        if self._all:
            return True
        host = host.lower().rstrip(".")
        for name, only in self._names:
            if (only is None or only == port) and (host == name or host.endswith("." + name)):
                return True
        if self._networks:
            try:
                address = ipaddress.ip_address(host)
            except ValueError:
                return False
            for network, only in self._networks:
                if (only is None or only == port) and address in network:
                    return True
        return False

    def __repr__(self) -> str:
        return f"NoProxy({self.text!r})"


def _split(entry: str) -> tuple[str, int | None]:
    """An entry's host (brackets dropped) and port (None: any)."""
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif entry.count(":") == 1:
        host, _, port = entry.partition(":")
    else:  # a name, or an IPv6 address without brackets (no port then)
        host, port = entry, ""
    return host, int(port) if port.isdigit() else None
