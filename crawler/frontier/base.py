"""The contract of a frontier: what the crawl asks of it, whatever keeps the queues.

:class:`FrontierBackend` is what ``crawler.engine.crawler`` and ``crawler.admission.gate`` rely on.
The in-memory :class:`crawler.frontier.memory.Frontier` is the reference; any other backend (e.g.
one keeping its queues in Redis) must keep every rule below, which the frontier tests check.

Order
  1. Each host (``crawler.frontier.hosts.host_key``: ``scheme://host:port``) has one queue, ordered
     by ``Entry.priority``: higher first; equal priorities first in, first out. With every priority
     0 (no scoring) a crawl is breadth-first within each host, as before best-first crawling.
  2. Among hosts that may be fetched now, the one whose best waiting entry has the highest
     priority goes first; ties: the host that became ready first, then the one filed first.
  3. ``done(entry, retry=True)`` re-queues the entry (``retries + 1``) before every queued entry
     of its host with equal or lower priority (after higher ones): a retry never loses its place
     to lower-priority work. A getter cancelled before it saw its entry puts it back the same way.

Politeness (decided before anything is handed out, never after)
  4. A host is handed out only when it may be hit: at least its delay between two request starts
     (``max(delay or the host's HostRule delay, min(robots Crawl-delay, max_delay))``, adaptive
     when asked), at most ``per_host_concurrency`` (or the HostRule's) requests in flight, not
     before a backoff (429/503 Retry-After, failures) ends. Priorities choose *which* entry of a
     ready host goes next, never *when* a host may be hit. A host that must wait never holds up
     one that is ready.
  5. With ``respect_robots``, a host's robots.txt (a ROBOTS entry) is handed out before its first
     page and again when its policy expires; pages are held until ``set_robots()``; disallowed
     pages (and every page of a host whose robots.txt stayed unreachable) come back as REFUSED
     entries, at once, without a slot or a delay. ``refusal(entry)`` says why, as the result's
     error (``kind: message``: ``robots: ...``). A disallowed URL whose key drops session or
     tracking parameters is handed out without them when robots.txt allows that
     (``RobotsPolicy.fetchable``: ``Disallow: /*sid=``).
 12. Circuit breaker: the ``max_host_failures``-th failure in a row held against a host
     (``hosts.PolitenessRules``; 0: never) puts it down: its queued pages, a retry asked
     for in that ``done()``, and every page put for it later come back as REFUSED entries at once;
     ``refusal(entry)`` says ``host_down: ...``.

Accounting
  6. Every PAGE/ROBOTS entry handed out by ``get()`` gets exactly one ``done()`` (a second is a
     ValueError); REFUSED entries need none (``done()`` on them is a no-op; the Redis frontier
     keeps them leased until it, so the engine calls it for every entry).
  7. ``put()`` returns False (and counts it in ``stats``) when the frontier is closed, holds
     ``max_queued`` entries, or the host's queue holds ``max_queued_per_host``: never a silent
     loss. Retries are re-queued whatever the bounds.
  8. ``get()`` waits as long as needed; it returns None to every getter once nothing is queued
     and nothing is in flight, or after ``close()``. A failure of the frontier's own code while
     handing out (a bug) raises ``FrontierFailure`` in every waiting and later getter: never a
     getter left waiting for an entry that will not come.
  9. ``pending()`` yields every queued entry (not those in flight) equal to the one put, its
     priority included (as raised by rule 10), host by host in hand-out order; ``len()`` counts
     them.

Re-prioritizing (a better link to a queued URL; the Redis backend: one Lua script each)
 10. ``queued_priority(url, key)`` is the priority of the queued PAGE entry whose key is ``key``
     (``url``: the URL it is fetched at, which names its host), None when there is none queued
     (never put, in flight, done, or refused). ``reprioritize(url, key, priority)`` raises that
     entry's priority to ``priority`` and returns True; it never lowers a priority (False, no
     change, when ``priority`` is not higher) and is a no-op (False) for entries not queued.
     ``reprioritize(..., lower=True)`` sets the priority whether higher or lower (False when
     equal): a focused crawl re-scores its queued URLs as its scorer learns;
     ``set_priority(url, key, priority)`` is that call returning the priority the entry had
     (None when not queued), one lookup instead of two. The changed entry
     goes after its host's queued entries of equal or higher priority (as if put now), is
     handed out once, counts once in ``len()``, ``pending()`` and the bounds, and keeps its
     other fields; a host whose best entry was lowered ranks among ready hosts by its new best.
     Neither costs anything to a crawl that never uses priorities. (The Redis backend keeps
     this rule, ``lower=True`` included, in one script on ``qk:{host}`` and ``q:{host}``.)
 11. ``put_many(entries)`` is ``put()`` of each, in order (one flag each), except that nothing
     is handed out before the whole batch is queued: getters waiting meanwhile get the best
     entries of the batch, not its first ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from crawler.frontier.entries import Entry, Outcome
from crawler.frontier.robots import RobotsPolicy

__all__ = ["FrontierBackend", "FrontierStats", "WorkSource"]


@dataclass(frozen=True, slots=True)
class FrontierStats:
    hosts: int  # hosts known (with or without work)
    ready_hosts: int  # hosts with work that may start a request now
    waiting_hosts: int  # hosts with work that may not (delay, backoff, robots, saturated)
    queued: int
    in_flight: int
    dropped_full: int  # put() refused: max_queued reached
    dropped_host_full: int  # put() refused: max_queued_per_host reached
    dropped_closed: int  # put() refused: the frontier was closed
    refused_robots: int  # pages handed out as REFUSED
    deferred_robots: int  # queued entries held until their host's robots.txt is known
    deferred_backoff: int  # queued entries of hosts backed off right now
    backoffs: int  # times a host was pushed back (429/503, failures, robots 5xx)
    retries: int  # entries re-queued by done(retry=True)
    robots_fetches: int  # ROBOTS entries handed out
    handed_out: int  # PAGE entries handed out
    raised: int  # queued entries whose priority reprioritize() raised
    backoff_hosts: int = 0  # of the waiting hosts, those backed off right now
    down_hosts: int = 0  # hosts refused as down (max_host_failures)
    # by address (crawler.frontier.addresses): the settings, addresses known, hosts whose
    # turn came and wait on their address, hosts whose name is being resolved
    ip_delay: float = 0.0
    ip_concurrency: int = 0
    addresses: int = 0
    address_waiting: int = 0
    resolving: int = 0


class WorkSource(Protocol):
    """What the crawl's workers and the engine ask of the frontier they take work from: the
    in-memory `Frontier`, or a shared crawl's `crawler.frontier.redis.work.SharedWork`. The
    engine, the worker loop and the pages never ask which one they hold."""

    @property
    def stats(self) -> FrontierStats: ...

    async def get(self) -> Entry | None: ...

    def done(
        self, entry: Entry, outcome: Outcome | None = None, *, retry: bool = False
    ) -> None: ...

    def abandon(self, entry: Entry) -> None:
        """An entry handed out and left unhandled (the crawl aborted while it was in flight):
        its host's slot freed; with a state it stays pending, in a shared crawl it goes back."""

    def emitted(self, key: str) -> None:
        """The result of `key` reached the crawl's consumer (a shared crawl's lease ends)."""

    def refusal(self, entry: Entry) -> str: ...

    def set_robots(self, key: str, policy: RobotsPolicy, body: bytes | None = None) -> None: ...

    def close(self) -> None: ...

    def __len__(self) -> int: ...


