"""The Lua scripts of the Redis frontier's leases and the host state they drive: completions
(``DONE``: backoff, the circuit breaker, retries), the reclaim of expired leases (``RECLAIM``),
renewal (``RENEW``), robots.txt refusals (``REFUSE``) and answers (``SET_ROBOTS``), each with
the one function that packs its arguments and an `IntEnum` of its answers (``RECLAIM`` and
``RENEW`` answer a count). Keys and shared helpers: ``crawler.frontier.redis.lua_keys``."""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum, IntEnum
from typing import Final, NamedTuple

from crawler.frontier.entries import Outcome
from crawler.frontier.hosts import SUSPECT_STREAK, blame_of, down_reason, parse_retry_after
from crawler.frontier.redis.lua_keys import COMMON, Arg, flag
from crawler.frontier.robots import RobotsPolicy
from crawler.frontier.settings import Politeness

__all__ = ["DONE", "RECLAIM", "REFUSE", "RENEW", "SET_ROBOTS", "Completion", "DoneAnswer",
           "NewHost", "RefuseAnswer", "Requeue", "RobotsAnswer", "done_args", "reclaim_args",
           "refuse_args", "renew_args", "set_robots_args"]  # fmt: skip

# ARGV: prefix, now, backoff_base, backoff_max, max_retry_after, suspect streak, max_host_failures
# (0: never), the reason a host is down, adaptive delay ('1'/''), max_delay, the calling process's
# name (the message of its wake-up, which it ignores), then per entry: lease id, retry ('1'; '2':
# given back unfetched, not counted as a retry; ''), retry tail (`members.member_tail`, retries
# + 1),
# blame ('host', 'suspect', 'url', ''), attempt, wait ('' or seconds, Retry-After), jitter,
# latency ('' or seconds to the response headers), status ('' none). The adaptive delay
# (``hosts.PolitenessRules.response``): the host's ``delay`` moves to the mean of itself and
# latency / its concurrency, never below its ``floor`` (its delay with robots.txt's Crawl-delay;
# ``base`` before any) nor above max(max_delay, floor); an error status never lowers it; the
# host's next start is then no sooner than its ``last`` start + the new delay. The
# max_host_failures-th HOST failure in a row (the ``failures`` the backoff counts) puts the host
# down (circuit breaker, ``crawler.frontier.hosts``): ``down`` = the reason in its hash, and
# ``refile`` makes its queued pages (a retry among them) refusals. Returns per entry 1, 2 when it
# put its host down, or 0 when its lease is not current (expired and reclaimed, or done). DONE,
# RECLAIM and REFUSE publish on ``{prefix}wake`` when they freed a slot
# (``crawler.frontier.redis.wake``: the waiting processes claim at once).
DONE: Final = (
    COMMON
    + r"""
local now = clock()
local bbase, bmax, maxra = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local streak, maxf = tonumber(ARGV[6]), tonumber(ARGV[7])
local adaptive, max_delay = ARGV[9] == '1', tonumber(ARGV[10])
local function adapt(hk, latency, status)
    local st = redis.call('HMGET', hk, 'delay', 'floor', 'base', 'conc', 'last', 'next')
    local delay = tonumber(st[1] or '0')
    local floor = tonumber(st[2] or st[3] or '0')
    local target = (delay + latency / math.max(tonumber(st[4] or '1'), 1)) / 2.0
    if status == nil or status >= 500 or status == 429 then  -- errors never speed us up
        target = math.max(target, delay)
    end
    delay = math.min(math.max(target, floor), math.max(max_delay, floor))
    redis.call('HSET', hk, 'delay', fmt(delay))
    local last = tonumber(st[5] or '')
    if last then
        redis.call('HSET', hk, 'next', fmt(math.max(tonumber(st[6] or '0'), last + delay)))
    end
end
local function finish(at)
    local host, score, member = take_lease(ARGV[at])
    if host == nil then return 0 end
    local hk = P .. 'h:' .. host
    local blame = ARGV[at + 3]
    local answer = 1
    if string.sub(member, 1, 1) == '2' then  -- a ROBOTS entry: set_robots() applied its answer
        refile(host)
        return 1
    end
    if blame == 'suspect' and tonumber(ARGV[at + 4]) == 0 then
        if redis.call('HINCRBY', hk, 'suspects', 1) >= streak then blame = 'host' end
    end
    if blame == 'host' then
        local failures = redis.call('HINCRBY', hk, 'failures', 1)
        redis.call('HSET', hk, 'suspects', 0)
        local wait = tonumber(ARGV[at + 5])
        if wait == nil then
            wait = math.min(bmax, bbase * 2 ^ math.min(failures - 1, 64)) * tonumber(ARGV[at + 6])
        end
        local untl = now + math.min(wait, maxra)
        local old = tonumber(redis.call('HGET', hk, 'backoff_until') or '0')
        redis.call('HSET', hk, 'backoff_until', fmt(math.max(old, untl)))
        redis.call('HINCRBY', P .. 'stats', 'backoffs', 1)
        if maxf > 0 and failures >= maxf and redis.call('HSETNX', hk, 'down', ARGV[8]) == 1 then
            redis.call('HINCRBY', P .. 'stats', 'hosts_down', 1)
            answer = 2
        end
    elseif blame == 'url' then
        redis.call('HSET', hk, 'failures', 0, 'suspects', 0)
    end
    local latency = tonumber(ARGV[at + 7])
    if adaptive and latency then adapt(hk, latency, tonumber(ARGV[at + 8])) end
    if ARGV[at + 1] ~= '' then
        requeue(host, score, string.sub(member, 1, 7) .. ARGV[at + 2])
        if ARGV[at + 1] == '1' then redis.call('HINCRBY', P .. 'stats', 'retries', 1) end
    end
    refile(host)
    return answer
end
local out = {}
local freed = false
for at = 12, #ARGV, 9 do
    out[#out + 1] = finish(at)
    freed = freed or out[#out] ~= 0
end
if freed then redis.call('PUBLISH', P .. 'wake', ARGV[11]) end  -- a slot is free: wake them
return out
"""
)

