"""The frontier in Redis: one crawl's queues, politeness and leases shared by several processes.

:class:`RedisFrontier` keeps the ordering and politeness rules of
:class:`crawler.frontier.base.FrontierBackend` across every process pointed at one Redis. Each
state change is one Lua script (keys and shared Lua in ``crawler.frontier.redis.lua_keys``; the
admission's scripts in ``lua_admit``, the queues' in ``lua_queue``, the leases' in ``lua_leases``,
each beside the function that packs its arguments and the `IntEnum` of its answers), so it is atomic
across processes; ``now`` is the injected clock (tests) or Redis ``TIME`` (one clock
for every process). Politeness is global because a *host* is claimed, not a URL: a claim takes the
best entry of the best ready host, counts it in flight, moves the host's next start to ``now +
delay`` and takes the host out of ``ready`` while its concurrency is used up; no process holds a
host for a batch, so processes take turns on it. With ``turn`` > 0 they also take turns when
they race for a host of one slot that frees up: while another process's claim came back empty
in the last ``turn`` seconds, such a host that this process claimed last is left to the others
for ``turn`` seconds after it becomes ready (the others are woken when its slot frees up); a
host of several slots is shared slot by slot. A process whose claim found nothing waits for a
wake-up (``crawler.frontier.redis.wake``: published when a completion or the reclaim frees a
slot), or until the host that is ready first may start, at most ``poll_interval``.

Leases: every entry handed out is leased (id, owner, expiry = now + ``lease_ttl``, default the
fetch's total timeout 60 s + 30 s). ``done()`` takes the lease back: a finisher whose lease
expired (and was reclaimed, maybe handed to another process) changes nothing and gets False.
Every process runs the reclaim script from ``get()`` every ``reclaim_interval`` seconds: expired
leases go back to the head of their host's queue (before new work of equal priority) and free
their slot. Admission (``put_many``) is one Lua call doing the Sieve's test-and-set (the bits and
counters of :class:`crawler.sieve.redis.RedisSieve`, same keys, same bits) and, for new keys
only, the enqueue: a crash can never leave a URL seen but not queued. Admission, priorities
and the views (``pending``, ``stats``) are :class:`crawler.frontier.redis.queues.RedisQueues`'s,
which this class extends with the hand-out, the leases and robots.txt.

Rules of ``FrontierBackend`` (numbers as in ``crawler.frontier.base``):
  1. kept: score ``-priority``; equal priorities pop FIFO (chunks in the order queued).
  2. kept among the first ``candidates`` ready hosts (earliest ready first): the best priority
     wins, ties the earliest ready; hosts ready at the same time tie by name, not by filing.
  3. kept: retries and reclaimed leases come back with class 0, before equal-priority new work.
  4. delay between starts, ``per_host_concurrency`` (or ``host_rule``), backoff (HOST blame,
     SUSPECT streaks, 429/503 Retry-After capped at ``max_retry_after``; the blame is computed
     here as ``PolitenessRules.response`` does, the counters live in the host hash) are kept across
     processes, and so is the circuit breaker: the ``max_host_failures``-th HOST failure in a
     row, reported by any process, puts the host down in Redis (``down`` in its hash); its
     queued pages, its retries and pages admitted later are handed out first, at once, as
     REFUSED entries (``refusal()``: ``host_down: ...``), each to one process, leased until
     ``done()`` (the engine's, once the result is out) but holding no slot.
     So is the adaptive delay (``adaptive``): each outcome's latency moves the host's shared
     delay as ``PolitenessRules.response`` moves an in-memory host (DONE) (any process fetched).
  5. kept with ``respect_robots`` (off by default here; the engine passes its setting): a host
     whose policy is unknown or expired hands out its ROBOTS entry first (leased like a page;
     reclaimed, it is asked again) and nothing else until ``set_robots()``, which stores the
     answer's status and body in the host hash (``robots()``; each process rebuilds and caches
     the policy with ``policy_from_response``) and applies Crawl-delay, backoff and giving up as
     ``PolitenessRules.robots`` does. Differs: a disallowed page is found when it is claimed (the
     policy is parsed in Python, not in Lua) and comes back REFUSED then, in its host's queue
     order rather than at once; its slot is given back and the host's next start restored (no
     slot, no delay spent: one extra round trip per claim that found any; not when another
     claim of the host came in between, whose delay stands), and it stays leased,
     slot-less, until ``done()``, as a down host's refusal does (a process killed before it
     wrote the result leaves the page to the reclaim: handed out, and refused, again).
  6. ``done()`` once per entry, REFUSED ones included (it releases their leases): a second (or
     a late) one returns False instead of raising, since another process may legitimately hold
     the entry now.
  7. kept (``max_queued``, ``max_queued_per_host``, closed); put_many returns False and counts.
  8. ``get()`` waits (never busy-loops: until a wake-up, the earliest ready time or
     ``poll_interval``, whichever is soonest) and returns None once nothing is queued and nothing
     is leased by any process, or after ``close()``.
  9. ``pending()`` returns (not yields) every queued entry, host by host (by name), each host's
     in hand-out order.
 10. kept: ``queued_priority``/``reprioritize`` read, raise (and lower) through ``qk:{host}``.
 11. kept: the batch is queued in one script, so no claim sees half of it.
Differences: every method but ``close()`` is a coroutine; ``pending()`` and ``stats()`` are
calls (no ``len()``/``in_flight``: ``stats()`` has both); ``done()`` returns whether the lease
was current; ``open()`` first; ``claim(count)``, ``done_many()``
and ``reclaim()`` are extra (a non-waiting batch claim, a batch of completions in one round trip,
the reclaim that ``get()`` runs on its timer).
"""

