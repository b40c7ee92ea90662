"""How the Redis frontier writes an entry in its host's queue, and reads it back.

An entry is a *context*, the JSON list of the fields a page's links share (depth, parent,
retries, redirects, sitemap), and an *element*: its key's fingerprint (`fingerprint`: 11
characters, how ``qk:{host}`` finds it), its key, then its URL after ``\\n `` (a newline and a
space) when that differs from the key: a chunk's elements follow each other after a newline, and
start with their fingerprint. Key, URL and parent are written relative to their host's origin
when on it (``/path`` for ``https://host/path``; ``!`` marks a whole one that starts with ``/``
or ``!``). An entry's *tail* is ``{context}\\n{element}`` (what the scripts queue), its *record*
``{class}{id}{tail}``: the class (``0`` a retry or a reclaimed lease, ``1`` new work, ``2`` a
ROBOTS entry) and a 6-character id, as a claim hands it out and a lease keeps it. The queues'
layout: ``crawler.frontier.redis.lua_keys.QUEUED``.
"""

from __future__ import annotations

import json
import re
from typing import Final

from crawler.frontier.entries import Entry
from crawler.frontier.hosts import host_key
from crawler.frontier.redis.lua_keys import fingerprint
from crawler.sieve.redis import text

__all__ = ["ROBOTS_CLASS", "chunk_records", "entry_of", "fingerprint", "is_chunk", "member_tail",
           "queued_member", "text"]  # fmt: skip

ROBOTS_CLASS: Final = "2"  # the class of a ROBOTS entry's record: its host's robots.txt to fetch
_DEFAULT_PORTS: Final = (("http://", ":80"), ("https://", ":443"))
_HEAD: Final = 7  # a record's class and id
_ELEMENTS: Final = re.compile("\n(?! )")  # where a chunk's next element starts


def _origin(host: str) -> str:
    """A host key (``scheme://host:port``) as URLs spell their origin: no default port."""
    for scheme, port in _DEFAULT_PORTS:
        if host.startswith(scheme) and host.endswith(port):
            return host[: -len(port)]
    return host


def _short(url: str, origin: str) -> str:
    if url.startswith(origin) and url.startswith("/", len(origin)):
        return url[len(origin) :]
    return "!" + url if url[:1] in ("/", "!") else url


def _long(short: str, origin: str) -> str:
    if short[:1] == "/":
        return origin + short
    return short[1:] if short[:1] == "!" else short


def member_tail(entry: Entry) -> str:
    """The tail of an entry, queued on its URL's host (`host_key`). ValueError for a key or URL
    with a newline (normalized URLs have none)."""
    if "\n" in entry.key or "\n" in entry.url:
        raise ValueError(f"a frontier key or URL cannot hold a newline: {entry.key!r}")
    origin = _origin(host_key(entry.url))
    element = fingerprint(entry.key) + _short(entry.key, origin)
    if entry.url != entry.key:
        element += "\n " + _short(entry.url, origin)
    parent = None if entry.parent is None else _short(entry.parent, origin)
    context = [entry.depth, parent, entry.retries, entry.redirects, entry.sitemap]
    return json.dumps(context, separators=(",", ":")) + "\n" + element


def entry_of(host: str, record: str, priority: float) -> Entry:
    """The Entry of a record of `host`'s queue."""
    context, _, element = record[_HEAD:].partition("\n")
    key, newline, url = element[11:].partition("\n")
    origin = _origin(host)
    key = _long(key, origin)
    url = _long(url[1:], origin) if newline else key
    depth, parent, retries, redirects, sitemap = json.loads(context)
    parent = None if parent is None else _long(parent, origin)
    return Entry(url=url, key=key, depth=depth, parent=parent,
                 retries=retries, redirects=redirects, sitemap=sitemap,
                 priority=priority)  # fmt: skip


def queued_member(found: str) -> str:
    """The member of ``q:{host}`` holding an entry, from what ``qk:{host}`` says of it (as the
    scripts' ``queued_member``)."""
    return "1" + found if len(found) == _HEAD - 1 else found


def is_chunk(member: str) -> bool:
    """Whether a member of ``q:{host}`` is a chunk (its entries in ``ql:{host}:{id}``), not an
    inline entry."""
    return len(member) == _HEAD


def chunk_records(member: str, chunk: str | None) -> list[str]:
    """The records of a queue member: a chunk's (`chunk`: its field of ``ql:{host}``) or an
    inline entry's (`chunk` None)."""
    if chunk is None:
        return [member]
    context, *elements = _ELEMENTS.split(chunk)
    return [f"{member}{context}\n{element}" for element in elements]