# ARGV: prefix, now, limit. Expired leases: entry back at the head of its host, slot freed.
RECLAIM: Final = (
    COMMON
    + r"""
local now = clock()
local ids = redis.call('ZRANGEBYSCORE', P .. 'leases', '-inf', fmt(now), 'LIMIT', 0, ARGV[3])
for _, id in ipairs(ids) do
    local host, score, member = take_lease(id)
    if host ~= nil and string.sub(member, 1, 1) ~= '2' then
        requeue(host, score, member)
    end
    if host ~= nil then
        redis.call('HINCRBY', P .. 'stats', 'reclaimed', 1)
        refile(host)
    end
end
if #ids > 0 then redis.call('PUBLISH', P .. 'wake', '') end  -- slots freed, entries back
return #ids
"""
)

# ARGV: prefix, now, lease_ttl, then lease ids. Each lease still current (not reclaimed) expires
# lease_ttl from now again; a reclaimed one stays gone. Returns how many were renewed.
RENEW: Final = (
    COMMON
    + r"""
local expiry = fmt(clock() + tonumber(ARGV[3]))
local renewed = 0
for i = 4, #ARGV do
    renewed = renewed + redis.call('ZADD', P .. 'leases', 'XX', 'CH', expiry, ARGV[i])
end
return renewed
"""
)

# ARGV: prefix, now, then the lease ids (in claim order) of pages their hosts' robots.txt
# disallows, found at claim time. Each lease gives its host's slot back and restores the host's
# next start (no slot, no delay spent; the last claim first, so a host claimed twice in one
# batch, both refused, gets its oldest start back) unless another claim of the host came since
# (a refusal late by more than a delay: that claim's delay stands) but stays, its expiry
# unchanged, slot-less
# like a down host's refusal, until ``done()``: a
# process that dies before it wrote the refusal's result leaves the page to the others (the
# reclaim hands it out again). Returns per lease 1, or 0 when it is not current.
REFUSE: Final = (
    COMMON
    + r"""
local out = {}
for i = #ARGV, 3, -1 do
    local id = ARGV[i]
    local host, score, owner, prev, member = read_lease(id)
    out[i - 2] = host and 1 or 0
    if host ~= nil and prev ~= '' then
        local hk = P .. 'h:' .. host
        redis.call('HINCRBY', hk, 'in_flight', -1)
        release_address(id, true)  -- its address's slot and next start too
        local before, at, last = string.match(prev, '^(%S+) (%S+) (%S+)$')
        if before == nil or redis.call('HGET', hk, 'last') == at then
            redis.call('HSET', hk, 'next', before or prev)  -- nobody claimed the host since
            if last == '-' then  -- and the last start: an adaptive delay counts from it
                redis.call('HDEL', hk, 'last')
            elseif last then
                redis.call('HSET', hk, 'last', last)
            end
        end
        redis.call('HSET', P .. 'lease', id, host .. '\n' .. score .. '\n' .. owner .. '\n\n' ..
                   member)  -- no next start: no slot held
        redis.call('HINCRBY', P .. 'stats', 'handed_out', -1)
        redis.call('HINCRBY', P .. 'stats', 'refused_robots', 1)
        refile(host)
    end
end
if #out > 0 then redis.call('PUBLISH', P .. 'wake', '') end  -- their hosts' slots are free
return out
"""
)

