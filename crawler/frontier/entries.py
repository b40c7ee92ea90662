"""The records that flow through the frontier, and how a queued one is packed to save memory.

A queued entry is not kept as an :class:`Entry` but as two items of its host's deque:

1. the *head*: the URL with the host's origin cut off when its key is the URL itself (the usual
   case), else a ``(url, key)`` pair (one string twice when they are equal);
2. the *context*: ``(depth, parent, retries, redirects, sitemap)``, the same tuple object for
   consecutive entries with equal fields (the links of one page).

The priority is not packed: the host's queue keeps it (once per queue while all its entries
share one priority; with each entry otherwise), so the links of one page share their context
whatever their scores. `Packer.unpack` rebuilds an Entry equal to the one packed, given its
priority: about 100 bytes less per queued URL (1M queued URLs: 209 MB RSS instead of 304 MB).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from crawler.errors import Blame

__all__ = ["Context", "Entry", "EntryKind", "Outcome", "Packer"]


class EntryKind(enum.Enum):
    PAGE = "page"  # a URL of the crawl
    ROBOTS = "robots"  # the host's robots.txt, handed out before its first page
    REFUSED = "refused"  # a page robots.txt disallows: record it, do not fetch it


@dataclass(frozen=True, slots=True)
class Entry:
    url: str  # the URL to fetch (as normalized)
    key: str  # its canonical dedup key (== url for ROBOTS entries)
    depth: int = 0
    parent: str | None = None
    retries: int = 0
    redirects: int = 0  # redirect hops that led to this URL
    kind: EntryKind = EntryKind.PAGE
    sitemap: bool = False  # a sitemap (parsed as XML for more URLs), not a page
    priority: float = 0.0  # best-first order within a host: higher first, ties first in first out


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a fetch tells the host's politeness (``hosts.PolitenessRules.response``)."""

    status: int | None = None  # HTTP status; None when no response was received
    latency: float | None = None  # seconds to response headers (feeds the adaptive delay)
    retry_after: str | None = None  # raw Retry-After header value
    failed: bool = False  # the host is in trouble (DNS, refused, ...): back it off now
    blame: Blame | None = None  # a failure's class (crawler.errors); None: from status/failed
    attempt: int = 0  # the entry's retries: a URL's suspect failure counts on its first attempt


Context = tuple[int, "str | None", int, int, bool]


def _setter(name: str) -> Callable[[Entry, object], None]:
    setter: Callable[[Entry, object], None] = getattr(Entry, name).__set__
    return setter


# Rebuilding an Entry fills its slots directly: the frozen dataclass __init__ (object.__setattr__
# per field) costs twice as much, on the path of every get(). Keep in step with Entry's fields.
if tuple(f.name for f in fields(Entry)) != (
    "url", "key", "depth", "parent", "retries", "redirects", "kind", "sitemap", "priority",
):  # fmt: skip
    raise ImportError("Entry's fields changed: update crawler.frontier.entries.Packer.unpack")
_new: Final = object.__new__
_SETTERS: Final = tuple(map(_setter, ("url", "key", "depth", "parent", "retries", "redirects",
                                      "sitemap", "priority", "kind")))  # fmt: skip


class Packer:
    """Packs entries into (head, context) records and back; remembers the last context."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: Context = (0, None, 0, 0, False)

    def pack(self, entry: Entry, prefix: str) -> tuple[str | tuple[str, str], Context]:
        """The record of `entry` (but its priority) in the queue of the host whose origin is
        `prefix`."""
        url, key = entry.url, entry.key
        head: str | tuple[str, str]
        if key is url or key == url:
            head = url[len(prefix) :] if url.startswith(prefix) else (url, url)
        else:
            head = (url, key)
        context = (entry.depth, entry.parent, entry.retries, entry.redirects, entry.sitemap)
        if context == self._last:
            context = self._last
        else:
            self._last = context
        return head, context

    @staticmethod
    def unpack(
        head: Any, context: Context, prefix: str, kind: EntryKind, priority: float = 0.0
    ) -> Entry:
        """The Entry of a record, as ``Entry(...)`` would build it (key is url when equal)."""
        if head.__class__ is str:
            url = key = prefix + head
        else:
            url, key = head
        entry: Entry = _new(Entry)
        (
            set_url,
            set_key,
            set_depth,
            set_parent,
            set_retries,
            set_redirects,
            set_sitemap,
            set_priority,
            set_kind,
        ) = _SETTERS
        set_url(entry, url)
        set_key(entry, key)
        depth, parent, retries, redirects, sitemap = context
        set_depth(entry, depth)
        set_parent(entry, parent)
        set_retries(entry, retries)
        set_redirects(entry, redirects)
        set_sitemap(entry, sitemap)
        set_priority(entry, priority)
        set_kind(entry, kind)
        return entry

    def __repr__(self) -> str:
        return f"<Packer last={self._last!r}>"
