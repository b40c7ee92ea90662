"""How one process shares the Redis frontier with the others: `Sharing` (its leases, its polling,
its turn on a contended host, its name, the exact tier and the user agent its robots.txt
policies are parsed for). The politeness and the queue limits are the in-memory frontier's own
objects (`crawler.frontier.settings`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["DEFAULT_LEASE_TTL", "Sharing"]

DEFAULT_LEASE_TTL: Final = 60.0 + 30.0  # the fetch's total_timeout + 30 s


@dataclass(frozen=True, slots=True)
class Sharing:
    """`lease_ttl`: seconds an entry handed out stays leased; `reclaim_interval`: how often the
    expired leases are reclaimed (None: ``min(5, lease_ttl / 4)``); `poll_interval`: the longest
    wait of ``get()``; `candidates`: ready hosts a claim looks at; `turn`: seconds a process
    leaves a contended one-slot host to the others (module docstring of
    `crawler.frontier.redis.frontier`); `owner`: this process's name in the leases (None: host,
    pid and a random tag); `exact`: the exact tier behind the shared Sieve; `user_agent`: whose
    rules of a robots.txt apply."""

    lease_ttl: float = DEFAULT_LEASE_TTL
    reclaim_interval: float | None = None
    poll_interval: float = 0.2
    candidates: int = 16
    turn: float = 0.0
    owner: str | None = None
    exact: bool = False
    user_agent: str = "sieve-crawler"

    def __post_init__(self) -> None:
        for name in ("lease_ttl", "poll_interval"):
            value = getattr(self, name)
            if not 0.0 <= value < float("inf"):
                raise ValueError(f"{name} must be a finite number of seconds >= 0, got {value!r}")
        if self.candidates < 1:
            raise ValueError("candidates must be >= 1")
