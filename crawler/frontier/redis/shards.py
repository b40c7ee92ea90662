"""Where a shared crawl's keys live: `Keyspace`, one crawl's key prefixes and its host groups.

On one Redis node the crawl is one group under ``crawl:{crawl_id}:`` (the layout every script
was written for). On a Redis Cluster its hosts are split into G groups, each group's keys (its
hosts' queues and hashes, its ready set, leases, counters and its part of the Sieve) under a
hash tag of its own, so the cluster spreads the groups over its masters and every script touches
one slot; the crawl-wide keys (meta, heartbeats, the fetch budget, the content index, the
``max_pages`` counter) sit under the crawl's own tag.

A host's group comes from its registrable domain (``docs.python.org`` and ``www.python.org``
share one), not from the host name: a site's hosts usually share servers, and the budget by
address (``ip_delay``, ``ip_concurrency``) is held within a group, so keeping a site together
keeps its addresses' budgets exact; a host with no registrable domain (an IP address,
``localhost``) is its own. The hash is CRC-32 (stable across processes and Python versions).

Each group's tag is chosen so that group g's slot falls in the g-th of G equal slices of the
16,384 slots: a cluster whose masters hold equal slot ranges (``redis-cli --cluster create``)
gets G/masters groups each, not a binomial draw.
"""

from __future__ import annotations

import zlib
from typing import Final

from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

from crawler.urls.host import split_host
from crawler.urls.suffixes import registrable_domain

__all__ = ["MAX_GROUPS", "Keyspace", "group_tag"]

MAX_GROUPS: Final = 1024
GROUPS_PER_MASTER: Final = 4  # the default G on a cluster: this many groups per master


def group_tag(crawl_id: str, group: int, groups: int) -> str:
    """The hash tag of `group` of `groups`: ``{crawl_id}.g{group}`` and the first suffix that
    puts its slot in the group's slice of the slots."""
    slots = REDIS_CLUSTER_HASH_SLOTS
    low, high = group * slots // groups, (group + 1) * slots // groups
    salt = 0
    while True:
        tag = f"{crawl_id}.g{group}.{salt}"
        if low <= key_slot(tag.encode()) < high:
            return tag
        salt += 1


class Keyspace:
    """The key prefixes of the crawl `crawl_id` in `groups` groups (1: one node's layout).
    `cluster`: the crawl-wide keys under the crawl's hash tag (a cluster needs multi-key calls
    on one slot; one node keeps the unbraced prefix it always had)."""

    __slots__ = ("_site_group", "crawl_id", "groups", "prefix", "prefixes")

    def __init__(self, crawl_id: str, groups: int = 1, *, cluster: bool = False) -> None:
        if not 1 <= groups <= MAX_GROUPS:
            raise ValueError(f"groups must be within 1..{MAX_GROUPS}, got {groups}")
        self.crawl_id, self.groups = crawl_id, groups
        self.prefix = f"crawl:{{{crawl_id}}}:" if cluster else f"crawl:{crawl_id}:"
        if groups == 1:
            self.prefixes: tuple[str, ...] = (self.prefix,)
        else:
            self.prefixes = tuple(f"crawl:{{{group_tag(crawl_id, g, groups)}}}:"
                                  for g in range(groups))  # fmt: skip
        self._site_group: dict[str, int] = {}

    def group_of(self, host: str) -> int:
        """The group of `host` (a politeness key, ``scheme://host:port``)."""
        if self.groups == 1:
            return 0
        name = split_host(host)
        site = registrable_domain(name) or name
        group = self._site_group.get(site)
        if group is None:
            if len(self._site_group) >= 100_000:
                self._site_group.clear()
            group = self._site_group[site] = zlib.crc32(site.encode()) % self.groups
        return group

    def __repr__(self) -> str:
        return f"Keyspace(prefix={self.prefix!r}, groups={self.groups})"