# A robots.txt answer (hosts.PolitenessRules.robots, shared). ARGV: prefix, now, host,
# status ('' none), body, temporary ('1'/''), Crawl-delay ('' none), max_delay, robots_ttl,
# robots_max_attempts, jitter, backoff_base, backoff_max, delay, concurrency (for a host not
# seen yet: preloading), the id of the ROBOTS lease this answers ('' none: preloading),
# adaptive delay ('1'/''): a policy's delay (``base`` and its Crawl-delay) is the host's
# ``floor``, and its ``delay`` (kept if higher when adaptive).
# Robots fields of the host hash: ``robots`` ('need', 'fetching',
# 'known'), ``robots_expires``, ``robots_failures``, ``robots_policy`` ('ok': a policy from an
# answer is cached; 'gaveup': unreachable too often, every page refused), ``robots_status``,
# ``robots_body``. Returns 1 when a policy came into force, -1 (nothing changed) when the
# ROBOTS lease it answers is no longer current (a late finisher), else 0.
SET_ROBOTS: Final = (
    COMMON
    + r"""
local now, host = clock(), ARGV[3]
local hk = P .. 'h:' .. host
if ARGV[16] ~= '' and redis.call('HEXISTS', P .. 'lease', ARGV[16]) == 0 then return -1 end
if redis.call('SADD', P .. 'hosts', host) == 1 then
    redis.call('HSET', hk, 'delay', ARGV[14], 'base', ARGV[14], 'conc', ARGV[15], 'in_flight', 0,
               'next', 0, 'backoff_until', 0)
end
local ttl = tonumber(ARGV[9])
if ARGV[6] ~= '1' then
    local base = tonumber(redis.call('HGET', hk, 'base') or '0')
    if ARGV[7] ~= '' then base = math.max(base, math.min(tonumber(ARGV[7]), tonumber(ARGV[8]))) end
    local delay = base
    if ARGV[17] == '1' then  -- adaptive: a higher delay (slow answers) is kept
        delay = math.max(tonumber(redis.call('HGET', hk, 'delay') or '0'), base)
    end
    redis.call('HSET', hk, 'robots', 'known', 'robots_expires', fmt(now + ttl),
               'robots_failures', 0, 'robots_policy', 'ok', 'robots_status', ARGV[4],
               'robots_body', ARGV[5], 'delay', fmt(delay), 'floor', fmt(base))
    local last = tonumber(redis.call('HGET', hk, 'last') or '')
    if last then
        local nxt = tonumber(redis.call('HGET', hk, 'next') or '0')
        redis.call('HSET', hk, 'next', fmt(math.max(nxt, last + delay)))
    end
    refile(host)
    return 1
end
local failures = redis.call('HINCRBY', hk, 'robots_failures', 1)
local wait = math.min(tonumber(ARGV[13]), tonumber(ARGV[12]) * 2 ^ math.min(failures - 1, 64))
wait = wait * tonumber(ARGV[11])
local forced = 0
if redis.call('HGET', hk, 'robots_policy') == 'ok' then  -- keep the cached policy, retry later
    redis.call('HSET', hk, 'robots', 'known', 'robots_expires', fmt(now + wait))
elseif failures >= tonumber(ARGV[10]) then
    redis.call('HSET', hk, 'robots', 'known', 'robots_expires', fmt(now + ttl),
               'robots_policy', 'gaveup', 'robots_status', ARGV[4], 'robots_body', '')
    forced = 1
else
    redis.call('HSET', hk, 'robots', 'need')
    local old = tonumber(redis.call('HGET', hk, 'backoff_until') or '0')
    redis.call('HSET', hk, 'backoff_until', fmt(math.max(old, now + wait)))
    redis.call('HINCRBY', P .. 'stats', 'backoffs', 1)
end
refile(host)
return forced
"""
)


class DoneAnswer(IntEnum):
    """What ``DONE`` says of each completion."""

    STALE = 0  # its lease is not current (expired and reclaimed, or done already): no change
    DONE = 1
    HOST_DOWN = 2  # done, and its host failure put the host down


class Requeue(Enum):
    """Whether ``DONE`` puts an entry back at the head of its priority."""

    NO = ""
    RETRY = "1"  # counted as a retry (``stats`` ``retries``)
    RELEASE = "2"  # given back unfetched (a process stopping): not a retry


