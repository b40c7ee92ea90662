"""The in-memory frontier: per-host priority queues, and which entry is handed out next.

It keeps the rules of :class:`crawler.frontier.base.FrontierBackend`. Each host
(``host_key``) has a :class:`crawler.frontier.queues.HostQueue` (best priority first, FIFO on
ties: breadth-first without scoring) and a *ready time*, when its next request may start. Hosts
with work and a free slot are filed in the :class:`crawler.frontier.schedule.Schedule`;
saturated ones, or held until their robots.txt is known, are filed again by ``done()`` or
``set_robots()``. Politeness rules (delay, adaptive delay, backoff, robots.txt lifetime, the
``host_rule`` overrides) are :class:`crawler.frontier.hosts.PolitenessRules`, applied to
:class:`crawler.frontier.hosts.Host` states.

Handing out (``get()``, the waiting getters and the timer) is the base class,
:class:`crawler.frontier.handout.Handout`; this class decides which entry goes next (``_poll``).
Memory: a queued entry is a compact record (:class:`crawler.frontier.entries.Packer`), rebuilt equal
(priority included) by ``get()`` and ``pending()``.

Re-prioritizing (rule 10): once the crawl is *scored* (the first entry with a priority other
than 0, or the first ``queued_priority()``/``reprioritize()`` call) every host queue is tracked
(``HostQueue.track()``: a map from each queued URL's key to its heap item), so a queued URL's
priority can be read and raised (or lowered, when asked); a change pushes a new item and the old
one is skipped lazily. A host whose best priority fell is filed again under its true priority
when the schedule comes to it (``Schedule``, as after a robots.txt sweep).
A crawl without scoring never tracks anything and pays nothing for it.

By address (given ``names``, the fetcher's `crawler.fetch.resolver.AddressBook`): each host is
resolved before it is scheduled and shares its address's budget (``ip_delay``,
``ip_concurrency``) with the other hosts there (:mod:`crawler.frontier.addresses`).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace

from crawler.fetch.steering import HostRule
from crawler.frontier.addresses import Address, AddressStep, Names
from crawler.frontier.base import FrontierStats
from crawler.frontier.entries import Entry, EntryKind, Outcome, Packer
from crawler.frontier.handout import Handout
from crawler.frontier.hosts import Host, PolitenessRules, host_key, robots_url
from crawler.frontier.queues import HostQueue, marks
from crawler.frontier.refusals import UNREACHABLE, announce, refusal, sweep
from crawler.frontier.robots import RobotsPolicy
from crawler.frontier.schedule import host_counts
from crawler.frontier.settings import Politeness, QueueLimits

__all__ = ["Frontier"]

logger = logging.getLogger(__name__)


class Frontier(Handout):
    """Per-host politeness frontier. See the module docstring for the rules."""

    __slots__ = ("_addresses", "_dropped", "_flying", "_handed_out", "_holding", "_host_rule",
                 "_hosts", "_max_queued", "_max_queued_per_host", "_packer", "_raised",
                 "_refusals", "_refused", "_respect_robots", "_retries", "_robots_fetches",
                 "_rules")  # fmt: skip

    def __init__(
        self,
        politeness: Politeness = Politeness(),
        limits: QueueLimits = QueueLimits(),
        *,
        clock: Callable[[], float] | None = None,
        rng: random.Random | None = None,
        host_rule: Callable[[str], HostRule | None] | None = None,
        names: Names | None = None,
    ) -> None:
        """`names` resolves hosts for the budget by address (None: by host only)."""
        self._rules = PolitenessRules(politeness, rng)
        self._max_queued = limits.max_queued
        self._max_queued_per_host = limits.max_queued_per_host
        super().__init__(clock)
        self._respect_robots = politeness.respect_robots
        self._host_rule = host_rule
        self._hosts: dict[str, Host] = {}
        self._flying: dict[int, tuple[Entry, Host, Address | None]] = {}
        self._refusals: deque[Entry] = deque()  # queued pages robots.txt disallows
        self._dropped = [0, 0, 0]  # full, host full, closed
        self._refused = self._retries = self._raised = 0
        self._holding = False  # put_many() is queueing a batch: hand nothing out meanwhile
        self._robots_fetches = self._handed_out = 0
        self._packer = Packer()
        self._addresses: AddressStep[Host] | None = None
        if names is not None:
            self._addresses = AddressStep(names, politeness, self._resolved, self._now)

    # -- public API -------------------------------------------------------------------------

    def put(self, entry: Entry) -> bool:
        """Queue a PAGE entry in its host's queue, after the entries of equal or higher priority.
        False (counted in ``stats``) when the frontier is closed or full: the caller must record
        the URL as not crawled. ValueError for a NaN priority."""
        if entry.kind is not EntryKind.PAGE:
            raise ValueError(f"put() takes PAGE entries, got {entry.kind} for {entry.url!r}")
        if self._closed:
            self._dropped[2] += 1
            return False
        if self._queued >= self._max_queued:
            self._dropped[0] += 1
            return False
        priority = entry.priority
        if priority:  # not the default 0: best-first from now on
            if priority != priority:
                raise ValueError(f"priority must be a number, got {priority!r} for {entry.url!r}")
            if not self._schedule.scored:
                self._score()
        url = entry.url
        host = self._host(host_key(url))
        queue = host.queue
        size = queue.size
        if size >= self._max_queued_per_host:
            self._dropped[1] += 1
            return False
        policy = host.policy
        if policy is not None and policy.temporary and self._now() >= host.robots_expires:
            host.policy = policy = None  # given up on, long enough: robots.txt asked again first
        fetch = url if policy is None or host.down is not None else policy.fetchable(url, entry.key)
        if fetch is not None and fetch != url:  # the page without its session id
            entry = replace(entry, url=fetch)
        if host.down is not None or fetch is None:
            self._refusals.append(entry)  # refused at once: no slot, no delay
        else:
            head, context = self._packer.pack(entry, host.prefix)
            queue.push(head, context, priority)
            if queue.size == size:  # (tracked) the URL was queued already: still one entry
                self._queued -= 1
            if not host.in_heap:
                self._schedule.file(host)
            elif priority > host.filed_best:  # a better URL for a host waiting as ready
                self._schedule.raised(host, priority)
        self._queued += 1
        if self._waiters and not self._holding:
            self._dispatch()
        return True

    def put_many(self, entries: Iterable[Entry]) -> list[bool]:
        """``put()`` each entry, in order; nothing is handed out before the whole batch is
        queued, so waiting getters get the best of it (rule 11)."""
        self._holding = True
        try:
            flags = [self.put(entry) for entry in entries]
        finally:
            self._holding = False
        if self._waiters:
            self._dispatch()
        return flags

    def queued_priority(self, url: str, key: str) -> float | None:
        """The priority of the queued entry whose key is ``key`` (``url``: the URL it is
        fetched at, for its host); None when no such entry is queued (rule 10)."""
        host = self._hosts.get(host_key(url))
        if host is None or not host.queue.size:
            return None
        if not self._schedule.scored:
            self._score()
        return host.queue.priority(marks(host.prefix, key))

    def reprioritize(self, url: str, key: str, priority: float, *, lower: bool = False) -> bool:
        """Raise the priority of the queued entry whose key is ``key`` to ``priority`` (with
        ``lower``, lower it too); False (a no-op) when no such entry is queued or its priority
        is not lower (with ``lower``: is equal) (rule 10)."""
        return self._change(url, key, priority, lower)[0]

    def set_priority(self, url: str, key: str, priority: float) -> float | None:
        """``reprioritize(url, key, priority, lower=True)`` that returns the priority the entry
        had (None when no such entry is queued: nothing done), in one lookup instead of that
        and ``queued_priority`` (a focused crawl re-scores thousands of queued URLs) (rule 10)."""
        return self._change(url, key, priority, True)[1]

    def _change(
        self, url: str, key: str, priority: float, lower: bool
    ) -> tuple[bool, float | None]:
        """(changed, the priority the entry had: looked up only with ``lower``, None when no
        such entry is queued) of `reprioritize`."""
        if priority != priority:
            raise ValueError(f"priority must be a number, got {priority!r} for {url!r}")
        host = self._hosts.get(host_key(url))
        if host is None or not host.queue.size:
            return False, None
        if not self._schedule.scored:
            self._score()
        found = marks(host.prefix, key)
        was = host.queue.priority(found) if lower else None
        if not host.queue.raise_(found, priority, lower=lower):
            return False, was
        if was is None or priority > was:
            self._raised += 1
        if host.in_heap and priority > host.filed_best:  # a better URL for a ready host
            self._schedule.raised(host, priority)
        return True, was

    def abandon(self, entry: Entry) -> None:
        """An entry left unhandled (the crawl aborted): its slot freed, nothing else."""
        self.done(entry)

    def emitted(self, key: str) -> None:
        """Nothing to do in memory (`WorkSource.emitted`)."""

    def done(self, entry: Entry, outcome: Outcome | None = None, *, retry: bool = False) -> None:
        """Release the slot of an entry handed out by ``get()``; exactly once per PAGE/ROBOTS
        entry (a no-op for REFUSED ones). ``outcome`` drives backoff and the adaptive delay;
        ``retry=True`` re-queues a PAGE entry with retries + 1 at the head of its priority in its
        host's queue (before every entry of equal or lower priority)."""
        if entry.kind is EntryKind.REFUSED:
            return
        flying = self._flying.pop(id(entry), None)
        if flying is None or flying[0] is not entry:
            raise ValueError(f"done() for an entry that is not in flight (done twice?): {entry!r}")
        host = flying[1]
        host.in_flight -= 1
        self._in_flight -= 1
        if (address := flying[2]) is not None:
            address.in_flight -= 1
            if not address.in_heap:
                self._schedule.file_address(address)
        try:
            if entry.kind is EntryKind.ROBOTS:
                if host.robots_fetching:  # the engine never called set_robots(): unreachable
                    self._set_policy(host, UNREACHABLE)
            else:
                if outcome is not None and self._rules.response(host, outcome, self._now()):
                    logger.warning("%s is down (%s); refusing its %d queued pages", host.key,
                                   host.down, host.queue.size)  # fmt: skip
                    sweep(host, self._refusals)
                if retry:
                    entry = replace(entry, retries=entry.retries + 1)
                    if host.down is None:
                        self._push_front(host, entry)
                    else:
                        self._refusals.append(entry)
                    self._queued += 1
                    self._retries += 1
        finally:  # the slot is free whatever failed above: the host's next entry may go out
            self._schedule.file(host)
            if self._waiters:
                self._dispatch()

    def set_robots(self, key: str, policy: RobotsPolicy, body: bytes | None = None) -> None:
        """Give a host (its key, or any URL on it) its robots.txt policy. Call it before
        ``done()`` on the ROBOTS entry; it may also preload policies before the crawl. (`body`,
        the robots.txt as fetched, is for frontiers shared between processes: unused here.)"""
        host = self._host(host_key(key))
        self._set_policy(host, policy)
        self._schedule.file(host)
        if self._waiters:
            self._dispatch()

    def close(self) -> None:
        """Stop handing out work (and resolving hosts)."""
        if self._addresses is not None:
            self._addresses.close()
        super().close()

    def refusal(self, entry: Entry) -> str:
        """Why a REFUSED entry was refused, as a result's error (`kind: message`): its host is
        down (``max_host_failures``), or its robots.txt rules, or robots.txt being unreachable
        (RFC 9309: then nothing may be fetched)."""
        return refusal(self._hosts.get(host_key(entry.url)))

    def pending(self) -> Iterator[Entry]:
        """Every entry still queued, with its priority, host by host in the order each host's
        would be handed out (not those in flight)."""
        yield from list(self._refusals)
        for host in list(self._hosts.values()):
            for head, context, priority in host.queue:
                yield Packer.unpack(head, context, host.prefix, EntryKind.PAGE, priority)

    @property
    def stats(self) -> FrontierStats:
        counts = host_counts(self._hosts.values(), self._now(), self._respect_robots)
        ready, waiting, deferred_robots, deferred_backoff, backing_off, down = counts
        full, host_full, closed = self._dropped
        step = self._addresses
        known = step.addresses.values() if step is not None else ()
        return FrontierStats(
            hosts=len(self._hosts), ready_hosts=ready, waiting_hosts=waiting,
            queued=self._queued, in_flight=self._in_flight, dropped_full=full,
            dropped_host_full=host_full, dropped_closed=closed, refused_robots=self._refused,
            deferred_robots=deferred_robots, deferred_backoff=deferred_backoff,
            backoffs=self._rules.backoffs, retries=self._retries,
            robots_fetches=self._robots_fetches, handed_out=self._handed_out, raised=self._raised,
            backoff_hosts=backing_off, down_hosts=down,
            ip_delay=step.delay if step else 0.0, ip_concurrency=step.concurrency if step else 0,
            addresses=len(known), resolving=step.resolving if step else 0,
            address_waiting=sum(len(a.parked) for a in known),
        )  # fmt: skip

    def __repr__(self) -> str:
        return (
            f"Frontier(hosts={len(self._hosts)}, queued={self._queued}, "
            f"in_flight={self._in_flight}, waiters={len(self._waiters)}, "
            f"delay={self._rules.delay}, per_host_concurrency={self._rules.concurrency}, "
            f"closed={self._closed})"
        )

    # -- scheduling -------------------------------------------------------------------------

    def _host(self, key: str) -> Host:
        host = self._hosts.get(key)
        if host is None:
            rule = self._host_rule(key) if self._host_rule is not None else None
            host = self._hosts[key] = self._rules.new_host(key, HostQueue(), rule)
            if self._schedule.scored:
                host.queue.track()
            if self._addresses is not None:
                self._addresses.new_host(host)
        return host

    def _bound(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._addresses is not None:
            self._addresses.bind(loop)

    def _resolved(self, host: Host) -> None:
        """A host's answer came in (`AddressStep`): it may be scheduled."""
        self._schedule.file(host)
        if self._waiters:
            self._dispatch()

    def _score(self) -> None:
        """The crawl is scored from now on: best-first hosts, tracked queues (rule 10)."""
        self._schedule.scored = True
        for host in self._hosts.values():
            host.queue.track()

    def _poll(self, now: float) -> Entry | None:
        """Hand out the next ready entry, or None if no host is ready at ``now``."""
        if self._refusals:
            self._queued -= 1
            self._refused += 1
            return replace(self._refusals.popleft(), kind=EntryKind.REFUSED)
        schedule = self._schedule
        while (host := schedule.take(now)) is not None:
            entry = self._take(host, now)
            schedule.file(host)
            if entry is not None:
                return entry
        return None

    def _take(self, host: Host, now: float) -> Entry | None:
        if now >= host.resolve_at:  # its answer expired: resolved again before it goes
            assert self._addresses is not None
            self._addresses.resolve(host)
            return None
        if self._respect_robots and not host.robots_fetching and now >= host.robots_expires:
            host.robots_fetching = True
            url = robots_url(host.key)
            self._robots_fetches += 1
            return self._start(host, Entry(url=url, key=url, kind=EntryKind.ROBOTS), now)
        policy = host.policy
        if policy is None and self._respect_robots:
            return None  # held until set_robots()
        try:
            head, context, priority = host.queue.pop()
        except IndexError:  # a robots.txt policy swept the queue while the host was filed
            return None
        entry = Packer.unpack(head, context, host.prefix, EntryKind.PAGE, priority)
        self._queued -= 1
        if policy is not None:
            fetch = policy.fetchable(entry.url, entry.key)
            if fetch is None:
                self._refused += 1
                return replace(entry, kind=EntryKind.REFUSED)
            if fetch != entry.url:  # the page without its session id
                entry = replace(entry, url=fetch)
        self._handed_out += 1
        return self._start(host, entry, now)

    def _start(self, host: Host, entry: Entry, now: float) -> Entry:
        host.in_flight += 1
        self._in_flight += 1
        host.last_start = now
        host.ready_at = now + host.delay
        address = host.address
        if address is not None:
            address.start(now)
            if address.parked and not address.in_heap:
                self._schedule.file_address(address)
        self._flying[id(entry)] = (entry, host, address)
        return entry

    def _unget(self, entry: Entry) -> None:
        """Undo a hand-out whose getter was cancelled before it saw the entry."""
        if entry.kind is EntryKind.REFUSED:
            self._refused -= 1
            self._queued += 1
            self._refusals.appendleft(replace(entry, kind=EntryKind.PAGE))
            self._dispatch()
            return
        _, host, address = self._flying.pop(id(entry))
        host.in_flight -= 1
        self._in_flight -= 1
        if address is not None:
            address.in_flight -= 1
            self._schedule.file_address(address)
        if entry.kind is EntryKind.ROBOTS:
            host.robots_fetching = False
            self._robots_fetches -= 1
        else:
            self._handed_out -= 1
            self._push_front(host, entry)
            self._queued += 1
        self._schedule.file(host)
        self._dispatch()

    def _push_front(self, host: Host, entry: Entry) -> None:
        head, context = self._packer.pack(entry, host.prefix)
        host.queue.push_front(head, context, entry.priority)
        if host.in_heap and entry.priority > host.filed_best:
            self._schedule.raised(host, entry.priority)

    # -- robots.txt -------------------------------------------------------------------------

    def _set_policy(self, host: Host, policy: RobotsPolicy) -> None:
        if self._rules.robots(host, policy, self._now()):
            announce(host, policy)
            for entry in reversed(sweep(host, self._refusals)):  # without their session ids
                self._push_front(host, entry)