from __future__ import annotations

import logging
import os
import random
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace

from crawler.fetch.steering import HostRule
from crawler.frontier.addresses import Names
from crawler.frontier.entries import Entry, EntryKind, Outcome
from crawler.frontier.hosts import down_reason, host_key, robots_url
from crawler.frontier.redis.addresses import RESOLVE_WAIT, SharedResolution
from crawler.frontier.redis.lua_address import ADDRESS, HostAddress, address_args
from crawler.frontier.redis.lua_admit import AdmitFlag
from crawler.frontier.redis.lua_leases import (
    DONE,
    RECLAIM,
    REFUSE,
    RENEW,
    SET_ROBOTS,
    Completion,
    DoneAnswer,
    NewHost,
    Requeue,
    RobotsAnswer,
    done_args,
    reclaim_args,
    refuse_args,
    renew_args,
    set_robots_args,
)
from crawler.frontier.redis.lua_queue import CLAIM, DOWN, Claimed, claim_args, claim_reply
from crawler.frontier.redis.members import ROBOTS_CLASS, entry_of, member_tail
from crawler.frontier.redis.queues import RedisQueues
from crawler.frontier.redis.settings import Sharing
from crawler.frontier.redis.wake import Wakes
from crawler.frontier.refusals import UNREACHABLE
from crawler.frontier.robots import REFUSED_ATTEMPTS, RobotsPolicy, policy_from_response
from crawler.frontier.settings import Politeness, QueueLimits
from crawler.sieve.redis import RedisClient, RedisSieve

__all__ = ["AdmitFlag", "RedisFrontier", "default_owner"]

logger = logging.getLogger(__name__)


def default_owner() -> str:
    """A process's name in the leases: host, pid and a random tag."""
    return f"{socket.gethostname()}:{os.getpid()}:{random.getrandbits(32):x}"