class Completion(NamedTuple):
    """One entry for ``DONE``: its lease, whether it goes back (`tail`: its queue tail
    as re-queued, retries counted), the outcome (None: no response to account for) and the
    backoff's jitter factor."""

    lease: str
    requeue: Requeue
    tail: str
    outcome: Outcome | None
    jitter: float


def done_args(
    prefix: str, now: str, politeness: Politeness, entries: Sequence[Completion], owner: str = ""
) -> list[Arg]:
    """DONE's ARGV (its comment above): the host rules of `politeness`, the name of the
    process that calls (its own wake-up is not for it), then each entry's."""
    p = politeness
    failures = p.max_host_failures
    args: list[Arg] = [prefix, now, repr(float(p.backoff_base)), repr(float(p.backoff_max)),
                       repr(float(p.max_retry_after)), SUSPECT_STREAK, failures,
                       down_reason(failures), flag(p.adaptive),
                       repr(max(float(p.max_delay), float(p.delay))), owner]  # fmt: skip
    for lease, requeue, tail, outcome, jitter in entries:
        blame, wait = _blame(outcome)
        latency, status = _latency(outcome)
        args += (lease, requeue.value, tail, blame, outcome.attempt if outcome is not None else 0,
                 "" if wait is None else repr(wait), repr(jitter), latency, status)  # fmt: skip
    return args


def _blame(outcome: Outcome | None) -> tuple[str, float | None]:
    """The blame of an outcome as ``PolitenessRules.response`` decides it, and the Retry-After
    wait (None: the exponential backoff)."""
    if outcome is None:
        return "", None
    blame = blame_of(outcome)
    wait = None
    if outcome.retry_after is not None and outcome.status is not None:
        wait = parse_retry_after(outcome.retry_after)
    return ("" if blame is None else blame.value), wait


def _latency(outcome: Outcome | None) -> tuple[str, str]:
    """An outcome's latency and status ('' for none): what the adaptive delay follows."""
    if outcome is None or outcome.latency is None:
        return "", ""
    return repr(outcome.latency), "" if outcome.status is None else str(outcome.status)


def reclaim_args(prefix: str, now: str, limit: int) -> list[Arg]:
    """RECLAIM's ARGV; it answers how many leases it reclaimed."""
    return [prefix, now, limit]


def renew_args(prefix: str, now: str, lease_ttl: float, leases: Sequence[str]) -> list[Arg]:
    """RENEW's ARGV; it answers how many of `leases` it renewed."""
    return [prefix, now, lease_ttl, *leases]


class RefuseAnswer(IntEnum):
    """What ``REFUSE`` says of each lease."""

    STALE = 0  # not current: nothing given back
    REFUSED = 1  # its slot and its host's next start given back, the lease kept slot-less


def refuse_args(prefix: str, leases: Sequence[str]) -> list[Arg]:
    """REFUSE's ARGV: `leases` in claim order."""
    return [prefix, "", *leases]


class RobotsAnswer(IntEnum):
    """What ``SET_ROBOTS`` says."""

    LATE = -1  # the ROBOTS lease it answers is no longer current: nothing changed
    PENDING = 0  # an unreachable robots.txt, to be asked again after a backoff
    IN_FORCE = 1  # a policy came into force: the answer's, or a complete disallow (gave up)


class NewHost(NamedTuple):
    """The delay and concurrency a host not seen yet starts with (its `HostRule`'s)."""

    delay: float
    concurrency: int


def set_robots_args(
    prefix: str,
    now: str,
    politeness: Politeness,
    host: str,
    answer: tuple[RobotsPolicy, bytes],
    *,
    attempts: int,
    jitter: float,
    new_host: NewHost,
    lease: str,
) -> list[Arg]:
    """SET_ROBOTS's ARGV (its comment above): the host's robots.txt `answer` (policy, body),
    given up on after `attempts` failures, under the rules of `politeness`; `lease` is the
    ROBOTS lease it answers ('' when preloading)."""
    p = politeness
    policy, body = answer
    crawl_delay = "" if policy.crawl_delay is None else repr(policy.crawl_delay)
    return [prefix, now, host, "" if policy.status is None else policy.status, body,
            flag(policy.temporary), crawl_delay, repr(max(float(p.max_delay), float(p.delay))),
            repr(float(p.robots_ttl)), attempts, repr(jitter), repr(float(p.backoff_base)),
            repr(float(p.backoff_max)), repr(new_host.delay), new_host.concurrency, lease,
            flag(p.adaptive)]  # fmt: skip
