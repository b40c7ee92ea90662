"""The Redis frontier's keys, and the Lua every one of its scripts starts with.

The scripts (``crawler.frontier.redis.lua_admit``: admission and its read-only look-up;
``crawler.frontier.redis.lua_queue``: claim, re-prioritizing; ``crawler.frontier.redis.lua_leases``:
completions, reclaim, renewal, robots.txt refusals and answers) are each atomic in Redis. Beside
each script: the one function that packs its arguments (``*_args``: the callers never build an
ARGV themselves) and an `IntEnum` of its answers (a reply that is a count or a table has a
``*_reply`` function that reads it instead).

Every script takes its group's key prefix as ``ARGV[1]`` and builds its keys from it, and is
called with one key of that group in KEYS (never read: a Redis Cluster client routes the call by
it). On a cluster each group's prefix holds a hash tag of its own
(``crawler.frontier.redis.shards``), so all the keys a script touches share one slot. Times
are seconds as floats: ``ARGV[2]`` is "now" from the caller's injected clock, or empty for
Redis ``TIME`` (one clock for every process). Times written back are formatted ``%.6f`` (Lua's
default number format keeps only 14 digits).

Keys: ``q:{host}`` queue (sorted set: score ``-priority``, members ``1{id}``, a chunk of
entries of one priority queued in a row, or ``0{id}{tail}``, a retried or reclaimed entry, so
equal scores pop retries first, then FIFO), ``ql:{host}`` (chunk id -> its entries),
``qk:{host}`` (an entry's fingerprint -> its chunk or member: re-prioritizing, the priority a key
is queued at; the queues' layout: `QUEUED`, an entry's: ``crawler.frontier.redis.members``),
``h:{host}`` (host hash: ``delay``, ``base`` (the configured delay), ``floor`` (``base``
raised by robots.txt's Crawl-delay: the adaptive delay's floor), ``conc``, ``in_flight``,
``next``, ``last`` (the last claim's time), ``backoff_until``, ``failures``, ``suspects``,
``down``: why it is down, when it is; by address: ``addr`` ('' none), ``addr_until``,
``resolve_until`` while a process resolves it), ``hosts`` (set of hosts seen),
``host_admitted`` (scope host -> URLs admitted: ``[scope] max_pages_per_host`` over every process),
``ready`` (hosts with work and a free slot, scored by the time their next request may start;
hosts that are down with queued pages at -inf), ``leases`` (lease id -> expiry),
``lease`` (lease id -> ``host\\nscore\\nowner\\nnext claimed last\\nrecord``, ``next`` the
host's next start before the claim, ``claimed`` the claim's time and ``last`` the host's last
claim before it (``-``: none), empty for a refusal's lease: it holds no slot), ``lid`` and ``seq``
(counters: ``seq`` numbers chunks and claims), ``stats`` (hash of counters; ``queued`` is the
number of queued entries, ``parked`` the hosts parked on their address), ``addrs`` (addresses
known), ``a:{address}``, ``ap:{address}`` and ``la`` (an address's budget, its parked hosts, the
leases counted against an address: below, before ``refile``),
``sieve:*`` (the ``crawler.sieve.redis.RedisSieve`` stages, a stage over 64 MiB in segments, and
counters).
"""

from __future__ import annotations

import base64
from typing import Final, TypeAlias

from crawler.sieve.bloom import hash_pair

__all__ = ["COMMON", "QUEUED", "Arg", "fingerprint", "flag"]

Arg: TypeAlias = str | bytes | int | float  # one ARGV value (redis-py encodes floats with repr)


def flag(on: bool) -> str:
    """A yes/no argument as every script reads it: '1' or ''."""
    return "1" if on else ""


def fingerprint(key: str) -> str:
    """A key's field in ``qk:{host}``, and its element's start: the Sieve's h1 as 11 base64url
    characters."""
    h1 = hash_pair(key)[0] & 0xFFFF_FFFF_FFFF_FFFF
    return base64.urlsafe_b64encode(h1.to_bytes(8, "big"))[:11].decode()