class FrontierBackend(Protocol):
    """What the crawl asks of a frontier; the rules are in the module docstring."""

    def put(self, entry: Entry) -> bool:
        """Queue a PAGE entry by its priority (rule 1); False when refused (rule 7)."""
        ...

    def put_many(self, entries: Iterable[Entry]) -> list[bool]:
        """``put()`` a batch, handing nothing out before all are queued (rule 11)."""
        ...

    def queued_priority(self, url: str, key: str) -> float | None:
        """The priority of the queued entry with this key, None if none is queued (rule 10)."""
        ...

    def reprioritize(self, url: str, key: str, priority: float, *, lower: bool = False) -> bool:
        """Raise a queued entry's priority (lower it too with ``lower``); False when nothing
        changed (rule 10)."""
        ...

    async def get(self) -> Entry | None:
        """The next entry that may be fetched now (rules 2, 4, 5), or None (rule 8)."""
        ...

    def set_priority(self, url: str, key: str, priority: float) -> float | None:
        """Set a queued entry's priority, higher or lower; the priority it had, None when none
        is queued (rule 10)."""
        ...

    def done(self, entry: Entry, outcome: Outcome | None = None, *, retry: bool = False) -> None:
        """Release a handed-out entry exactly once (rule 6); the outcome drives backoff and the
        adaptive delay; ``retry`` re-queues it (rule 3)."""
        ...

    def set_robots(self, key: str, policy: RobotsPolicy, body: bytes | None = None) -> None:
        """Give a host (its key, or any URL on it) its robots.txt policy (rule 5); `body` is the
        robots.txt it was read from (a shared frontier stores it for the other processes)."""
        ...

    def refusal(self, entry: Entry) -> str:
        """Why a REFUSED entry was refused, as the result's error: ``robots: ...`` (rule 5) or
        ``host_down: ...`` (rule 12)."""
        ...

    def close(self) -> None:
        """Stop handing out work (rule 8)."""
        ...

    def pending(self) -> Iterator[Entry]:
        """Every queued entry, priorities included (rule 9)."""
        ...

    def __len__(self) -> int:
        """Entries queued (not in flight)."""
        ...

    @property
    def in_flight(self) -> int:
        """Entries handed out and not done yet."""
        ...

    @property
    def stats(self) -> FrontierStats:
        """Counters and gauges."""
        ...
