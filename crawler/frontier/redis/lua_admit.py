"""The Lua scripts of the Redis frontier's admission: the Sieve's test-and-set and the enqueue
(``ADMIT``) and the read-only look-up of a focused crawl (``PEEK``), each with the one function
that packs its arguments and an `IntEnum` of its answers. Keys and shared helpers:
``crawler.frontier.redis.lua_keys``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Final, NamedTuple, Protocol

from crawler.frontier.redis.lua_keys import COMMON, QUEUED, Arg, flag
from crawler.frontier.redis.lua_keys import fingerprint as queue_fingerprint
from crawler.sieve.bloom import hash_pair
from crawler.urls.host import split_host

__all__ = ["ADMIT", "PEEK", "AdmitBounds", "AdmitFlag", "AdmitReply", "AdmitRow", "PeekAnswer",
           "Stages", "admit_args", "admit_reply", "peek_args", "peek_reply"]  # fmt: skip

# The key of the Sieve's segment that holds a key's probes in stage `stage` (0-based): the
# segment is folded into the key's start (``segment * seg_m + start``; `RedisSieve.starts`), and
# segment 0 is the stage's own key (a one-segment stage: ``sieve:{stage}``, as before segments).
SEGMENT_KEY: Final = r"""
local function segment_key(stage, start, seg_m)
    local seg = math.floor(start / seg_m)
    if seg > 0 then return P .. 'sieve:' .. stage .. ':' .. seg end
    return P .. 'sieve:' .. stage
end
"""

# The seen test and the enqueue in one atomic call (a crash never leaves a URL seen but not
# queued). ARGV: prefix, '' (no clock), stages, max_queued, max_queued_per_host, keys, respect
# robots.txt ('1': a new host starts in robots state 'need'), max admitted (0: no cap; the
# crawl's ``max_pages``: a key is refused, and stays unseen, once the Sieve's shared count has
# reached it; ``=N``: at most N new keys in this call, the crawl-wide count being kept by the
# caller, as a sharded crawl does), exact tier ('1'/''), then (segment bits, k) per stage, then
# per key: host, tail (`members.member_tail`), score, delay, concurrency, then (start, step) per
# stage (the segment folded into the start: `SEGMENT_KEY`), then its fingerprint's
# bucket and the fingerprint (the Sieve's h1, signed 64-bit, decimal), and its scope host (the
# key's host, port left out: `crawler.admission.scope.split_host`; after a '!' for a seed, which
# counts but is not refused, as in memory); last, the URLs a host may have
# admitted (``[scope] max_pages_per_host``, 0: no cap; counted per scope host in
# ``host_admitted``, for every process: a key of a host at the cap is refused before the Sieve's
# test, as the in-memory scope does, and stays unseen). The exact tier confirms
# a key the Bloom filter takes as seen against ``exact:{bucket}`` (sets of fingerprints: buckets
# by their top 32 bits, about 400 fingerprints a bucket at the crawl's capacity
# (`crawler.sieve.redis.exact_buckets`), kept as Redis intsets of 8 bytes per key up to 512 keys
# a bucket); a key not there is a false
# positive, rescued (counted in ``stats`` ``rescued``) and admitted. Packed by `admit_args`.
# Returns {SIEVE_GREW, stages} when the Sieve grew meanwhile (call again), else {set bits of the
# newest stage, count, then an `AdmitFlag` per key} (read by `admit_reply`).
ADMIT: Final = (
    COMMON
    + SEGMENT_KEY
    + r"""
local nst, maxq, maxh, n = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]),
                           tonumber(ARGV[6])
local cur = tonumber(redis.call('GET', P .. 'sieve:stages') or '1')
if cur ~= nst then return {-1, cur} end
local ms, ks = {}, {}
for s = 1, nst do
    ms[s], ks[s] = tonumber(ARGV[8 + 2 * s]), tonumber(ARGV[9 + 2 * s])
end
local exact = ARGV[9] == '1'
local rescued = 0
local robots_state = (ARGV[7] == '1') and 'need' or ''
local cap, admitted, capped = ARGV[8], 0, false
if string.sub(cap, 1, 1) == '=' then  -- at most this many new keys in this call
    cap, capped = tonumber(string.sub(cap, 2)), true