# The queues (``crawler.frontier.redis.members``: contexts, elements, tails, records):
# ``q:{host}`` (score ``-priority``) holds chunks, ``1{id}``, and inline entries. A chunk is a
# field of ``ql:{host}`` (id -> ``{context}\n{element}\n{element}...``, up to CHUNK_BYTES):
# entries of one priority and one context in the order queued. An inline entry is the record of a
# retried or reclaimed entry, ``0{id}{tail}``. Ids are 6 base-62 digits of ``seq`` (they sort as
# the numbers do), so equal priorities pop retries first, then chunk by chunk in the order
# queued. ``qk:{host}`` maps each queued entry's fingerprint (its element's first 11 characters)
# to its chunk's id or to its inline member. Shared by PEEK, which has no COMMON. A queued URL
# of ~66 characters costs Redis 7.0 ~119 bytes (~51 in its chunk, ~56 in ``qk:``; ~320 in its
# keys when its priority is its own, a chunk each): ``bench.bench_queue_memory``.
QUEUED: Final = r"""
local CHUNK_BYTES = 4096
-- the member of ``q:{host}`` holding the queued entry of fingerprint `fp`; nil when none is
local function queued_member(host, fp)
    local v = redis.call('HGET', P .. 'qk:' .. host, fp)
    if not v then return nil end
    if #v == 6 then return '1' .. v end
    return v
end
"""


