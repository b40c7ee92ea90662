"""The frontier shared through Redis: its queues, leases and host state, in Lua scripts (each
script's arguments packed by one `*_args` function beside it, its answers an `IntEnum`).

| module | holds |
| --- | --- |
| `addresses` | The shared frontier's resolution step, one process's part of it: ... |
| `frontier` | The frontier in Redis: one crawl's queues, politeness and leases shared by ... |
| `lua_address` | The Lua script that records hosts' addresses in the Redis frontier ... |
| `lua_admit` | The Lua scripts of the Redis frontier's admission (the Sieve's test-and-set ... |
| `lua_keys` | The Redis frontier's keys, and the Lua every one of its scripts starts with |
| `lua_leases` | The Lua scripts of the Redis frontier's leases and the host state they ... |
| `lua_queue` | The Lua scripts of the Redis frontier's queues: the claim of hosts' best ... |
| `members` | How the Redis frontier writes an entry in its host's queue, and reads it back |
| `queues` | The queues of the Redis frontier: what goes in, and what is queued |
| `settings` | How one process shares the Redis frontier with the others: `Sharing` (its ... |
| `wake` | A freed slot wakes the processes that wait for one: `Wakes`, one process's ... |
| `work` | The shared frontier as the engine's workers see it: `SharedWork` |
"""

from __future__ import annotations

__all__: list[str] = []
