"""Sitemaps (sitemaps.org protocol 0.9): the URLs a site lists, to seed a crawl.

With `[scope] use_sitemaps = true`, the `Sitemap:` lines of each host's robots.txt are fetched
like pages (politeness and robots rules apply), and parsed here with defusedxml (sitemaps come
from untrusted servers: no entity expansion, no external entities). A `<sitemapindex>` yields
more sitemaps, a `<urlset>` yields page URLs; both go through canonicalization, scope and the
Sieve like any link. Gzipped sitemaps (``.xml.gz``) are inflated within the body cap. The
protocol's text format (a URL a line) and RSS 2.0 / Atom feeds are read as sitemaps too.
"""

from __future__ import annotations

import io
import re
import zlib
from dataclasses import dataclass
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import iterparse

from crawler.errors import SitemapError

__all__ = ["MAX_URLS", "Sitemap", "SitemapError", "parse_sitemap"]

MAX_URLS = 50_000  # the protocol's limit per file


@dataclass(frozen=True, slots=True)
class Sitemap:
    is_index: bool  # True: `locs` are more sitemaps; False: page URLs
    locs: tuple[str, ...]
    truncated: bool  # more than MAX_URLS entries: the rest was left out


def _inflate(body: bytes, cap: int) -> bytes:
    z = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = z.decompress(body, cap + 1)
    except zlib.error as exc:
        raise SitemapError(f"bad gzip data: {exc}") from None
    if len(out) > cap:
        raise SitemapError(f"inflates past the cap of {cap} bytes")
    if not z.eof:
        raise SitemapError("bad gzip data: truncated")
    return out


def parse_sitemap(body: bytes, *, max_bytes: int = 50 * 1024 * 1024) -> Sitemap:
    """Parse a sitemap or sitemap index (gzipped or not). Raises SitemapError.

    The XML is read as a stream (defusedxml's iterparse, each element dropped once read) and the
    reading stops at the `MAX_URLS`-th URL: a sitemap of the body cap (10 MiB, ~200,000
    entries) costs a few MiB and the time of its first 50,000 entries, not a tree of it all.
    The protocol's other formats are read too: a text file of URLs, one a line, and RSS 2.0 or
    Atom feeds (each item's link); whitespace before the XML declaration is skipped."""
    if body[:2] == b"\x1f\x8b":
        body = _inflate(body, max_bytes)
    start = _LEADING.match(body).end()  # type: ignore[union-attr]  # it matches "" too
    if body[start : start + 1] != b"<" and not body.startswith(_UTF16_BOMS):
        return _text_sitemap(body[start:])
    if start:
        body = body[start:]  # expat refuses an XML declaration after whitespace
    kind = ""
    locs: list[str] = []
    truncated = False
    item_depth = 0
    item_has_loc = False
    item, loc = "", ""
    path: list[Element] = []  # the elements started and not yet ended
    try:
        for event, element in iterparse(io.BytesIO(body), ("start", "end"), forbid_dtd=True):
            name = element.tag.rsplit("}", 1)[-1]
            found = ""
            if event == "start":
                path.append(element)
                depth = len(path)
                if depth == 1:
                    kind = name
                    if kind not in _ITEMS:
                        raise SitemapError(f"not a sitemap: root element <{kind}>")
                    item_depth, item, loc = _ITEMS[kind]
                if depth == item_depth:
                    item_has_loc = name != item  # other elements: no URL
                elif (
                    depth == item_depth + 1
                    and kind == "feed"
                    and name == loc
                    and (element.get("rel", "alternate").strip().lower() == "alternate")
                ):
                    found = (element.get("href") or "").strip()  # an Atom entry's link
                if not found:
                    continue
            else:
                path.pop()
                depth = len(path)
                if depth == item_depth and name == loc and kind != "feed":  # an item's <loc>
                    found = (element.text or "").strip()
                if path:  # read: dropped (the siblings before it were, so it is the first)
                    path[-1].remove(element)
            if found and not item_has_loc:  # an item's first URL
                item_has_loc = True
                if len(locs) == MAX_URLS:
                    truncated = True
                    break
                locs.append(found)
    except SitemapError:
        raise
    except (ParseError, DefusedXmlException, LookupError, ValueError) as exc:
        # LookupError, ValueError: an XML declaration's encoding Python lacks or cannot use
        raise SitemapError(f"not a sitemap: {exc}") from None
    if not kind:
        raise SitemapError("not a sitemap: no XML element")
    return Sitemap(is_index=kind == "sitemapindex", locs=tuple(locs), truncated=truncated)


# Per root element: (the depth of its items, an item's name, the name of an item's URL).
_ITEMS = {
    "urlset": (2, "url", "loc"),
    "sitemapindex": (2, "sitemap", "loc"),
    "rss": (3, "item", "link"),  # <rss><channel><item><link>
    "feed": (2, "entry", "link"),  # Atom: <feed><entry><link href>
}
_LEADING = re.compile(rb"(?:\xef\xbb\xbf)?[ \t\r\n]*")
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


# A text sitemap's line that starts (after blanks) as an http(s) URL: only those are decoded (a
# body of short junk lines, 1,000s of them per KB gzipped, is never made a list of lines).
_URL_LINE = re.compile(rb"^[ \t\f\v]*https?://[^\r\n]*", re.IGNORECASE | re.MULTILINE)


def _text_sitemap(body: bytes) -> Sitemap:
    """A text sitemap: one absolute http(s) URL a line (UTF-8); other lines are left out."""
    locs: list[str] = []
    for match in _URL_LINE.finditer(body):
        if len(locs) == MAX_URLS:
            return Sitemap(is_index=False, locs=tuple(locs), truncated=True)
        locs.append(match.group().decode("utf-8", "replace").strip())
    if not locs:
        raise SitemapError("not a sitemap: neither XML nor a list of URLs")
    return Sitemap(is_index=False, locs=tuple(locs), truncated=False)
