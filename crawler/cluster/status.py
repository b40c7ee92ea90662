"""`crawl --redis URL --crawl-id NAME --status`: a shared crawl's progress, without crawling.

Read-only: the shared frontier's figures (queued, leased, hosts), the Sieve's count, and each
process's last heartbeat (`crawler.cluster.node`), summed over every process that ever joined.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections import Counter
from typing import IO, Any

from redis.exceptions import RedisError

from crawler.cluster.connect import connect, discover
from crawler.cluster.node import redacted
from crawler.errors import SharedStateError
from crawler.frontier.redis.shards import Keyspace
from crawler.sieve.redis import RedisClient, text

__all__ = ["format_status", "read_status", "status_command"]

SUMMED = ("pages", "errors", "bytes", "admitted", "duplicates", "retries", "scored", "relevant",
          "exact_duplicates", "near_duplicates")  # fmt: skip


async def read_status(url: str, crawl_id: str, *, recent: float = 30.0) -> dict[str, Any]:
    """The shared crawl's progress as a dict; SharedStateError if Redis is unreachable or has
    no crawl by that name. A process is "active" if it sent a heartbeat in the last `recent`
    seconds and has not left the crawl (its last heartbeat says so when it ends cleanly)."""
    client: RedisClient = connect(url)
    try:
        client, masters = await discover(client, url)
        keyspace = Keyspace(crawl_id, cluster=masters > 0)
        meta = await client.hgetall(keyspace.prefix + "meta")
        if meta:
            keyspace = Keyspace(crawl_id, int(meta.get(b"groups") or 1), cluster=masters > 0)
        p = keyspace.prefix
        pipe = client.pipeline(transaction=False)
        pipe.hgetall(p + "procs")
        pipe.hlen(p + "content:urls")  # the shared content index (crawler.content.redis)
        for g in keyspace.prefixes:  # each group's figures, summed
            pipe.hgetall(g + "stats")
            pipe.scard(g + "hosts")
            pipe.zcard(g + "leases")
            pipe.get(g + "sieve:count")
        procs, contents, *groups = await pipe.execute()
    except (RedisError, OSError) as exc:
        raise SharedStateError(f"cannot read Redis at {redacted(url)}: {exc}") from exc
    finally:
        await client.aclose()
    if not meta:
        raise SharedStateError(f"no crawl {crawl_id!r} in Redis at {redacted(url)}")
    counts: Counter[bytes] = Counter()
    hosts = leased = seen = 0
    for i in range(0, len(groups), 4):
        counts.update({k: int(v) for k, v in groups[i].items()})
        hosts, leased = hosts + int(groups[i + 1]), leased + int(groups[i + 2])
        seen += int(groups[i + 3] or 0)
    c = {text(k): int(v) for k, v in counts.items()}
    now = time.time()
    processes = []
    totals = dict.fromkeys(SUMMED, 0)
    for owner, raw in procs.items():
        record = json.loads(raw)
        stats = record.get("stats", {})
        for name in SUMMED:
            value = stats.get(name) or 0
            totals[name] += sum(value.values()) if isinstance(value, dict) else int(value)
        left = bool(record.get("left"))
        processes.append({"owner": text(owner), "host": record.get("host"),
                          "pid": record.get("pid"), "seen_ago": round(now - record["seen"], 1),
                          "active": not left and now - record["seen"] <= recent, "left": left,
                          "pages": stats.get("pages", 0)})  # fmt: skip
    processes.sort(key=lambda r: r["seen_ago"])
    return {
        "crawl_id": crawl_id,
        "created": text(meta.get(b"created", b"")),
        "queued": c.get("queued", 0),
        "leased": int(leased),
        "hosts": int(hosts),
        "hosts_down": c.get("hosts_down", 0),  # put down by the circuit breaker
        "seen_urls": int(seen or 0),
        "handed_out": c.get("handed_out", 0),
        "reclaimed": c.get("reclaimed", 0),
        "content_pages": int(contents),  # distinct page contents, with [dedup] enabled
        "finished": c.get("queued", 0) == 0 and int(leased) == 0,
        **totals,
        "processes": processes,
        "active_processes": sum(r["active"] for r in processes),
    }


def format_status(status: dict[str, Any], out: IO[str]) -> None:
    s = status
    state = "finished (nothing queued or leased)" if s["finished"] else "running"
    print(f"crawl {s['crawl_id']!r} (created {s['created']}): {state}", file=out)
    down = f" ({s['hosts_down']:,} down)" if s["hosts_down"] else ""
    print(f"  queued {s['queued']:,}  leased {s['leased']:,}  hosts {s['hosts']:,}{down}  "
          f"URLs seen {s['seen_urls']:,}", file=out)  # fmt: skip
    print(f"  fetched {s['pages']:,} pages ({s['errors']:,} errors, {s['bytes']:,} bytes), "
          f"{s['retries']:,} retries, {s['reclaimed']:,} leases reclaimed", file=out)  # fmt: skip
    if s["scored"]:  # a focused crawl: pages rated, and the share above the threshold
        print(f"  focus: {s['scored']:,} pages rated, {s['relevant']:,} relevant (harvest rate "
              f"{s['relevant'] / s['scored']:.1%})", file=out)  # fmt: skip
    if s["content_pages"]:  # content dedup: the shared index and the duplicates found
        dups = f"{s['exact_duplicates']:,} exact / {s['near_duplicates']:,} near"
        print(f"  content dedup: {s['content_pages']:,} distinct pages, duplicates {dups}",
              file=out)  # fmt: skip
    print(f"  processes: {s['active_processes']} active of {len(s['processes'])} seen",
          file=out)  # fmt: skip
    for r in s["processes"]:
        mark = "active" if r["active"] else "left  " if r["left"] else "gone  "
        print(f"    {mark} {r['owner']}  last seen {r['seen_ago']:g} s ago, "
              f"{r['pages']:,} pages", file=out)  # fmt: skip


def status_command(url: str, crawl_id: str) -> int:
    """``crawl --status``: print the shared crawl's progress; the exit status (2: unreachable
    Redis or no such crawl)."""
    try:
        status = asyncio.run(read_status(url, crawl_id))
    except SharedStateError as exc:
        print(f"crawl: error: {exc}", file=sys.stderr)
        return 2
    format_status(status, sys.stdout)
    return 0
