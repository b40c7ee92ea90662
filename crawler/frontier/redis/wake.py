"""A freed slot wakes the processes that wait for one: `Wakes`, one process's ear on the crawl's
wake-up channel.

The scripts that free a host's slot or give work back (``DONE``, ``RECLAIM``, ``REFUSE`` in
``crawler.frontier.redis.lua_leases``) publish on the channel ``{prefix}wake`` of their group
(`CHANNEL`; a process listens on every group's, one connection; PUBLISH reaches every node of a
Redis Cluster; a completion's message is the name of the process that sent it, which ignores its
own: it claims after its completions anyway). Each waiting process subscribes (one connection of
its pool, held while it waits for work) and a process whose claim found nothing waits for that
message, not for a poll interval: it claims again as soon as another process's completion frees
a slot. A host's next allowed start is not a message: the claim says how far it is and the
waiter sets its timer to it. A message lost (a dropped connection, a process that subscribed
after it) costs at most the bounded fallback wait (``poll_interval``), so a crawl never hangs on
one.

Clear before the claim, wait after it (`clear`, `wait`): a message that comes while the claim is
on its way is kept, so the wait after an empty claim returns at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Final

from redis.asyncio import RedisCluster
from redis.asyncio.client import PubSub
from redis.exceptions import RedisError

from crawler.errors import SharedStateError
from crawler.sieve.redis import RedisClient, text

__all__ = ["CHANNEL", "Wakes"]

log = logging.getLogger(__name__)

CHANNEL: Final = "wake"  # under the crawl's prefix; what ``lua_leases`` publishes on


class Wakes:
    """The wake-ups of one process (module docstring). `heard`: messages heard; `on_wake`: called
    on each (``SharedWork`` sets its own event with it)."""

    __slots__ = ("_channels", "_client", "_event", "_index", "_own", "_task", "heard", "on_heard",
                 "on_wake")  # fmt: skip

    def __init__(self, client: RedisClient, prefix: str | Sequence[str], owner: str) -> None:
        """`prefix`: the crawl's, or each group's of a sharded crawl (one channel each)."""
        self._client = client
        self._own = owner  # the message of this process's own completions: not for it
        prefixes = [prefix] if isinstance(prefix, str) else list(prefix)
        self._channels = [p + CHANNEL for p in prefixes]
        self._index = {channel: i for i, channel in enumerate(self._channels)}
        self._event = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.heard = 0
        self.on_wake: Callable[[], None] | None = None
        # the frontier's own, before `on_wake`: the index of the prefix whose channel spoke
        self.on_heard: Callable[[int], None] | None = None

    async def listen(self) -> None:
        """Subscribe, unless listening already (again after a lost connection); a
        `SharedStateError` if Redis cannot be reached. On a Redis Cluster a node that cannot be
        reached (a failover under way) leaves this process waiting by the clock until the
        next call: the crawl's own calls retry through the failover."""
        if self.listening:
            return
        pubsub = self._client.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(*self._channels)
        except (RedisError, OSError) as exc:
            await pubsub.aclose()  # type: ignore[no-untyped-call]
            if isinstance(self._client, RedisCluster):
                log.warning("wake-ups from Redis unavailable (%s): waiting by the clock for "
                            "now", exc)  # fmt: skip
                return
            raise SharedStateError(f"Redis: {exc}") from exc
        self._task = asyncio.create_task(self._listen(pubsub), name="redis-wakes")

    async def _listen(self, pubsub: PubSub) -> None:
        try:
            while True:
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=None)
                if message is not None and message["type"] == "message":
                    data = message["data"]
                    if (data.decode() if isinstance(data, bytes) else data) == self._own:
                        continue
                    self.heard += 1
                    self._event.set()
                    if self.on_heard is not None:
                        self.on_heard(self._index.get(text(message["channel"]), 0))
                    if self.on_wake is not None:
                        self.on_wake()
        except (RedisError, OSError) as exc:
            log.warning("wake-ups from Redis lost (%s): waiting by the clock for now", exc)
        finally:
            with contextlib.suppress(RedisError, OSError):
                await pubsub.aclose()  # type: ignore[no-untyped-call]

    @property
    def listening(self) -> bool:
        """Whether wake-ups are heard now (False before `listen` and after a lost connection)."""
        return self._task is not None and not self._task.done()

    def clear(self) -> None:
        """Forget the wake-ups heard so far (call it before a claim)."""
        self._event.clear()

    async def wait(self, seconds: float) -> bool:
        """Wait for a wake-up heard since `clear`, at most `seconds`; whether one came."""
        await self.listen()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._event.wait(), seconds)
        woke = self._event.is_set()
        self._event.clear()
        return woke

    async def close(self) -> None:
        """Stop listening (the connection goes back to the pool)."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