class RedisFrontier(RedisQueues):
    """A frontier whose state lives in Redis under `prefix`; `sieve` is the crawl's RedisSieve
    (same client and prefix; opened here). ``await open()`` before use."""

    __slots__ = ("_candidates", "_down", "_flying", "_next_reclaim", "_policies", "_rng",
                 "_robots_asked", "_sleep", "lease_ttl", "owner", "politeness", "poll_interval",
                 "reclaim_interval", "resolution", "turn", "user_agent", "wakes")  # fmt: skip

    def __init__(
        self,
        client: RedisClient,
        prefix: str,
        sieve: RedisSieve,
        politeness: Politeness = Politeness(respect_robots=False),
        limits: QueueLimits = QueueLimits(),
        sharing: Sharing = Sharing(),
        *,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        rng: random.Random | None = None,
        host_rule: Callable[[str], HostRule | None] | None = None,
    ) -> None:
        if sieve.prefix != prefix:
            raise ValueError(f"the sieve's prefix {sieve.prefix!r} is not {prefix!r}")
        super().__init__(client, prefix, sieve, politeness, limits, exact=sharing.exact,
                         clock=clock, host_rule=host_rule)  # fmt: skip
        self.politeness = politeness  # the host rules the DONE and SET_ROBOTS scripts apply
        self.lease_ttl = float(sharing.lease_ttl)
        interval = sharing.reclaim_interval
        self.reclaim_interval = min(5.0, self.lease_ttl / 4) if interval is None else interval
        self.poll_interval = sharing.poll_interval
        self._candidates = sharing.candidates
        self.turn = float(sharing.turn)
        self._sleep = sleep  # None: wait for a wake-up (else an injected clock's sleep)
        self._rng = rng if rng is not None else random.Random()
        self.owner = sharing.owner or default_owner()
        self.wakes = Wakes(client, prefix, self.owner)
        self.user_agent = sharing.user_agent
        self._policies: dict[str, tuple[str, RobotsPolicy]] = {}  # host -> (version, policy)
        self._down: dict[str, str] = {}  # host -> why it is down, as its refusals said
        self._robots_asked: dict[str, str] = {}  # host -> its ROBOTS lease held here
        self._next_reclaim = float("-inf")
        self._flying: dict[int, tuple[Entry, str]] = {}  # id(entry) -> (entry, lease id)
        self._register({"claim": CLAIM, "done": DONE, "reclaim": RECLAIM, "refuse": REFUSE,
                        "robots": SET_ROBOTS, "renew": RENEW, "address": ADDRESS})  # fmt: skip
        self.resolution: SharedResolution | None = None  # by host only until resolve_by()

    def resolve_by(self, names: Names) -> None:
        """Schedule by address as well as by host: hosts resolved through `names` (the
        fetcher's `crawler.fetch.resolver.AddressBook`), each address's budget (``ip_delay``,
        ``ip_concurrency``) held across every process. Call it before the first claim."""
        self.resolution = SharedResolution(names, self.politeness, self._record_addresses)

    async def open(self) -> None:
        """Open (or join) the shared Sieve; SharedStateError if Redis is unreachable."""
        await self.sieve.open()

    # -- hand-out -------------------------------------------------------------------------------
    async def claim(self, count: int = 1) -> tuple[list[Entry], float | None, int, int]:
        """Claim up to `count` entries now, without waiting: (entries, seconds until the next
        host is ready or None, queued, leased). With ``respect_robots`` a page its host's robots.txt
        disallows comes back as a REFUSED entry (its slot and delay given back in one more round
        trip for the whole claim). The pages of a host that is down (``max_host_failures``)
        come first, as REFUSED entries. Either refusal stays leased until ``done()`` (no slot,
        no delay), so a process killed before it wrote the result leaves the page to another."""
        args = claim_args(self.prefix, self._now_arg(), count=count, lease_ttl=self.lease_ttl,
                          owner=self.owner, candidates=self._candidates,
                          respect_robots=self.respect_robots, turn=self.turn,
                          resolve=RESOLVE_WAIT if self.resolution else 0.0)  # fmt: skip
        reply = claim_reply(await self._run("claim", args))
        resolution = self.resolution
        if resolution is not None and reply.resolve:
            resolution.ask(reply.resolve)
        entries = []
        refused: list[str] = []  # leases of pages robots.txt disallows
        for claimed in reply.claims:
            if resolution is not None:
                resolution.pin(claimed.host, claimed.address)
            entry = await self._claimed(claimed)
            if entry.kind is EntryKind.REFUSED and not claimed.version.startswith(DOWN):
                refused.append(claimed.lease)
            self._flying[id(entry)] = (entry, claimed.lease)
            entries.append(entry)
        if refused:  # their slots and delays back, their leases kept (slot-less) until done()
            await self._run("refuse", refuse_args(self.prefix, refused))
        return entries, reply.ready_in, reply.queued, reply.leased

    async def _claimed(self, claimed: Claimed) -> Entry:
        """The entry of a claim: a down host's page or one its robots.txt disallows REFUSED, a
        ROBOTS entry, or the page (without its session id, when robots.txt says so)."""
        lease, host, score, record, version, _ = claimed
        if version.startswith(DOWN):  # its host is down: why
            self._down[host] = version.removeprefix(DOWN)
            return replace(entry_of(host, record, -float(score)), kind=EntryKind.REFUSED)
        if record.startswith(ROBOTS_CLASS):
            url = robots_url(host)
            self._robots_asked[host] = lease
            return Entry(url=url, key=url, kind=EntryKind.ROBOTS)
        entry = entry_of(host, record, -float(score))
        if version:
            policy = await self._policy(host, version)
            fetch = policy.fetchable(entry.url, entry.key)
            if fetch is None:
                return replace(entry, kind=EntryKind.REFUSED)
            if fetch != entry.url:  # the page without its session id
                return replace(entry, url=fetch)
        return entry

    async def _policy(self, host: str, version: str) -> RobotsPolicy:
        """The host's robots.txt policy as stored (`version`: its expiry), cached per host."""
        cached = self._policies.get(host)
        if cached is not None and cached[0] == version:
            return cached[1]
        stored = await self.robots(host)
        status, body = stored if stored is not None else (None, b"")
        policy = policy_from_response(status, body, self.user_agent)
        self._policies[host] = (version, policy)
        return policy

    async def get(self) -> Entry | None:
        """The next entry that may be fetched now, waiting politely; None once nothing is
        queued or leased anywhere, or after ``close()`` (rule 8)."""
        if self._sleep is None:
            await self.wakes.listen()
        while not self._closed:
            await self.maybe_reclaim()
            self.wakes.clear()
            entries, ready_in, queued, leased = await self.claim()
            if entries:
                return entries[0]
            if queued == 0 and leased == 0:
                break
            wait = self.poll_interval if ready_in is None else min(self.poll_interval, ready_in)
            if self.resolution is not None and self.resolution.pending:
                await self.resolution.wait(wait)  # a host resolved may be claimed at once
            elif self._sleep is not None:
                await self._sleep(wait)
            else:
                await self.wakes.wait(wait)
        await self.wakes.close()
        return None

    async def done(
        self, entry: Entry, outcome: Outcome | None = None, *, retry: bool = False
    ) -> bool:
        """Release an entry's lease: apply `outcome` to its host's backoff, re-queue it at the
        head of its priority when `retry`. False (and nothing changed) when the lease is no
        longer current: it expired and was reclaimed, or was released already."""
        return (await self.done_many([(entry, outcome, retry)]))[0]

    async def done_many(self, items: Iterable[tuple[Entry, Outcome | None, bool]]) -> list[bool]:
        """``done(entry, outcome, retry=retry)`` of each item, in one round trip (plus one per
        ROBOTS entry whose ``set_robots()`` never came: its robots.txt counts as unreachable).
        The ``max_host_failures``-th HOST failure in a row puts its host down, for every
        process: its queued pages, a retry among them, are handed out as refusals."""
        completions: list[Completion] = []
        flags: list[bool | None] = []
        urls: list[str] = []
        for entry, outcome, retry in items:
            flying = self._flying.pop(id(entry), None)
            if entry.kind is EntryKind.REFUSED:
                if flying is None:  # done() already
                    flags.append(False)
                    continue
                outcome, retry = None, False  # robots.txt or its host down: its lease goes now
            if flying is None or flying[0] is not entry:
                raise ValueError(f"done() for an entry not handed out here: {entry!r}")
            if entry.kind is EntryKind.ROBOTS:
                host = host_key(entry.url)
                if host in self._robots_asked:  # set_robots() was never called: unreachable
                    await self.set_robots(host, UNREACHABLE)
                outcome, retry = None, False
            tail = member_tail(Entry(url=entry.url, key=entry.key, depth=entry.depth,
                               parent=entry.parent, retries=entry.retries + 1,
                               redirects=entry.redirects, sitemap=entry.sitemap))  # fmt: skip
            completions.append(
                Completion(
                    flying[1],
                    Requeue.RETRY if retry else Requeue.NO,
                    tail,
                    outcome,
                    0.5 + 0.5 * self._rng.random(),
                )
            )
            flags.append(None)
            urls.append(entry.url)
        answers = [DoneAnswer(x) for x in await self._done(completions)]
        for url, answer in zip(urls, answers, strict=True):
            if answer is DoneAnswer.HOST_DOWN:
                logger.warning("%s is down (%s): refusing its pages", host_key(url),
                               down_reason(self.politeness.max_host_failures))  # fmt: skip
        replies = iter(answers)
        return [next(replies) is not DoneAnswer.STALE if flag is None else flag for flag in flags]

    async def _done(self, completions: list[Completion]) -> list[int]:
        """One DONE call for `completions` (none: no call); its answer per completion."""
        if not completions:
            return []
        args = done_args(self.prefix, self._now_arg(), self.politeness, completions, self.owner)
        return [int(x) for x in await self._run("done", args)]

    async def maybe_reclaim(self) -> None:
        """Run ``reclaim()`` when its timer (every ``reclaim_interval`` seconds) is due."""
        now = self._now()
        if now >= self._next_reclaim:
            await self.reclaim()
            self._next_reclaim = now + self.reclaim_interval

    async def renew(self) -> int:
        """Extend the leases this process holds by ``lease_ttl`` from now (those not reclaimed
        meanwhile); how many. A process that renews them every ``lease_ttl / 3`` keeps URLs
        whose fetch (or result) takes long, and loses them ``lease_ttl`` after it dies."""
        leases = [lease for _, lease in self._flying.values()]
        if not leases:
            return 0
        return int(await self._run("renew", renew_args(self.prefix, self._now_arg(),
                                                       self.lease_ttl, leases)))  # fmt: skip

    async def release(self, entries: list[Entry]) -> int:
        """Give back entries claimed here and not fetched (a process stopping): each goes back
        to the head of its host's queue as it was, its slot freed; how many were still leased."""
        completions: list[Completion] = []
        for entry in entries:
            flying = self._flying.pop(id(entry), None)
            if flying is None or entry.kind is EntryKind.ROBOTS:
                continue  # a ROBOTS entry is simply asked again once its lease expires
            completions.append(Completion(flying[1], Requeue.RELEASE, member_tail(entry), None,
                                          1.0))  # fmt: skip
        answers = await self._done(completions)
        return sum(answer is not DoneAnswer.STALE for answer in map(DoneAnswer, answers))

    async def reclaim(self, limit: int = 1000) -> int:
        """Put expired leases' entries back at the head of their hosts; how many."""
        return int(await self._run("reclaim", reclaim_args(self.prefix, self._now_arg(), limit)))

    async def _record_addresses(self, hosts: list[HostAddress]) -> None:
        """Record hosts' addresses for every process (``ADDRESS``)."""
        p = self.politeness
        await self._run("address", address_args(self.prefix, self._now_arg(), p.ip_delay,
                                                p.ip_concurrency, hosts))  # fmt: skip

    def _resolving(self) -> int:
        return self.resolution.pending if self.resolution is not None else 0

    def close(self) -> None:
        """Stop handing out work here (and resolving hosts; other processes go on)."""
        if self.resolution is not None:
            self.resolution.close()
        super().close()

    # -- robots.txt -----------------------------------------------------------------------------
    async def set_robots(self, key: str, policy: RobotsPolicy, body: bytes | None = None) -> None:
        """Give a host (its key, or any URL on it) its robots.txt answer, for every process:
        the status and `body` are stored (``robots()`` gives them back to rebuild the policy),
        the Crawl-delay raises the shared delay, a temporary policy (unreachable) backs the host
        off and, after ``robots_attempts`` (``REFUSED_ATTEMPTS`` when the host refused the
        connection), refuses its pages (``crawler.frontier.hosts.PolitenessRules`` rules; here the
        refusal stays ``robots: ...`` and is kept ``robots_ttl``). Call it before ``done()`` on the
        ROBOTS entry; it may also preload a host."""
        host = host_key(key)
        lease = self._robots_asked.pop(host, "")  # a late answer changes nothing
        attempts = self.politeness.robots_attempts
        if policy.refused:  # an answer: nothing listens there
            attempts = min(attempts, REFUSED_ATTEMPTS)
        new_host = NewHost(*self._host_settings(host))
        args = set_robots_args(self.prefix, self._now_arg(), self.politeness, host,
                               (policy, body or b""), attempts=attempts,
                               jitter=0.5 + 0.5 * self._rng.random(), new_host=new_host,
                               lease=lease)  # fmt: skip
        answer = RobotsAnswer(await self._run("robots", args))
        if answer is RobotsAnswer.IN_FORCE and policy.temporary:
            logger.warning("robots.txt of %s unreachable %d times: refusing its pages",
                           host, attempts)  # fmt: skip

    def refusal(self, entry: Entry) -> str:
        """Why a REFUSED entry was refused, as a result's error (`kind: message`): its host is
        down (``max_host_failures``), or its robots.txt rules, or robots.txt being unreachable
        (RFC 9309: then nothing may be fetched)."""
        host = host_key(entry.url)
        down = self._down.get(host)
        if down is not None:
            return f"host_down: {down}"
        cached = self._policies.get(host)
        if cached is None or cached[1].temporary:
            return "robots: robots.txt unreachable (RFC 9309: complete disallow)"
        return "robots: disallowed by robots.txt"

    def __repr__(self) -> str:
        return (
            f"RedisFrontier(prefix={self.prefix!r}, owner={self.owner!r}, "
            f"in_flight_here={len(self._flying)}, delay={self.delay}, "
            f"per_host_concurrency={self.concurrency}, lease_ttl={self.lease_ttl}, "
            f"closed={self._closed})"
        )