# Shared helpers, prepended to every script: the clock, and what keeps `ready`, the queues
# and the leases consistent.
COMMON: Final = (
    "\nlocal P = ARGV[1]"
    + QUEUED
    + r"""
local function fmt(x) return string.format('%.6f', x) end
local function clock()
    local now = tonumber(ARGV[2])
    if now then return now end
    local t = redis.call('TIME')
    return tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local ID_DIGITS = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
-- a new sequence number (``seq``) as an id: 6 base-62 digits, fixed width
local function next_id()
    local n = redis.call('INCR', P .. 'seq')
    local s = ''
    for _ = 1, 6 do
        local r = n % 62
        s = string.sub(ID_DIGITS, r + 1, r + 1) .. s
        n = (n - r) / 62
    end
    return s
end
-- the fingerprint of a tail (``{context}\n{element}``, `from` 1) or a record (`from` 8)
local function fp_of(s, from)
    local nl = string.find(s, '\n', from, true)
    return string.sub(s, nl + 1, nl + 11)
end
-- the element of a chunk at `at` (just after its newline), and the position of the newline
-- after it (nil: the chunk's last); a newline within an element is followed by a space
local function element_at(chunk, at)
    local after = string.find(chunk, '\n[^ ]', at)
    return string.sub(chunk, at, (after or #chunk + 1) - 1), after
end
-- queue a tail at `score` after the entries of that priority: in the latest chunk of that
-- priority when it has room and the same context, else in a new chunk
local function enqueue(host, score, tail)
    local nl = string.find(tail, '\n', 1, true)
    local ql = P .. 'ql:' .. host
    local last = redis.call('ZRANGE', P .. 'q:' .. host, score, score, 'BYSCORE', 'REV', 'LIMIT',
                            0, 1)[1]
    local id = last and #last == 7 and string.sub(last, 2)
    local chunk = id and redis.call('HGET', ql, id)
    if chunk and #chunk + #tail <= CHUNK_BYTES
       and string.sub(chunk, 1, nl) == string.sub(tail, 1, nl) then  -- room, same context
        redis.call('HSET', ql, id, chunk .. string.sub(tail, nl))
    else
        id = next_id()
        redis.call('HSET', ql, id, tail)
        redis.call('ZADD', P .. 'q:' .. host, score, '1' .. id)
    end
    redis.call('HSET', P .. 'qk:' .. host, string.sub(tail, nl + 1, nl + 11), id)
end
-- take the first entry of `member`, a head of the host's queue: its record (a chunk's entry gets
-- a new id: retried, it comes back in the order it went out)
local function take_head(host, member)
    local qk = P .. 'qk:' .. host
    if #member > 7 then
        redis.call('ZREM', P .. 'q:' .. host, member)
        redis.call('HDEL', qk, fp_of(member, 8))
        return member
    end
    local ql, id = P .. 'ql:' .. host, string.sub(member, 2)
    local chunk = redis.call('HGET', ql, id)
    local nl = string.find(chunk, '\n', 1, true)
    local element, after = element_at(chunk, nl + 1)
    if after then
        redis.call('HSET', ql, id, string.sub(chunk, 1, nl - 1) .. string.sub(chunk, after))
    else
        redis.call('HDEL', ql, id)
        redis.call('ZREM', P .. 'q:' .. host, member)
    end
    redis.call('HDEL', qk, string.sub(element, 1, 11))
    return '1' .. next_id() .. string.sub(chunk, 1, nl) .. element
end
-- take the entry of fingerprint `fp` out of `member` (its queued_member): its tail, to be
-- queued again (its field of ``qk:{host}`` is left to `enqueue`)
local function take_out(host, member, fp)
    if #member > 7 then
        redis.call('ZREM', P .. 'q:' .. host, member)
        return string.sub(member, 8)
    end
    local ql, id = P .. 'ql:' .. host, string.sub(member, 2)
    local chunk = redis.call('HGET', ql, id)
    local at = string.find(chunk, '\n' .. fp, 1, true)
    local element, after = element_at(chunk, at + 1)
    local rest = string.sub(chunk, 1, at - 1) .. (after and string.sub(chunk, after) or '')
    if string.find(rest, '\n', 1, true) then
        redis.call('HSET', ql, id, rest)
    else  -- its last entry: the chunk goes
        redis.call('HDEL', ql, id)
        redis.call('ZREM', P .. 'q:' .. host, member)
    end
    return string.sub(chunk, 1, string.find(chunk, '\n', 1, true)) .. element
end
-- By address (``crawler.frontier.redis.frontier``): ``a:{address}`` (``next``, ``last``,
-- ``in_flight``, ``delay``, ``conc``) is an address's budget, ``ap:{address}`` the hosts parked on
-- it (score: when each came up), ``la`` (lease id -> 'address next-before claimed-at') the leases
-- counted against one. Only the first parked host of an address is in `ready`, at the later
-- of its own time and the address's, while the address has a free slot.
local function address_room(x)
    local a = redis.call('HMGET', P .. 'a:' .. x, 'next', 'in_flight', 'conc')
    local conc = tonumber(a[3] or '0')
    return conc == 0 or tonumber(a[2] or '0') < conc, tonumber(a[1] or '0')
end
local function file_address(x)
    local head = redis.call('ZRANGE', P .. 'ap:' .. x, 0, 0)[1]
    if not head then return end
    local room, at = address_room(x)
    if room then
        local st = redis.call('HMGET', P .. 'h:' .. head, 'next', 'backoff_until', 'resolve_until')
        at = math.max(at, tonumber(st[1] or '0'), tonumber(st[2] or '0'), tonumber(st[3] or '0'))
        redis.call('ZADD', P .. 'ready', fmt(at), head)
    else
        redis.call('ZREM', P .. 'ready', head)
    end
end
-- take a host off its address's parked hosts; whether it was parked there
local function unpark(x, host)
    if redis.call('ZREM', P .. 'ap:' .. x, host) == 0 then return false end
    redis.call('HINCRBY', P .. 'stats', 'parked', -1)
    return true
end
-- file the host in `ready` iff it has work and a free slot, at max(next start, backoff end,
-- resolution under way); a host that is down (``down`` set) with work at -inf: its pages are
-- refused at once; a host parked on its address stays parked (`ready` holds only the first)
local function refile(host)
    local st = redis.call('HMGET', P .. 'h:' .. host, 'in_flight', 'conc', 'next', 'backoff_until',
                          'robots', 'down', 'addr', 'resolve_until')
    local busy, conc = tonumber(st[1] or '0'), tonumber(st[2] or '1')
    local fileable = (st[6] or (busy < conc and st[5] ~= 'fetching'))
                     and redis.call('ZCARD', P .. 'q:' .. host) > 0
    local x = st[7]
    if x and x ~= '' and redis.call('ZSCORE', P .. 'ap:' .. x, host) then
        if fileable and not st[6] then
            file_address(x)
            return
        end
        unpark(x, host)
        redis.call('ZREM', P .. 'ready', host)
        file_address(x)
    end
    if fileable then
        local at = st[6] and '-inf' or fmt(math.max(tonumber(st[3] or '0'),
                                                     tonumber(st[4] or '0'),
                                                     tonumber(st[8] or '0')))
        redis.call('ZADD', P .. 'ready', at, host)
    else
        redis.call('ZREM', P .. 'ready', host)
    end
end
-- give back the address slot a lease holds (none: nothing); with `restore`, the address's next
-- start as it was before the claim, unless another claim of the address came since
local function release_address(id, restore)
    local held = redis.call('HGET', P .. 'la', id)
    if not held then return end
    redis.call('HDEL', P .. 'la', id)
    local x, before, at = string.match(held, '^(%S+) (%S+) (%S+)$')
    local ak = P .. 'a:' .. x
    redis.call('HINCRBY', ak, 'in_flight', -1)
    if restore and redis.call('HGET', ak, 'last') == at then
        redis.call('HSET', ak, 'next', before)
    end
    file_address(x)
end
-- put a lease's record back at the head of its priority: inline, class 0, its sequence
local function requeue(host, score, record)
    local m = '0' .. string.sub(record, 2)
    redis.call('ZADD', P .. 'q:' .. host, score, m)
    redis.call('HSET', P .. 'qk:' .. host, fp_of(m, 8), m)
    redis.call('HINCRBY', P .. 'stats', 'queued', 1)
    return m
end
-- read a lease: host, score, owner, the host's next start before the claim and the claim's
-- time and the host's last start before it ('{next} {time} {last}', last '-' for none; '' for a
-- lease that holds no slot: a refusal's), the entry's record; nil when the lease is not
-- current
local function read_lease(id)
    local data = redis.call('HGET', P .. 'lease', id)
    if not data then return nil end
    local a = string.find(data, '\n', 1, true)
    local b = string.find(data, '\n', a + 1, true)
    local c = string.find(data, '\n', b + 1, true)
    local d = string.find(data, '\n', c + 1, true)
    return string.sub(data, 1, a - 1), string.sub(data, a + 1, b - 1),
           string.sub(data, b + 1, c - 1), string.sub(data, c + 1, d - 1), string.sub(data, d + 1)
end
-- take a lease: returns host, score, record, the host's next start before the claim (nil when
-- the lease is not current; '' for a refusal's lease, which holds no slot); a ROBOTS lease
-- (class 2) still fetching puts its host back to 'need'
local function take_lease(id)
    local host, score, _, prev, member = read_lease(id)
    if host == nil then return nil end
    redis.call('HDEL', P .. 'lease', id)
    redis.call('ZREM', P .. 'leases', id)
    local hk = P .. 'h:' .. host
    if prev ~= '' then redis.call('HINCRBY', hk, 'in_flight', -1) end
    release_address(id, false)
    if string.sub(member, 1, 1) == '2' and redis.call('HGET', hk, 'robots') == 'fetching' then
        redis.call('HSET', hk, 'robots', 'need')
    end
    return host, score, member, prev
end
"""
)
