"""What a `Fetcher` is told (``[fetch]``): `Timeouts`, `FetchLimits` and `Transport`, each
frozen. Their fields carry the names of ``[fetch]``'s keys, so a new one is a field here and
one in `crawler.config.sections.FetchConfig` (which builds these objects).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["FetchLimits", "Timeouts", "Transport"]


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Seconds to connect, between two reads, for a whole request; a transfer under `min_rate`
    bytes/s over `min_rate_window` s is cut (0: never)."""

    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    total_timeout: float = 60.0
    min_rate: float = 1000.0
    min_rate_window: float = 20.0


@dataclass(frozen=True, slots=True)
class FetchLimits:
    """A body's and a header block's bytes at most; connections open at once."""

    max_body: int = 10 * 1024 * 1024
    max_header_size: int = 16 * 1024
    connections: int = 100


@dataclass(frozen=True, slots=True)
class Transport:
    """How requests go out: `user_agent`, `headers` with every request, one cookie jar for the
    fetcher's life (`cookies`), a `proxy` ("" = none) for the hosts NO_PROXY does not list, TLS
    verification (`tls_verify`, the system's CA store and `ca_file`'s), and `resolve` (host ->
    address overrides)."""

    user_agent: str
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    cookies: bool = False
    proxy: str = field(default="", repr=False)
    tls_verify: bool = True
    ca_file: str = ""
    resolve: Mapping[str, str] = field(default_factory=dict)