else
    cap = tonumber(cap)
    capped = cap > 0
    if capped then admitted = tonumber(redis.call('GET', P .. 'sieve:count') or '0') end
end
local over = 0
local base = 10 + 2 * nst
local width = 8 + 2 * nst
local host_cap = tonumber(ARGV[#ARGV])
local host_admitted = P .. 'host_admitted'
local queued = tonumber(redis.call('HGET', P .. 'stats', 'queued') or '0')
local flags = {}
local new, flips = 0, 0
local scored = false
local dropped_full, dropped_host = 0, 0
for i = 0, n - 1 do
    local at = base + i * width
    local host = ARGV[at]
    local flag
    local shost = ARGV[at + 7 + 2 * nst]
    local checked = string.sub(shost, 1, 1) ~= '!'  -- '!': a seed, counted but not refused
    if not checked then shost = string.sub(shost, 2) end
    if checked and host_cap > 0
       and tonumber(redis.call('HGET', host_admitted, shost) or '0') >= host_cap then
        flag = 5
    elseif capped and admitted + new >= cap then
        flag = 4
        over = over + 1
    elseif queued >= maxq then
        flag = 2
        dropped_full = dropped_full + 1
    elseif redis.call('HLEN', P .. 'qk:' .. host) >= maxh then
        flag = 3
        dropped_host = dropped_host + 1
    else
        local seen = false
        for s = 1, nst do
            local a, b = tonumber(ARGV[at + 3 + 2 * s]), tonumber(ARGV[at + 4 + 2 * s])
            local m, args = ms[s], {}
            local sk = segment_key(s - 1, a, m)
            a = a % m
            local op = (s < nst) and 'GET' or 'SET'
            for j = 0, ks[s] - 1 do
                args[#args + 1] = op
                args[#args + 1] = 'u1'
                args[#args + 1] = (a + j * b) % m
                if op == 'SET' then args[#args + 1] = 1 end
            end
            if s < nst then
                local bits = redis.call('BITFIELD_RO', sk, unpack(args))
                local all = true
                for _, v in ipairs(bits) do if v == 0 then all = false break end end
                if all then seen = true break end
            else
                local old = redis.call('BITFIELD', sk, unpack(args))
                local f = 0
                for _, v in ipairs(old) do if v == 0 then f = f + 1 end end
                flips = flips + f
                seen = (f == 0)
            end
        end
        local fp_set = exact and (P .. 'exact:' .. ARGV[at + 5 + 2 * nst])
        local fp = exact and ARGV[at + 6 + 2 * nst]
        if seen and exact and redis.call('SISMEMBER', fp_set, fp) == 0 then
            seen = false  -- a false positive of the Bloom filter, rescued
            rescued = rescued + 1
        end
        if seen then
            flag = 0
        else
            flag = 1
            if exact then redis.call('SADD', fp_set, fp) end
            if tonumber(ARGV[at + 2]) ~= 0 then scored = true end
            enqueue(host, ARGV[at + 2], ARGV[at + 1])
            if redis.call('SADD', P .. 'hosts', host) == 1 then
                redis.call('HSET', P .. 'h:' .. host, 'delay', ARGV[at + 3], 'base', ARGV[at + 3],
                           'conc', ARGV[at + 4], 'in_flight', 0, 'next', 0, 'backoff_until', 0,
                           'robots', robots_state)
            end
            refile(host)
            if host_cap > 0 then redis.call('HINCRBY', host_admitted, shost, 1) end
            queued = queued + 1
            new = new + 1
        end
    end
    flags[#flags + 1] = flag
end
local st = P .. 'stats'
redis.call('HSET', st, 'queued', queued)
if scored then redis.call('HSET', st, 'scored', 1) end
if dropped_full > 0 then redis.call('HINCRBY', st, 'dropped_full', dropped_full) end
if dropped_host > 0 then redis.call('HINCRBY', st, 'dropped_host_full', dropped_host) end
if over > 0 then redis.call('HINCRBY', st, 'over_limit', over) end
if rescued > 0 then redis.call('HINCRBY', st, 'rescued', rescued) end
local bits = redis.call('INCRBY', P .. 'sieve:bits:' .. (nst - 1), flips)
local count = redis.call('INCRBY', P .. 'sieve:count', new)
local out = {bits, count}
for _, f in ipairs(flags) do out[#out + 1] = f end
return out
"""
)

# What the shared crawl knows of some keys, changing nothing (a focused crawl scores only the
# links to new and queued URLs, as the in-memory crawl does). ARGV: prefix, '' (no clock),
# stages, exact tier ('1'/''), then (segment bits, k) per stage, then per key: host, key, (start,
# step) per stage, its fingerprint's bucket and the fingerprint (as for ADMIT), its scope host;
# last, the per-host cap (``max_pages_per_host``, 0: none). Packed by `peek_args`. Returns
# {SIEVE_GREW, stages} when the Sieve grew meanwhile (call again), else {0, then per key:
# HOST_LIMIT when its scope host is at the cap (the in-memory scope refuses such a link first),
# else the score (-priority) it is queued at (a string), else SEEN (fetched, in flight, refused)
# or NEW} (the `PeekAnswer`s; read by `peek_reply`).
PEEK: Final = (
    "\nlocal P = ARGV[1]"
    + QUEUED
    + SEGMENT_KEY
    + r"""
local nst = tonumber(ARGV[3])
local cur = tonumber(redis.call('GET', P .. 'sieve:stages') or '1')
if cur ~= nst then return {-1, cur} end
local exact = ARGV[4] == '1'
local ms, ks = {}, {}
for s = 1, nst do
    ms[s], ks[s] = tonumber(ARGV[3 + 2 * s]), tonumber(ARGV[4 + 2 * s])
end
local base = 5 + 2 * nst
local width = 5 + 2 * nst
local host_cap = tonumber(ARGV[#ARGV])
local out = {0}
for at = base, #ARGV - 1, width do
    local host = ARGV[at]
    local member = queued_member(host, ARGV[at + 1])
    local score = member and redis.call('ZSCORE', P .. 'q:' .. host, member)
    if host_cap > 0 and tonumber(redis.call('HGET', P .. 'host_admitted', ARGV[at + 4 + 2 * nst])
                                 or '0') >= host_cap then
        out[#out + 1] = 2
    elseif score then
        out[#out + 1] = score
    else
        local seen = false
        for s = 1, nst do
            local a, b = tonumber(ARGV[at + 2 * s]), tonumber(ARGV[at + 1 + 2 * s])
            local args = {}
            local sk = segment_key(s - 1, a, ms[s])
            a = a % ms[s]
            for j = 0, ks[s] - 1 do
                args[#args + 1] = 'GET'
                args[#args + 1] = 'u1'
                args[#args + 1] = (a + j * b) % ms[s]
            end
            local bits = redis.call('BITFIELD_RO', sk, unpack(args))
            local all = true
            for _, v in ipairs(bits) do if v == 0 then all = false break end end
            if all then seen = true break end
        end
        if seen and exact then
            seen = redis.call('SISMEMBER', P .. 'exact:' .. ARGV[at + 2 + 2 * nst],
                              ARGV[at + 3 + 2 * nst]) == 1
        end
        out[#out + 1] = seen and 1 or 0
    end
end
return out
"""
)


class AdmitFlag(IntEnum):
    """What ``ADMIT`` says of each key: queued, or why not (a refused key stays unseen)."""

    SEEN = 0  # the Sieve has it: fetched, queued, in flight or refused before
    ADMITTED = 1  # new, and queued
    FULL = 2  # ``max_queued`` entries are queued (or this process's frontier is closed)
    HOST_FULL = 3  # ``max_queued_per_host`` entries of its host are queued
    OVER_LIMIT = 4  # the Sieve counts ``max_admitted`` keys already
    HOST_LIMIT = 5  # its scope host had ``[scope] max_pages_per_host`` URLs admitted


class PeekAnswer(IntEnum):
    """What ``PEEK`` says of a key that is not queued (a queued one answers its score)."""

    NEW = 0
    SEEN = 1  # fetched, in flight or refused
    HOST_LIMIT = 2  # its scope host is at ``max_pages_per_host``: refused before any score


SIEVE_GREW: Final = -1  # ADMIT's and PEEK's first reply when another process opened a stage


class Stages(Protocol):
    """The Sieve's stages as the scripts test and set them (`crawler.sieve.redis.RedisSieve`)."""

    exact_buckets: int  # the exact tier's sets (of fingerprints) in this group

    def layout(self) -> list[tuple[int, int]]: ...

    def starts(self, h1: int, h2: int) -> list[int]: ...


@dataclass(frozen=True, slots=True)
class AdmitBounds:
    """What may be admitted: the frontier's bounds (`QueueLimits`), whether a new host starts by
    asking its robots.txt, the exact tier, the Sieve's count at which keys are refused
    (``max_admitted``, 0: none) and the URLs a scope host may have admitted (0: no cap)."""

    max_queued: int
    max_queued_per_host: int
    respect_robots: bool
    exact: bool
    max_admitted: int = 0
    max_per_host: int = 0
    per_call: bool = False  # max_admitted is this call's new keys, not the Sieve's count


class AdmitRow(NamedTuple):
    """One entry to admit: its host (`host_key`), queue tail, priority, and the delay
    and concurrency its host starts with if new; `key` is what the Sieve tests."""

    host: str
    tail: str
    priority: float
    delay: float
    concurrency: int
    key: str


class AdmitReply(NamedTuple):
    newest_bits: int  # set bits of the Sieve's newest stage, every process's
    sieve_count: int  # the Sieve's shared count of keys
    flags: list[AdmitFlag]


def _sieve_head(stages: Sequence[tuple[int, int]]) -> list[Arg]:
    return [x for m, k in stages for x in (m, k)]


def _fingerprint(stages: Stages, key: str) -> tuple[list[int], list[Arg]]:
    """A key's (start, step) per stage, and its exact-tier bucket and fingerprint."""
    h1, h2 = hash_pair(key)
    return stages.starts(h1, h2), [
        format(((h1 >> 32) & 0xFFFFFFFF) % stages.exact_buckets, "x"),
        h1,
    ]


def admit_args(
    prefix: str, stages: Stages, bounds: AdmitBounds, rows: Sequence[AdmitRow], *, seeds: bool
) -> list[Arg]:
    """ADMIT's ARGV (its comment above) for `rows` against the stages known now. `seeds` count
    toward their hosts' caps but are not refused by them."""
    layout = stages.layout()
    args: list[Arg] = [prefix, "", len(layout), bounds.max_queued, bounds.max_queued_per_host,
                       len(rows), flag(bounds.respect_robots), _cap(bounds),
                       flag(bounds.exact), *_sieve_head(layout)]  # fmt: skip
    mark = "!" if seeds else ""
    for row in rows:
        starts, fingerprint = _fingerprint(stages, row.key)
        args += (row.host, row.tail, repr(-row.priority), repr(row.delay), row.concurrency)
        args += (*starts, *fingerprint, mark + split_host(row.key))
    args.append(bounds.max_per_host)
    return args


def _cap(bounds: AdmitBounds) -> Arg:
    return f"={bounds.max_admitted}" if bounds.per_call else bounds.max_admitted


def admit_reply(reply: list[Any]) -> AdmitReply | None:
    """ADMIT's answer; None when the Sieve grew meanwhile (refresh it and call again)."""
    if int(reply[0]) == SIEVE_GREW:
        return None
    return AdmitReply(int(reply[0]), int(reply[1]), [AdmitFlag(int(x)) for x in reply[2:]])


def peek_args(
    prefix: str, stages: Stages, items: Sequence[tuple[str, str]], *, exact: bool, max_per_host: int
) -> list[Arg]:
    """PEEK's ARGV for (host, key) `items` against the stages known now."""
    layout = stages.layout()
    args: list[Arg] = [prefix, "", len(layout), flag(exact), *_sieve_head(layout)]
    for host, key in items:
        starts, fingerprint = _fingerprint(stages, key)
        args += (host, queue_fingerprint(key), *starts, *fingerprint, split_host(key))
    args.append(max_per_host)
    return args


def peek_reply(reply: list[Any]) -> list[PeekAnswer | float] | None:
    """PEEK's answer per key: a `PeekAnswer`, or the priority it is queued at; None when the
    Sieve grew meanwhile (refresh it and call again)."""
    if int(reply[0]) == SIEVE_GREW:
        return None
    return [PeekAnswer(x) if isinstance(x, int) else -float(x) for x in reply[1:]]
