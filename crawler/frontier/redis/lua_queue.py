"""The Lua scripts of the Redis frontier's queues: the claim of hosts' best entries (``CLAIM``)
and re-prioritizing (``REPRIORITIZE``), each with the one function that packs its arguments and
what reads its answer. Admission: ``crawler.frontier.redis.lua_admit``; keys and shared helpers:
``crawler.frontier.redis.lua_keys``."""

from __future__ import annotations

from enum import IntEnum
from typing import Any, Final, NamedTuple

from crawler.frontier.redis.lua_keys import COMMON, Arg, flag
from crawler.frontier.redis.members import fingerprint, text

__all__ = ["CLAIM", "DOWN", "REPRIORITIZE", "ClaimReply", "Claimed", "Reprioritized",
           "claim_args", "claim_reply", "reprioritize_args"]  # fmt: skip

# ARGV: prefix, now, count, lease_ttl, owner, candidates (ready hosts compared by their best
# priority once any entry has one other than 0; else the earliest ready host goes), respect
# robots.txt ('1'/''): a host whose policy is unknown or expired hands out its ROBOTS entry
# (record class 2) first, and nothing else until ``set_robots``; turn (seconds, 0: off): taking
# turns on a host, below; resolve (seconds a host asked to be resolved waits for its answer; 0:
# hosts are not resolved here). Returns {seconds until a host is ready or '', queued, in flight,
# n, the n hosts to resolve (``ADDRESS`` answers them), then per claim: id, host, score,
# record (``crawler.frontier.redis.members``), the host's robots.txt version (its
# ``robots_expires``, '' when not respected), the address it was counted against ('' none)}.
# A host with an address (``addr``) is handed out
# only when that address's budget allows it too (``a:{address}``: ``ip_delay`` since its last
# start, a free slot of ``ip_concurrency``), else parked on the address (keys: ``lua_keys``).
# The queued pages of a host that is down (filed in ``ready`` at -inf, so first) are handed
# out before anything else, as refusals: leased (so a process that dies before it wrote their
# results leaves them to the others) but holding no slot nor address slot and spending no
# delay, ``down:{reason}`` in place of the version.
CLAIM: Final = (
    COMMON
    + r"""
local now = clock()
local want, ttl, owner, scan = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6])
-- with every priority 0 (nothing scored yet) the earliest ready host is the best: no scan
if not redis.call('HGET', P .. 'stats', 'scored') then scan = 1 end
local respect = ARGV[7] == '1'
-- Turns: a process whose claim found nothing at all (and left nothing to others) is "hungry"
-- for `turn` seconds. While another process is hungry, a host of one slot that this process
-- was the last to claim is left to the others for `turn` seconds after it becomes ready (then
-- anyone may take it: a host never stalls), so processes take turns on a host instead of its
-- last claimer always winning the race (a host of several slots is shared by its slots).
local turn = tonumber(ARGV[8] or '0')
local others = 0
if turn > 0 then
    redis.call('ZREMRANGEBYSCORE', P .. 'hungry', '-inf', fmt(now - turn))
    others = redis.call('ZCARD', P .. 'hungry')
    if redis.call('ZSCORE', P .. 'hungry', owner) then others = others - 1 end
    if others > 0 and scan < 16 then scan = 16 end
end
-- By address: a host whose address is unknown or expired is asked to be resolved (filed again
-- `resolve` seconds later: another process asks if no answer came); one whose address may not
-- be hit now (too soon, every slot taken) or has hosts parked before it is parked on it.
local resolve = tonumber(ARGV[9] or '0')
local asked = {}
local addr_of = {}
local function may_go(h, came)
    local hs = redis.call('HMGET', P .. 'h:' .. h, 'addr', 'addr_until')
    local x = hs[1] or ''
    if resolve > 0 and tonumber(hs[2] or '0') <= now then
        if x ~= '' and unpark(x, h) then file_address(x) end
        redis.call('HSET', P .. 'h:' .. h, 'resolve_until', fmt(now + resolve))
        refile(h)
        asked[#asked + 1] = h
        return false
    end
    addr_of[h] = x
    if x == '' then return true end
    local room, at = address_room(x)
    local head = redis.call('ZRANGE', P .. 'ap:' .. x, 0, 0)[1]
    if room and at <= now and (head == nil or head == h) then return true end
    if redis.call('ZADD', P .. 'ap:' .. x, 'NX', came, h) == 1 then
        redis.call('HINCRBY', P .. 'stats', 'parked', 1)
    end
    if head ~= h then redis.call('ZREM', P .. 'ready', h) end
    file_address(x)
    return false
end
local skip_until
local out = {}
local claimed = 0
local function lease(host, score, member)
    local hk = P .. 'h:' .. host
    redis.call('HINCRBY', hk, 'in_flight', 1)
    if turn > 0 then redis.call('HSET', hk, 'claimer', owner) end
    local st = redis.call('HMGET', hk, 'delay', 'next', 'robots_expires', 'last')
    redis.call('HSET', hk, 'next', fmt(now + tonumber(st[1] or '0')), 'last', fmt(now))
    local id = redis.call('INCR', P .. 'lid')
    local x = addr_of[host] or ''
    if x ~= '' then  -- counted against its address until done (or reclaimed)
        local ak = P .. 'a:' .. x
        local a = redis.call('HMGET', ak, 'next', 'delay')
        redis.call('HINCRBY', ak, 'in_flight', 1)
        redis.call('HSET', ak, 'next', fmt(now + tonumber(a[2] or '0')), 'last', fmt(now))
        redis.call('HSET', P .. 'la', id, x .. ' ' .. (a[1] or '0') .. ' ' .. fmt(now))
        unpark(x, host)
    end
    redis.call('ZADD', P .. 'leases', fmt(now + ttl), id)
    redis.call('HSET', P .. 'lease', id, host .. '\n' .. score .. '\n' .. owner .. '\n' ..
               (st[2] or '0') .. ' ' .. fmt(now) .. ' ' .. (st[4] or '-') .. '\n' ..
               member)  -- next before, claimed at, last start before
    refile(host)
    if x ~= '' then file_address(x) end
    out[#out + 1] = tostring(id)
    out[#out + 1] = host
    out[#out + 1] = score
    out[#out + 1] = member
    out[#out + 1] = respect and (st[3] or '') or ''
    out[#out + 1] = x
    claimed = claimed + 1
end
while claimed < want do
    local cands = redis.call('ZRANGEBYSCORE', P .. 'ready', '-inf', fmt(now), 'WITHSCORES',
                             'LIMIT', 0, scan)
    if #cands == 0 then break end
    local best, best_score, best_member, robots, removed
    local down = cands[2] == '-inf' and cands[1]
    for i = 1, down and 0 or #cands, 2 do
        local h = cands[i]
        local mine = false
        if others > 0 then
            local hc = redis.call('HMGET', P .. 'h:' .. h, 'claimer', 'conc')
            mine = hc[1] == owner and hc[2] == '1'
        end
        local left_until = mine and (tonumber(cands[i + 1]) + turn) or nil
        if left_until and left_until <= now then left_until = nil end
        local top = left_until and {} or redis.call('ZRANGE', P .. 'q:' .. h, 0, 0, 'WITHSCORES')
        local rs = (not left_until) and respect and
                   redis.call('HMGET', P .. 'h:' .. h, 'robots', 'robots_expires')
        if left_until then
            skip_until = math.min(skip_until or left_until, left_until)
        elseif #top == 0 or (rs and rs[1] == 'fetching') then
            redis.call('ZREM', P .. 'ready', h)
            removed = true
        elseif not may_go(h, cands[i + 1]) then
            removed = true
        elseif rs and (rs[1] == 'need' or tonumber(rs[2] or '0') <= now) then
            robots = h
            break
        elseif best == nil or tonumber(top[2]) < tonumber(best_score) then
            best, best_member, best_score = h, top[1], top[2]
        end
    end
    if down then
        local q = P .. 'q:' .. down
        local why = redis.call('HGET', P .. 'h:' .. down, 'down')
        local expiry = fmt(now + ttl)
        local n = 0
        while claimed + n < want do
            local head = redis.call('ZRANGE', q, 0, 0, 'WITHSCORES')
            if #head == 0 then break end
            local record = take_head(down, head[1])
            local id = redis.call('INCR', P .. 'lid')
            redis.call('ZADD', P .. 'leases', expiry, id)
            redis.call('HSET', P .. 'lease', id, down .. '\n' .. head[2] .. '\n' .. owner ..
                       '\n\n' .. record)  -- no next start: no slot held
            out[#out + 1] = tostring(id)
            out[#out + 1] = down
            out[#out + 1] = head[2]
            out[#out + 1] = record
            out[#out + 1] = 'down:' .. (why or '')
            out[#out + 1] = ''
            n = n + 1
        end
        claimed = claimed + n
        redis.call('HINCRBY', P .. 'stats', 'queued', -n)
        redis.call('HINCRBY', P .. 'stats', 'refused_robots', n)
        refile(down)
    elseif robots ~= nil then
        redis.call('HSET', P .. 'h:' .. robots, 'robots', 'fetching')
        redis.call('HINCRBY', P .. 'stats', 'robots_fetches', 1)
        lease(robots, '0', '2000000[]\nrobots')
    elseif best ~= nil then
        local record = take_head(best, best_member)
        redis.call('HINCRBY', P .. 'stats', 'queued', -1)
        redis.call('HINCRBY', P .. 'stats', 'handed_out', 1)
        lease(best, best_score, record)
    elseif not removed then
        break  -- every candidate was left to a hungry process
    end
end
if turn > 0 then
    if claimed == 0 and want > 0 and not skip_until then
        redis.call('ZADD', P .. 'hungry', fmt(now), owner)
    else
        redis.call('ZREM', P .. 'hungry', owner)
    end
end
local first = redis.call('ZRANGE', P .. 'ready', 0, 0, 'WITHSCORES')
local wait = first[2] and (first[2] == '-inf' and fmt(0) or
                           fmt(math.max(0, tonumber(first[2]) - now))) or ''
if skip_until and claimed == 0 then wait = fmt(math.max(0, skip_until - now)) end
local head = {wait, redis.call('HGET', P .. 'stats', 'queued') or '0',
              redis.call('ZCARD', P .. 'leases'), #asked}
for _, h in ipairs(asked) do head[#head + 1] = h end
for _, v in ipairs(out) do head[#head + 1] = v end
return head
"""
)

