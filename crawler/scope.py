"""Which canonical URLs a crawl follows.

By default the crawl stays on its seeds' hosts (exact host names). `allowed_domains` replaces that
with a list of domains, each admitting its subdomains too. Then, in this order: depth, skipped file
extensions, exclude regexes, include regexes (when any is given, a URL must match one), and the
per-host page limit. `check()` runs on every extracted link, so it works on the canonical string
without parsing it again.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

__all__ = ["Scope", "split_host"]


def split_host(key: str) -> str:
    """The host (without port) of a canonical absolute URL such as ``https://a.b:8080/x``."""
    start = key.find("//") + 2
    end = key.find("/", start)
    authority = key[start:] if end < 0 else key[start:end]
    if authority.startswith("["):
        return authority[: authority.find("]") + 1]
    colon = authority.rfind(":")
    return authority if colon < 0 else authority[:colon]


class Scope:
    __slots__ = (
        "_domains",
        "_exclude",
        "_hosts",
        "_include",
        "_per_host",
        "_skip",
        "max_depth",
        "max_pages_per_host",
    )

    def __init__(
        self,
        *,
        hosts: Iterable[str] = (),
        allowed_domains: Iterable[str] = (),
        include: Iterable[str] = (),
        exclude: Iterable[str] = (),
        skip_extensions: Iterable[str] = (),
        max_depth: int = 0,
        max_pages_per_host: int = 0,
    ) -> None:
        self._hosts: set[str] = {h.lower() for h in hosts}
        self._domains = tuple(d.lower().strip(".") for d in allowed_domains if d.strip("."))
        self._include = [re.compile(p) for p in include]
        self._exclude = [re.compile(p) for p in exclude]
        self._skip = frozenset(e.lower().lstrip(".") for e in skip_extensions)
        self.max_depth = max_depth
        self.max_pages_per_host = max_pages_per_host
        self._per_host: Counter[str] = Counter()

    def add_host(self, host: str) -> None:
        """Admit a seed's host (used only when no `allowed_domains` are configured)."""
        self._hosts.add(host.lower())

    def host_allowed(self, host: str) -> bool:
        if self._domains:
            return any(host == d or host.endswith("." + d) for d in self._domains)
        return host in self._hosts

    def check(self, key: str, depth: int) -> str | None:
        """None when `key` at `depth` is in scope, else the reason it is not."""
        host = split_host(key)
        if not self.host_allowed(host):
            return "domain"
        if self.max_depth and depth > self.max_depth:
            return "depth"
        if self._skip:
            path_end = key.find("?")
            path = key if path_end < 0 else key[:path_end]
            dot = path.rfind(".")
            if dot > path.rfind("/") and path[dot + 1 :].lower() in self._skip:
                return "extension"
        if self._exclude and any(p.search(key) for p in self._exclude):
            return "exclude"
        if self._include and not any(p.search(key) for p in self._include):
            return "include"
        if self.max_pages_per_host and self._per_host[host] >= self.max_pages_per_host:
            return "host_limit"
        return None

    def admitted(self, key: str) -> None:
        """Count one URL admitted to the frontier against its host's page limit."""
        if self.max_pages_per_host:
            self._per_host[split_host(key)] += 1

    def __repr__(self) -> str:
        where = (
            f"domains={list(self._domains)}" if self._domains else f"hosts={sorted(self._hosts)}"
        )
        return (
            f"<Scope {where} max_depth={self.max_depth} include={len(self._include)} "
            f"exclude={len(self._exclude)}>"
        )
