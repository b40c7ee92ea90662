"""The Lua script that records hosts' addresses in the Redis frontier (``ADDRESS``), with the one
function that packs its arguments and the `IntEnum` of its answers. The claim that asks for
them, and parks hosts on a busy address: ``crawler.frontier.redis.lua_queue``; keys and shared
helpers: ``crawler.frontier.redis.lua_keys``."""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum
from typing import Final, NamedTuple

from crawler.frontier.redis.lua_keys import COMMON, Arg

__all__ = ["ADDRESS", "AddressAnswer", "HostAddress", "address_args"]

# ARGV: prefix, now, ip_delay, ip_concurrency (0: no limit), then per host: host, its addresses
# (the resolver's answer, space-separated, in its order; '' when it did not resolve), seconds the
# answer is kept. A host keeps its address while the answer still holds it (round-robin DNS does
# not move it between budgets), else takes the answer's first ('' none: by host only); its
# ``addr_until`` is now + the seconds, ``resolve_until`` is cleared and the host filed again.
# A host that leaves an address is taken off the hosts parked there (its leases still count
# against the old address until done). An address seen for the first time gets its budget
# (``a:{address}``: delay, conc; ``addrs``: the addresses known). Returns per host 1 when its
# address changed (or was none), else 0.
ADDRESS: Final = (
    COMMON
    + r"""
local now = clock()
local out = {}
for at = 5, #ARGV, 3 do
    local host, found = ARGV[at], ARGV[at + 1]
    local hk = P .. 'h:' .. host
    local old = redis.call('HGET', hk, 'addr') or ''
    local chosen = ''
    for a in string.gmatch(found, '%S+') do
        if chosen == '' then chosen = a end
        if a == old then
            chosen = old
            break
        end
    end
    if old ~= '' and old ~= chosen and unpark(old, host) then
        redis.call('ZREM', P .. 'ready', host)
        file_address(old)
    end
    redis.call('HSET', hk, 'addr', chosen, 'addr_until', fmt(now + tonumber(ARGV[at + 2])))
    redis.call('HDEL', hk, 'resolve_until')
    if chosen ~= '' and redis.call('SADD', P .. 'addrs', chosen) == 1 then
        redis.call('HSET', P .. 'a:' .. chosen, 'delay', ARGV[3], 'conc', ARGV[4], 'next', 0,
                   'in_flight', 0)
    end
    refile(host)
    out[#out + 1] = (old == chosen and old ~= '') and 0 or 1
end
return out
"""
)


class AddressAnswer(IntEnum):
    """What ``ADDRESS`` says of each host."""

    KEPT = 0  # the host kept the address it had
    MOVED = 1  # its address is new, changed, or none


class HostAddress(NamedTuple):
    """A host's resolution for ``ADDRESS``: its key, the addresses found (none: it did not
    resolve) and the seconds they are kept (already bounded by the DNS settings)."""

    host: str
    addresses: tuple[str, ...]
    ttl: float


def address_args(
    prefix: str, now: str, ip_delay: float, ip_concurrency: int, hosts: Sequence[HostAddress]
) -> list[Arg]:
    """ADDRESS's ARGV (its comment above)."""
    args: list[Arg] = [prefix, now, repr(float(ip_delay)), ip_concurrency]
    for host, addresses, ttl in hosts:
        args += (host, " ".join(addresses), repr(float(ttl)))
    return args
