"""What a crawl produces: one immutable `CrawlResult` per URL, and the running `CrawlStats`."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CrawlResult", "CrawlStats"]


@dataclass(frozen=True, slots=True)
class CrawlResult:
    """The record of one fetched, failed or refused URL.

    `body` and `headers` are there for library users (`async for result in crawler.crawl(...)`);
    they are left out of the JSON Lines output. `text` and `markdown`, the main content of an
    HTML page (`crawler.parse.extract`), are read only when `[output] text` / `markdown` asks
    for them, and written to the JSON Lines only then (null for a page that is not HTML), with
    `text_truncated`: true when they stop before the main content's end (they are bounded by
    the page's size, `crawler.parse.extract.limit_for`). A PDF read with `[parse] pdf` has
    them too (its pages apart: `crawler.parse.pdf.page`), and `pages`, its page count, which
    the JSON Lines record holds only for a PDF. `meta`, an HTML page's metadata
    (`[output] meta`), and `fields` / `fields_error`, what the ``[[extract]]`` rules and the
    extract hook found and what failed of them (`crawler.parse.yields`), likewise: read and
    written only when asked.
    """

    url: str
    key: str
    status: int | None
    depth: int
    parent: str | None
    fetched_at: str
    elapsed_ms: float | None = None
    content_type: str | None = None
    size: int = 0
    title: str | None = None
    links: int = 0
    new_links: int = 0
    location: str | None = None
    canonical: str | None = None
    error: str | None = None
    content_hash: str | None = None  # content dedup (crawler.content), HTML pages only
    duplicate_of: str | None = None
    simhash: str | None = None
    near_duplicate_of: str | None = None
    relevance: float | None = None  # the page's relevance in a focused crawl, else None
    rendered: bool = False  # read from the DOM a headless browser rendered (crawler.render)
    unchanged: bool = False  # a recrawl's 304 Not Modified: no body, links not followed
    text: str | None = field(default=None, repr=False)
    markdown: str | None = field(default=None, repr=False)
    text_truncated: bool = False
    pages: int | None = None  # a PDF's page count ([parse] pdf), else None
    meta: dict[str, Any] | None = field(default=None, repr=False)
    fields: dict[str, Any] | None = field(default=None, repr=False)
    fields_error: str | None = None
    body: bytes = field(default=b"", repr=False, compare=False)
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False, compare=False)

    @property
    def ok(self) -> bool:
        """True for a response that is not an HTTP error and has no crawler error."""
        return self.error is None and self.status is not None and self.status < 400

    def to_dict(
        self, *, text: bool = False, markdown: bool = False, meta: bool = False,
        fields: bool = False,
    ) -> dict[str, Any]:  # fmt: skip
        """The JSON Lines record; `text` / `markdown` / `meta` / `fields`: with those fields
        (`fields`: and `fields_error`)."""
        record: dict[str, Any] = {
            "url": self.url,
            "status": self.status,
            "depth": self.depth,
            "parent": self.parent,
            "content_type": self.content_type,
            "size": self.size,
            "elapsed_ms": self.elapsed_ms,
            "fetched_at": self.fetched_at,
            "title": self.title,
            "links": self.links,
            "new_links": self.new_links,
            "rendered": self.rendered,
            "location": self.location,
            "canonical": self.canonical,
            "error": self.error,
            "content_hash": self.content_hash,
            "duplicate_of": self.duplicate_of,
            "simhash": self.simhash,
            "near_duplicate_of": self.near_duplicate_of,
            "relevance": self.relevance,
            "unchanged": self.unchanged,
        }
        if self.pages is not None:
            record["pages"] = self.pages
        if text:
            record["text"] = self.text
        if markdown:
            record["markdown"] = self.markdown
        if text or markdown:
            record["text_truncated"] = self.text_truncated
        if meta:
            record["meta"] = self.meta
        if fields:
            record["fields"] = self.fields
            record["fields_error"] = self.fields_error
        return record

    def to_json(
        self, *, text: bool = False, markdown: bool = False, meta: bool = False,
        fields: bool = False,
    ) -> str:  # fmt: skip
        record = self.to_dict(text=text, markdown=markdown, meta=meta, fields=fields)
        return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


@dataclass(slots=True)
class CrawlStats:
    """Counters the engine keeps while crawling (mutable; `as_dict()` gives a snapshot)."""

    pages: int = 0
    bytes: int = 0
    status_classes: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    retries: int = 0
    robots_refused: int = 0
    robots_fetches: int = 0
    scope_refused: Counter[str] = field(default_factory=Counter)  # links refused, by reason
    over_limit: int = 0
    duplicates: int = 0
    links_seen: int = 0
    admitted: int = 0
    dropped_full: int = 0
    exact_duplicates: int = 0  # pages whose content an earlier page had (crawler.content)
    near_duplicates: int = 0  # pages within the near distance of an earlier page
    scored: int = 0  # HTML pages given a relevance (a focused crawl)
    relevant: int = 0  # of them, those at or above the scorer's threshold
    unchanged: int = 0  # a recrawl's 304 results
    started: float = 0.0
    elapsed: float = 0.0

    @property
    def out_of_scope(self) -> int:
        """Links the scope refused, all reasons together."""
        return sum(self.scope_refused.values())

    @property
    def host_down(self) -> int:
        """URLs not fetched: their host failed max_host_failures times in a row (their results'
        error kind is ``host_down``)."""
        return self.errors["host_down"]

    @property
    def harvest_rate(self) -> float | None:
        """The share of scored pages that were relevant; None when no page was scored."""
        return self.relevant / self.scored if self.scored else None

    def record(self, result: CrawlResult, count: int = 1) -> None:
        """Count a result (`count` -1: take one back, see `without`)."""
        self.pages += count
        self.bytes += count * result.size
        if result.status is not None:
            self.status_classes[f"{result.status // 100}xx"] += count
        if result.error is not None:
            kind = result.error.split(":", 1)[0]
            self.errors[kind] += count
            if kind == "robots":
                self.robots_refused += count
        if result.duplicate_of is not None:
            self.exact_duplicates += count
        elif result.near_duplicate_of is not None:
            self.near_duplicates += count
        if result.unchanged:
            self.unchanged += count

    def without(self, result: CrawlResult | None) -> dict[str, Any]:
        """`as_dict()` as if `result` had not been recorded: what a crawl saves when its
        consumer never came back for the result after it (the URL stays pending, and it is
        counted when it is fetched again)."""
        if result is None:
            return self.as_dict()
        self.record(result, -1)
        try:
            return self.as_dict()
        finally:
            self.record(result)

    def restore(self, saved: dict[str, Any]) -> None:
        """Continue counting from a saved `as_dict()` (a resumed crawl)."""
        for name in ("pages", "bytes", "retries", "robots_refused", "robots_fetches",
                     "over_limit", "duplicates", "links_seen", "admitted",
                     "dropped_full", "exact_duplicates", "near_duplicates", "scored",
                     "relevant", "unchanged"):  # fmt: skip
            setattr(self, name, int(saved.get(name, 0)))
        self.status_classes = Counter(saved.get("status_classes", {}))
        self.errors = Counter(saved.get("errors", {}))
        self.scope_refused = Counter(saved.get("scope_refused", {}))
        self.elapsed = float(saved.get("elapsed_s", 0.0))

    def as_dict(self) -> dict[str, Any]:
        rate = self.pages / self.elapsed if self.elapsed > 0 else 0.0
        return {
            "pages": self.pages,
            "bytes": self.bytes,
            "status_classes": dict(sorted((+self.status_classes).items())),
            "errors": dict(sorted((+self.errors).items())),
            "retries": self.retries,
            "robots_refused": self.robots_refused,
            "host_down": self.host_down,
            "robots_fetches": self.robots_fetches,
            "out_of_scope": self.out_of_scope,
            "scope_refused": dict(sorted((+self.scope_refused).items())),
            "over_limit": self.over_limit,
            "duplicates": self.duplicates,
            "links_seen": self.links_seen,
            "admitted": self.admitted,
            "dropped_full": self.dropped_full,
            "exact_duplicates": self.exact_duplicates,
            "near_duplicates": self.near_duplicates,
            "scored": self.scored,
            "relevant": self.relevant,
            "unchanged": self.unchanged,
            "harvest_rate": None if (h := self.harvest_rate) is None else round(h, 4),
            "elapsed_s": round(self.elapsed, 3),
            "pages_per_s": round(rate, 2),
        }
