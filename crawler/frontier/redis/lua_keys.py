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

Keys: ``q:{host}`` queue (sorted set: score ``-priority``, member ``{class}{seq:015d}{key}\\n
{payload}``, class ``0`` for retried/reclaimed entries, ``1`` for new ones, so equal scores pop
retries first, then FIFO by sequence), ``qk:{host}`` (key -> member, for re-prioritizing),
``h:{host}`` (host hash: ``delay``, ``base`` (the configured delay), ``floor`` (``base``
raised by robots.txt's Crawl-delay: the adaptive delay's floor), ``conc``, ``in_flight``,
``next``, ``last`` (the last claim's time), ``backoff_until``, ``failures``, ``suspects``,
``down``: why it is down, when it is; by address: ``addr`` ('' none), ``addr_until``,
``resolve_until`` while a process resolves it), ``hosts`` (set of hosts seen),
``host_admitted`` (scope host -> URLs admitted: ``[scope] max_pages_per_host`` over every process),
``ready`` (hosts with work and a free slot, scored by the time their next request may start;
hosts that are down with queued pages at -inf), ``leases`` (lease id -> expiry),
``lease`` (lease id -> ``host\\nscore\\nowner\\nnext claimed last\\nmember``, ``next`` the
host's next start before the claim, ``claimed`` the claim's time and ``last`` the host's last
claim before it (``-``: none), empty for a refusal's lease: it holds no slot), ``lid`` and ``seq``
(counters), ``stats`` (hash of counters; ``queued`` is the number of queued entries, ``parked``
the hosts parked on their address), ``addrs`` (addresses known), ``a:{address}``,
``ap:{address}`` and ``la`` (an address's budget, its parked hosts, the leases counted against
an address: below, before ``refile``),
``sieve:*`` (the ``crawler.sieve.redis.RedisSieve`` stages, a stage over 64 MiB in segments, and
counters).
"""

from __future__ import annotations

from typing import Final, TypeAlias

__all__ = ["COMMON", "Arg", "flag"]

Arg: TypeAlias = str | bytes | int | float  # one ARGV value (redis-py encodes floats with repr)


def flag(on: bool) -> str:
    """A yes/no argument as every script reads it: '1' or ''."""
    return "1" if on else ""


# Shared helpers, prepended to every script: the clock, and what keeps `ready`, the queues
# and the leases consistent.
COMMON: Final = r"""
local P = ARGV[1]
local function fmt(x) return string.format('%.6f', x) end
local function clock()
    local now = tonumber(ARGV[2])
    if now then return now end
    local t = redis.call('TIME')
    return tonumber(t[1]) + tonumber(t[2]) / 1000000
end
-- the key of a queue member: after the class and sequence (16 chars), up to the newline
local function key_of(member)
    local nl = string.find(member, '\n', 17, true)
    return string.sub(member, 17, nl - 1)
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
-- put a lease's member back at the head of its priority (class 0, its old sequence)
local function requeue(host, score, member)
    local m = '0' .. string.sub(member, 2)
    redis.call('ZADD', P .. 'q:' .. host, score, m)
    redis.call('HSET', P .. 'qk:' .. host, key_of(m), m)
    redis.call('HINCRBY', P .. 'stats', 'queued', 1)
    return m
end
-- read a lease: host, score, owner, the host's next start before the claim and the claim's
-- time and the host's last start before it ('{next} {time} {last}', last '-' for none; '' for a
-- lease that holds no slot: a refusal's), member; nil when the
-- lease is not current
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
-- take a lease: returns host, score, member, the host's next start before the claim (nil when
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
