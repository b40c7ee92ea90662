"""Sitemaps (sitemaps.org protocol 0.9): the URLs a site lists, to seed a crawl.

With `[scope] use_sitemaps = true`, the `Sitemap:` lines of each host's robots.txt are fetched
like pages (politeness and robots rules apply), and parsed here with defusedxml (sitemaps come
from untrusted servers: no entity expansion, no external entities). A `<sitemapindex>` yields
more sitemaps, a `<urlset>` yields page URLs; both go through canonicalization, scope and the
Sieve like any link. Gzipped sitemaps (``.xml.gz``) are inflated within the body cap.
"""

from __future__ import annotations

import io
import zlib
from dataclasses import dataclass
from xml.etree.ElementTree import ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import iterparse

__all__ = ["MAX_URLS", "Sitemap", "SitemapError", "parse_sitemap"]

MAX_URLS = 50_000  # the protocol's limit per file


class SitemapError(ValueError):
    """The body is not a sitemap (bad XML, wrong root, forbidden XML features)."""


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

    The XML is read as a stream (defusedxml's iterparse, each entry dropped once read) and the
    reading stops at the `MAX_URLS`-th URL: a sitemap of the body cap (10 MiB, ~200,000
    entries) costs a few MiB and the time of its first 50,000 entries, not a tree of it all."""
    if body[:2] == b"\x1f\x8b":
        body = _inflate(body, max_bytes)
    kind = ""
    locs: list[str] = []
    truncated = False
    depth = 0
    item_has_loc = False
    root = None
    try:
        for event, element in iterparse(io.BytesIO(body), ("start", "end"), forbid_dtd=True):
            name = element.tag.rsplit("}", 1)[-1]
            if event == "start":
                depth += 1
                if depth == 1:
                    kind, root = name, element
                    if kind not in ("urlset", "sitemapindex"):
                        raise SitemapError(f"not a sitemap: root element <{kind}>")
                elif depth == 2:
                    item_has_loc = name not in ("url", "sitemap")  # other items: no URL
                continue
            depth -= 1
            if depth == 2 and name == "loc" and not item_has_loc:  # an item's first <loc>
                text = (element.text or "").strip()
                if text:
                    item_has_loc = True
                    if len(locs) == MAX_URLS:
                        truncated = True
                        break
                    locs.append(text)
            elif depth == 1 and root is not None:
                root.clear()  # the entry is read: drop it
    except (ParseError, DefusedXmlException) as exc:
        raise SitemapError(f"not a sitemap: {exc}") from None
    if not kind:
        raise SitemapError("not a sitemap: no XML element")
    return Sitemap(is_index=kind == "sitemapindex", locs=tuple(locs), truncated=truncated)