# ARGV: prefix, host, the key's fingerprint (`members.fingerprint`), new score (-priority),
# lower ('1': lowering allowed too), was ('1': return the old score, nil when none is queued:
# set_priority). 1 when changed (the entry goes after its new equals), 0 otherwise (rule 10).
REPRIORITIZE: Final = (
    COMMON
    + r"""
local host, fp, score, lower = ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5] == '1'
local was = ARGV[6] == '1'
local member = queued_member(host, fp)
if not member then return (not was) and 0 or nil end
local q = P .. 'q:' .. host
local raw = redis.call('ZSCORE', q, member)
local old = tonumber(raw)
if old == nil then return (not was) and 0 or nil end
if score == old or (score > old and not lower) then return was and raw or 0 end
enqueue(host, ARGV[4], take_out(host, member, fp))
if score < old then redis.call('HINCRBY', P .. 'stats', 'raised', 1) end
redis.call('HSET', P .. 'stats', 'scored', 1)
return was and raw or 1
"""
)


DOWN: Final = "down:"  # a claim's version when its host is down: the reason follows


class Claimed(NamedTuple):
    """One entry a claim handed out: its lease, host, score (-priority) and record, and its
    host's robots.txt version (``DOWN`` and the reason for a down host's refusal)."""

    lease: str
    host: str
    score: str
    record: str
    version: str
    address: str  # the address it was counted against ('' none): connect there


