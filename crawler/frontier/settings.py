"""What a frontier is told: `Politeness` (how each host is treated) and `QueueLimits` (how much
may wait). Both frontiers take the same objects: the in-memory `Frontier` and the shared
`RedisFrontier`, so a new politeness key is one field here (and one in ``[politeness]``, whose
fields carry the same names: `crawler.config.sections.PolitenessConfig.politeness`).

Each object checks its values when made (ValueError naming the field); the rules they feed are
in `crawler.frontier.hosts`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Politeness", "QueueLimits"]

_SECONDS = ("delay", "max_delay", "backoff_base", "backoff_max", "max_retry_after", "robots_ttl",
            "ip_delay", "dns_ttl", "dns_min_ttl", "dns_max_ttl")  # fmt: skip


@dataclass(frozen=True, slots=True)
class Politeness:
    """The politeness rules' settings (``[politeness]``; the rules: `crawler.frontier.hosts`).

    `delay` between two request starts to a host, `per_host_concurrency` requests in flight to
    it, a robots.txt Crawl-delay honoured up to `max_delay` (and `adaptive`: the delay follows
    the host's latency); backoff after a host failure ``min(backoff_max, backoff_base *
    2**(n-1))`` with jitter, a Retry-After capped at `max_retry_after`; the circuit breaker after
    `max_host_failures` host failures in a row (0: never); robots.txt (`respect_robots`) kept
    `robots_ttl` seconds, given up on after `robots_attempts` failures.

    By address (`crawler.frontier.addresses`: every host resolved before it is scheduled):
    `ip_delay` between two request starts to one IP address, whichever of its hosts they are
    for, and `ip_concurrency` requests in flight to it (0: no limit), held together with each
    host's own rules. A host's address is kept for the answer's DNS TTL (`dns_ttl` when the
    resolver gives none), held within [`dns_min_ttl`, `dns_max_ttl`]. A frontier made without
    a resolver schedules by host only (no address budget)."""

    delay: float = 0.0
    per_host_concurrency: int = 1
    max_delay: float = 60.0
    adaptive: bool = False
    respect_robots: bool = True
    robots_ttl: float = 86400.0
    robots_attempts: int = 6
    backoff_base: float = 1.0
    backoff_max: float = 300.0
    max_retry_after: float = 600.0
    max_host_failures: int = 10
    ip_delay: float = 0.0
    ip_concurrency: int = 0
    dns_ttl: float = 300.0
    dns_min_ttl: float = 30.0
    dns_max_ttl: float = 3600.0

    def __post_init__(self) -> None:
        for name in _SECONDS:
            value = getattr(self, name)
            if not 0.0 <= value < float("inf"):
                raise ValueError(f"{name} must be a finite number of seconds >= 0, got {value!r}")
        for name in ("per_host_concurrency", "robots_attempts"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)!r}")
        for name in ("max_host_failures", "ip_concurrency"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        if self.dns_min_ttl > self.dns_max_ttl:
            raise ValueError(
                f"dns_min_ttl ({self.dns_min_ttl!r}) must be <= dns_max_ttl ({self.dns_max_ttl!r})"
            )


@dataclass(frozen=True, slots=True)
class QueueLimits:
    """Entries queued at most (``[crawl]``): in all, and per host; a put past either is
    refused and counted."""

    max_queued: int = 1_000_000
    max_queued_per_host: int = 100_000

    def __post_init__(self) -> None:
        for name in ("max_queued", "max_queued_per_host"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)!r}")
