"""The Lua scripts of the Redis frontier's queues: admission (the Sieve's test-and-set and the
enqueue, ``ADMIT``), the claim of hosts' best entries (``CLAIM``) and re-prioritizing
(``REPRIORITIZE``). Keys and shared helpers: ``crawler.frontier.redis.lua_keys``."""

from __future__ import annotations

from typing import Final

from crawler.frontier.redis.lua_keys import COMMON

__all__ = ["ADMIT", "CLAIM", "PEEK", "REPRIORITIZE"]

# The seen test and the enqueue in one atomic call (a crash never leaves a URL seen but not
# queued). ARGV: prefix, '' (no clock), stages, max_queued, max_queued_per_host, keys, respect
# robots.txt ('1': a new host starts in robots state 'need'), max admitted (0: no cap; the
# crawl's ``max_pages``: a key is refused, and stays unseen, once the Sieve's shared count has
# reached it), exact tier ('1'/''), then (m, k) per stage, then per key: host, tail
# (key\npayload), score, delay, concurrency, then (start, step) per stage, then its fingerprint's
# bucket and the fingerprint (the Sieve's h1, signed 64-bit, decimal), and its scope host (the
# key's host, port left out: `crawler.admission.scope.split_host`; after a '!' for a seed, which
# counts but is not refused, as in memory); last, the URLs a host may have
# admitted (``[scope] max_pages_per_host``, 0: no cap; counted per scope host in
# ``host_admitted``, for every process: a key of a host at the cap is refused before the Sieve's
# test, as the in-memory scope does, and stays unseen). The exact tier confirms
# a key the Bloom filter takes as seen against ``exact:{bucket}`` (sets of fingerprints: 65,536
# buckets by their top 16 bits, kept as Redis intsets of 8 bytes per key up to 512 keys a
# bucket, ~33M keys); a key not there is a false positive, rescued (counted in ``stats``
# ``rescued``) and admitted. Returns {-1, stages} when the Sieve grew meanwhile (call again),
# else {set bits of the newest stage, count, flag per key}: 1 queued, 0 seen, 2 full, 3 host
# full, 4 over max admitted, 5 over the host's max admitted.
ADMIT: Final = (
    COMMON
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
local cap = tonumber(ARGV[8])
local admitted = (cap > 0) and tonumber(redis.call('GET', P .. 'sieve:count') or '0') or 0
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
    local q = P .. 'q:' .. host
    local flag
    local shost = ARGV[at + 7 + 2 * nst]
    local checked = string.sub(shost, 1, 1) ~= '!'  -- '!': a seed, counted but not refused
    if not checked then shost = string.sub(shost, 2) end
    if checked and host_cap > 0
       and tonumber(redis.call('HGET', host_admitted, shost) or '0') >= host_cap then
        flag = 5
    elseif cap > 0 and admitted + new >= cap then
        flag = 4
        over = over + 1
    elseif queued >= maxq then
        flag = 2
        dropped_full = dropped_full + 1
    elseif redis.call('ZCARD', q) >= maxh then
        flag = 3
        dropped_host = dropped_host + 1
    else
        local seen = false
        for s = 1, nst do
            local a, b = tonumber(ARGV[at + 3 + 2 * s]), tonumber(ARGV[at + 4 + 2 * s])
            local m, args = ms[s], {}
            local op = (s < nst) and 'GET' or 'SET'
            for j = 0, ks[s] - 1 do
                args[#args + 1] = op
                args[#args + 1] = 'u1'
                args[#args + 1] = (a + j * b) % m
                if op == 'SET' then args[#args + 1] = 1 end
            end
            local sk = P .. 'sieve:' .. (s - 1)
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
            local m = '1' .. string.format('%015d', redis.call('INCR', P .. 'seq')) .. ARGV[at + 1]
            redis.call('ZADD', q, ARGV[at + 2], m)
            redis.call('HSET', P .. 'qk:' .. host, key_of(m), m)
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

# ARGV: prefix, now, count, lease_ttl, owner, candidates (ready hosts compared by their best
# priority once any entry has one other than 0; else the earliest ready host goes), respect
# robots.txt ('1'/''): a host whose policy is unknown or expired hands out its ROBOTS entry
# (member class 2) first, and nothing else until ``set_robots``; turn (seconds, 0: off): taking
# turns on a host, below. Returns {seconds until a host is ready or '', queued, in flight, then
# per claim: id, host, score, member, the host's robots.txt version (its ``robots_expires``, ''
# when not respected)}. The queued pages of a host that is down (filed in ``ready`` at -inf, so
# first) are handed out before anything else, as refusals: leased (so a process that dies
# before it wrote their results leaves them to the others) but holding no slot and spending no
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
    redis.call('ZADD', P .. 'leases', fmt(now + ttl), id)
    redis.call('HSET', P .. 'lease', id, host .. '\n' .. score .. '\n' .. owner .. '\n' ..
               (st[2] or '0') .. ' ' .. fmt(now) .. ' ' .. (st[4] or '-') .. '\n' ..
               member)  -- next before, claimed at, last start before
    refile(host)
    out[#out + 1] = tostring(id)
    out[#out + 1] = host
    out[#out + 1] = score
    out[#out + 1] = member
    out[#out + 1] = respect and (st[3] or '') or ''
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
        local items = redis.call('ZRANGE', q, 0, want - claimed - 1, 'WITHSCORES')
        local expiry = fmt(now + ttl)
        for j = 1, #items, 2 do
            redis.call('ZREM', q, items[j])
            redis.call('HDEL', P .. 'qk:' .. down, key_of(items[j]))
            local id = redis.call('INCR', P .. 'lid')
            redis.call('ZADD', P .. 'leases', expiry, id)
            redis.call('HSET', P .. 'lease', id, down .. '\n' .. items[j + 1] .. '\n' .. owner ..
                       '\n\n' .. items[j])  -- no next start: no slot held
            out[#out + 1] = tostring(id)
            out[#out + 1] = down
            out[#out + 1] = items[j + 1]
            out[#out + 1] = items[j]
            out[#out + 1] = 'down:' .. (why or '')
        end
        local n = #items / 2
        claimed = claimed + n
        redis.call('HINCRBY', P .. 'stats', 'queued', -n)
        redis.call('HINCRBY', P .. 'stats', 'refused_robots', n)
        refile(down)
    elseif robots ~= nil then
        redis.call('HSET', P .. 'h:' .. robots, 'robots', 'fetching')
        redis.call('HINCRBY', P .. 'stats', 'robots_fetches', 1)
        lease(robots, '0', '2000000000000000robots\n[]')
    elseif best ~= nil then
        redis.call('ZREM', P .. 'q:' .. best, best_member)
        redis.call('HDEL', P .. 'qk:' .. best, key_of(best_member))
        redis.call('HINCRBY', P .. 'stats', 'queued', -1)
        redis.call('HINCRBY', P .. 'stats', 'handed_out', 1)
        lease(best, best_score, best_member)
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
              redis.call('ZCARD', P .. 'leases')}
for _, v in ipairs(out) do head[#head + 1] = v end
return head
"""
)

# ARGV: prefix, host, key, new score (-priority), lower ('1': lowering allowed too), was ('1':
# return the old score, nil when none is queued: set_priority). 1 when changed (the entry goes
# after its new equals), 0 otherwise (rule 10).
REPRIORITIZE: Final = (
    COMMON
    + r"""
local host, key, score, lower = ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5] == '1'
local was = ARGV[6] == '1'
local member = redis.call('HGET', P .. 'qk:' .. host, key)
if not member then return (not was) and 0 or nil end
local q = P .. 'q:' .. host
local raw = redis.call('ZSCORE', q, member)
local old = tonumber(raw)
if old == nil then return (not was) and 0 or nil end
if score == old or (score > old and not lower) then return was and raw or 0 end
redis.call('ZREM', q, member)
local m = '1' .. string.format('%015d', redis.call('INCR', P .. 'seq')) .. string.sub(member, 17)
redis.call('ZADD', q, ARGV[4], m)
redis.call('HSET', P .. 'qk:' .. host, key, m)
if score < old then redis.call('HINCRBY', P .. 'stats', 'raised', 1) end
redis.call('HSET', P .. 'stats', 'scored', 1)
return was and raw or 1
"""
)

# What the shared crawl knows of some keys, changing nothing (a focused crawl scores only the
# links to new and queued URLs, as the in-memory crawl does). ARGV: prefix, '' (no clock),
# stages, exact tier ('1'/''), then (m, k) per stage, then per key: host, key, (start, step) per
# stage, its fingerprint's bucket and the fingerprint (as for ADMIT), its scope host; last, the
# per-host cap (``max_pages_per_host``, 0: none). Returns {-1, stages} when the Sieve grew
# meanwhile (call again), else {0, then per key: 2 when its scope host is at the cap (the
# in-memory scope refuses such a link first), else the score (-priority) it is queued at, or 1
# (seen: fetched, in flight, refused) or 0 (new)}; a score is a string.
PEEK: Final = r"""
local P = ARGV[1]
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
    local host, key = ARGV[at], ARGV[at + 1]
    local member = redis.call('HGET', P .. 'qk:' .. host, key)
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
            for j = 0, ks[s] - 1 do
                args[#args + 1] = 'GET'
                args[#args + 1] = 'u1'
                args[#args + 1] = (a + j * b) % ms[s]
            end
            local bits = redis.call('BITFIELD_RO', P .. 'sieve:' .. (s - 1), unpack(args))
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
