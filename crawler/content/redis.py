"""The content-dedup index of a crawl shared through Redis: `RedisContentIndex`.

The twin of `crawler.content.index.ContentIndex`, with the same answers: the first page (in
the order pages reached the index) with the same content hash, else the earliest page within
``[dedup] near_distance`` bits. Every process of the crawl checks its pages against the one
index, so a mirror crawled by one process is known as a mirror by the others, and with
``follow_duplicates = false`` no process follows its links.

One Lua call per page classifies it and adds it when its content is new, atomically (two
processes that fetch copies of one page at once: one is first, the other its duplicate).
Keys, under the crawl's prefix:

- ``content:exact``: hash, content hash (16 bytes) -> page id
- ``content:urls``: hash, page id (0, 1, 2... in the order added) -> URL
- ``content:t0`` ... ``content:t{k}``: one hash per block of the pigeonhole tables
  (`crawler.content.index`: k+1 blocks, two simhashes within k bits agree on one), field: the
  block's key (`block_keys`), value: the bucket's pages as packed 12-byte records
  (simhash high and low 32 bits, page id; big-endian). A query reads k+1 buckets and compares
  each record with a popcount, as the in-memory tables do. A page whose simhash an earlier
  page has already is not filed in the tables (a query that would find it finds the earlier
  one, whose id is smaller): pages alike but for their numbers (simhash 0 when every word has a
  digit; one simhash for a calendar's months) would otherwise crowd one bucket that each
  insert rewrites whole, with Redis blocked for every process meanwhile.

Redis holds ~300-450 bytes a distinct page (measured: ~400-450 up to 50,000 pages, ~300 at
200,000-300,000, with 60-character URLs: the URL, the content hash, k+1 records and the
hashes' per-field overhead). Like every key of a shared crawl, they stay until the crawl's keys are
deleted (docs/scale-out.md).
"""

from __future__ import annotations

from typing import Any

from redis.asyncio import Redis, RedisCluster
from redis.exceptions import RedisError

from crawler.content.fingerprint import Fingerprint
from crawler.content.index import MAX_DISTANCE, Match, block_keys
from crawler.errors import SharedStateError

__all__ = ["RedisContentIndex"]

# KEYS: exact, urls, t0..tk; ARGV: url, content hash, simhash high 32 bits, low 32 bits, k,
# then each table's bucket key (both packed by `check_call`). Returns {duplicate_of,
# near_duplicate_of} ("" for none).
_CHECK = """
local url, digest = ARGV[1], ARGV[2]
local hi, lo, k = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local tables = #KEYS - 2
local buckets = {}
local function bits(x)
  local n = 0
  while x ~= 0 do
    x = bit.band(x, x - 1)
    n = n + 1
  end
  return n
end
local same = false  -- an earlier page has this very simhash: this one need not be filed
local function near()
  local best = -1
  local zero = hi == 0 and lo == 0
  for i = 1, tables do
    local recs = redis.call('HGET', KEYS[i + 2], ARGV[i + 5])
    buckets[i] = recs or ''
    if recs then
      for p = 1, #recs, 12 do
        local h, l, doc = struct.unpack('>I4I4I4', recs, p)
        if h == hi and l == lo then same = true end
        if not zero and (best < 0 or doc < best)
           and bits(bit.bxor(h, hi)) + bits(bit.bxor(l, lo)) <= k then
          best = doc
        end
      end
    end
  end
  if best < 0 then return -1 end
  return best
end
local function url_of(doc)
  if doc < 0 then return '' end
  return redis.call('HGET', KEYS[2], doc)
end
local first = redis.call('HGET', KEYS[1], digest)
if first then
  first = tonumber(first)
  local first_url = url_of(first)
  if first_url ~= url then return {first_url, ''} end
  local doc = near()
  if doc >= first then doc = -1 end
  return {'', url_of(doc)}
end
local doc = near()
local id = redis.call('HLEN', KEYS[2])
redis.call('HSET', KEYS[2], id, url)
redis.call('HSET', KEYS[1], digest, id)
if not same then
  local rec = struct.pack('>I4I4I4', hi, lo, id)
  for i = 1, tables do
    redis.call('HSET', KEYS[i + 2], ARGV[i + 5], buckets[i] .. rec)
  end
end
return {'', url_of(doc)}
"""


def check_call(
    keys: list[str], url: str, fp: Fingerprint, distance: int, layout: list[tuple[int, int]]
) -> tuple[list[str], list[str | bytes | int]]:
    """``_CHECK``'s (KEYS, ARGV) for the page fetched from `url`: `keys` as the index holds
    them, its simhash cut into blocks by `layout` (`block_keys`)."""
    sim = fp.simhash
    args: list[str | bytes | int] = [url, fp.content_hash, sim >> 32, sim & 0xFFFF_FFFF, distance]
    args += [(sim >> shift) & mask for shift, mask in layout]
    return keys, args


class RedisContentIndex:
    """Content dedup for every process of a shared crawl (see the module docstring);
    ``await check(url, fingerprint)`` as `ContentIndex.check` does."""

    __slots__ = ("_client", "_keys", "_layout", "_script", "checked", "distance")

    def __init__(self, client: Redis | RedisCluster, prefix: str, distance: int = 3) -> None:
        if isinstance(distance, bool) or not isinstance(distance, int):
            raise TypeError(f"distance must be an int, got {distance!r}")
        if not 0 <= distance <= MAX_DISTANCE:
            raise ValueError(f"distance must be in 0..{MAX_DISTANCE}, got {distance}")
        self._client = client
        self.distance = distance
        self._layout = block_keys(distance)
        tables = [f"{prefix}content:t{i}" for i in range(distance + 1)]
        self._keys = [f"{prefix}content:exact", f"{prefix}content:urls", *tables]
        self._script = client.register_script(_CHECK)
        self.checked = 0  # pages this process checked (whatever the answer)

    async def check(self, url: str, fp: Fingerprint) -> Match:
        """Classify the page fetched from `url` against the pages every process checked in
        before it, and add it if its content is new (`ContentIndex.check`'s rules);
        SharedStateError if Redis fails."""
        if len(fp.content_hash) != 16:
            raise ValueError("content hashes are 16 bytes")
        keys, args = check_call(self._keys, url, fp, self.distance, self._layout)
        try:
            exact, near = await self._script(keys=keys, args=args)
        except (RedisError, OSError) as exc:
            raise SharedStateError(f"Redis: {exc}") from exc
        self.checked += 1
        return Match(_text(exact), _text(near))

    async def pages(self) -> int:
        """Distinct page contents in the shared index."""
        try:
            return int(await self._client.hlen(self._keys[1]))
        except (RedisError, OSError) as exc:
            raise SharedStateError(f"Redis: {exc}") from exc

    def figures(self) -> dict[str, Any]:
        """This process's figures (`crawl --status` counts the shared index's pages)."""
        return {"shared": True, "checked": self.checked}

    def __repr__(self) -> str:
        where = self._keys[0].removesuffix("content:exact")
        return f"<RedisContentIndex {where!r} distance={self.distance} checked={self.checked}>"


def _text(value: bytes | str | None) -> str | None:
    if not value:
        return None
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