class ClaimReply(NamedTuple):
    ready_in: float | None  # seconds until a host is ready; None: none is filed
    queued: int  # by every process
    leased: int  # by every process
    resolve: list[str]  # hosts whose address this process is asked to find (``ADDRESS``)
    claims: list[Claimed]


def claim_args(
    prefix: str,
    now: str,
    *,
    count: int,
    lease_ttl: float,
    owner: str,
    candidates: int,
    respect_robots: bool,
    turn: float,
    resolve: float = 0.0,
) -> list[Arg]:
    """CLAIM's ARGV (its comment above); `now` is ``''`` for Redis ``TIME``; `resolve` > 0: hosts
    are resolved (by address), each asked for holds its host that long."""
    return [prefix, now, count, lease_ttl, owner, candidates, flag(respect_robots), repr(turn),
            repr(resolve)]  # fmt: skip


def claim_reply(reply: list[Any]) -> ClaimReply:
    first = text(reply[0])
    start = 4 + int(reply[3])
    resolve = [text(x) for x in reply[4:start]]
    claims = [Claimed(*(text(x) for x in reply[i : i + 6])) for i in range(start, len(reply), 6)]
    return ClaimReply(float(first) if first else None, int(reply[1]), int(reply[2]), resolve,
                      claims)  # fmt: skip


class Reprioritized(IntEnum):
    """What ``REPRIORITIZE`` says when not asked for the old score (``was``)."""

    UNCHANGED = 0  # not queued, or already at that priority (or higher, unless lowering)
    CHANGED = 1


def reprioritize_args(
    prefix: str, host: str, key: str, priority: float, *, lower: bool, was: bool = False
) -> list[Arg]:
    """REPRIORITIZE's ARGV; with `was` the script answers the old score (None: not queued)
    instead of a `Reprioritized`."""
    return [prefix, host, fingerprint(key), repr(-float(priority)), flag(lower), flag(was)]
