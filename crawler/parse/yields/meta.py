"""A page's metadata: the `meta` object of a result (``--meta``, ``[output] meta``).

`read_meta` reads it off the lexbor tree the crawl already has, before the main content's
extraction strips scripts:

- ``description``: <meta name=description>, else og:description, else twitter:description;
- ``language``: <html lang>, else <meta http-equiv=content-language>, else JSON-LD inLanguage;
- ``author``: JSON-LD's author (its name), else <meta name=author>, else article:author;
- ``published`` / ``modified``: the first ISO 8601 date (maybe with a time) the page states,
  as it states it, from JSON-LD (datePublished / dateModified), else OpenGraph's
  article:published_time / article:modified_time (og:updated_time), else meta tags (DC, DC
  terms, ``date``, ``last-modified``...), else microdata; a date in another form is passed over;
- ``opengraph``: each og:*, twitter:* and OpenGraph object property (article:*, book:*,
  profile:*, music:*, video:*; fb:* and product:* too, as extruct reads them) -> its first
  value, from <meta property> or <meta name>;
- ``jsonld``: the items of its JSON-LD blocks (`crawler.parse.yields.jsonld`);
- ``microdata``: its microdata items (`crawler.parse.yields.microdata`);
- ``skipped``: what was left out, by reason -> count (empty when nothing was).

Bounded: MAX_META_TAGS <meta> tags read ("meta_over"), each value MAX_VALUE_CHARS.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from selectolax.lexbor import LexborHTMLParser, LexborNode

from crawler.parse.tags import tag_ids
from crawler.parse.yields.jsonld import read_jsonld
from crawler.parse.yields.microdata import read_microdata

__all__ = ["MAX_META_TAGS", "MAX_VALUE_CHARS", "META_CSS", "read_meta"]

META_CSS = "meta, script[type], [itemscope]"
"""The elements metadata is read from: one pass over the tree finds them all (the crawl's own
pass, `crawler.parse.markup`, finds them with its links)."""

MAX_META_TAGS = 10_000
"""<meta> tags read per page (a real page has tens)."""
MAX_VALUE_CHARS = 10_000
"""Longest value kept (a description, an OpenGraph value)."""

_OG_PREFIXES = (
    "og:", "twitter:", "article:", "book:", "profile:", "music:", "video:", "fb:", "product:",
)  # fmt: skip
_PUBLISHED = ("article:published_time", "og:published_time", "date", "dc.date",
              "dc.date.issued", "dc.date.created", "dcterms.issued", "dcterms.created",
              "dcterms.date", "citation_publication_date", "pubdate", "publishdate",
              "publish-date", "publish_date", "sailthru.date", "parsely-pub-date")  # fmt: skip
_MODIFIED = ("article:modified_time", "og:updated_time", "dc.date.modified", "dcterms.modified",
             "last-modified", "lastmod")  # fmt: skip
_ISO_DATE = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?"
)
_LD_TYPE = re.compile(r"application/ld\+json\s*(?:;.*)?", re.IGNORECASE)
_META, _SCRIPT = tag_ids("meta", "script")
_LD_SEARCH = 200  # JSON-LD objects looked through for a date or an author


def read_meta(
    tree: LexborHTMLParser, base: str, found: list[LexborNode] | None = None
) -> dict[str, Any]:
    """The `meta` object of a parsed page; `base`: what its relative URLs resolve against;
    `found`: its META_CSS elements in document order (found here when None; other elements
    among them are passed over)."""
    skipped: Counter[str] = Counter()
    metas: list[LexborNode] = []
    scripts: list[str] = []
    scopes: dict[int, LexborNode] = {}  # (an element matching two selectors is listed twice)
    for node in tree.css(META_CSS) if found is None else found:
        tag_id = node.tag_id
        if tag_id == _META:
            metas.append(node)
        attrs = node.attributes
        if "itemscope" in attrs:
            scopes.setdefault(node.mem_id, node)
        elif tag_id == _SCRIPT and _LD_TYPE.fullmatch((attrs.get("type") or "").strip()):
            scripts.append(node.text(deep=True))
    named, opengraph, language = _meta_tags(metas, skipped)
    jsonld = read_jsonld(scripts, skipped)
    microdata = read_microdata(list(scopes.values()), base, skipped) if scopes else []
    ld = _ld_objects(jsonld)
    lang = (tree.root.attributes.get("lang") or "").strip() if tree.root is not None else ""
    return {
        "description": named.get("description")
        or opengraph.get("og:description")
        or opengraph.get("twitter:description"),
        "language": lang or language or _ld_text(ld, "inLanguage"),
        "author": _ld_author(ld) or named.get("author") or opengraph.get("article:author"),
        "published": _date(ld, "datePublished", _PUBLISHED, named, opengraph, microdata),
        "modified": _date(ld, "dateModified", _MODIFIED, named, opengraph, microdata),
        "opengraph": opengraph,
        "jsonld": jsonld,
        "microdata": microdata,
        "skipped": dict(skipped),
    }


def _meta_tags(
    metas: list[LexborNode], skipped: Counter[str]
) -> tuple[dict[str, str], dict[str, str], str]:
    """(<meta name> -> first content, lowercased names; OpenGraph property -> first value;
    the http-equiv content-language)."""
    named: dict[str, str] = {}
    opengraph: dict[str, str] = {}
    language = ""
    if len(metas) > MAX_META_TAGS:
        skipped["meta_over"] += len(metas) - MAX_META_TAGS
        metas = metas[:MAX_META_TAGS]
    for node in metas:
        attrs = node.attributes
        content = attrs.get("content")
        if content is None:
            continue
        content = content.strip()[:MAX_VALUE_CHARS]
        prop = (attrs.get("property") or "").strip()
        name = (attrs.get("name") or "").strip().lower()
        for key in (prop, name):
            if key.lower().startswith(_OG_PREFIXES):
                opengraph.setdefault(key, content)
        if name and content:
            named.setdefault(name, content)
        equiv = (attrs.get("http-equiv") or "").strip().lower()
        if equiv == "content-language" and not language:
            language = content.split(",")[0].strip()
    return named, opengraph, language


def _ld_objects(items: list[Any]) -> list[dict[str, Any]]:
    """The JSON-LD objects to look through for a page's dates and author: each item, the items
    of its @graph, then the objects those hold one level down (an Article in a WebPage's
    mainEntity), at most _LD_SEARCH."""
    found: list[dict[str, Any]] = []
    level: list[Any] = list(items)
    for _ in range(3):
        below: list[Any] = []
        for item in level:
            if not isinstance(item, dict):
                continue
            if len(found) >= _LD_SEARCH:
                return found
            found.append(item)
            for value in item.values():
                below.extend(value if isinstance(value, list) else [value])
        level = below
    return found


def _ld_text(ld: list[dict[str, Any]], key: str) -> str | None:
    for obj in ld:
        value = obj.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()[:MAX_VALUE_CHARS]
    return None


def _ld_author(ld: list[dict[str, Any]]) -> str | None:
    """The first author a JSON-LD object names: a string, or a Person's / Organization's name."""
    for obj in ld:
        authors = obj.get("author")
        for author in authors if isinstance(authors, list) else [authors]:
            name = author.get("name") if isinstance(author, dict) else author
            if isinstance(name, str) and name.strip():
                return name.strip()[:MAX_VALUE_CHARS]
    return None


def _date(
    ld: list[dict[str, Any]],
    key: str,
    names: tuple[str, ...],
    named: dict[str, str],
    opengraph: dict[str, str],
    microdata: list[Any],
) -> str | None:
    """The first ISO 8601 date under `key` (JSON-LD, microdata) or `names` (meta tags)."""
    candidates: list[Any] = [obj.get(key) for obj in ld]
    candidates += [opengraph.get(name) or named.get(name) for name in names]
    candidates += _microdata_values(microdata, key)
    for value in candidates:
        if isinstance(value, str) and _ISO_DATE.fullmatch(value.strip()):
            return value.strip()[:MAX_VALUE_CHARS]
    return None


def _microdata_values(items: Iterable[Any], key: str) -> list[Any]:
    """The values of `key` in microdata items and their nested items, breadth first."""
    values: list[Any] = []
    level = list(items)
    while level and len(values) < _LD_SEARCH:
        below: list[Any] = []
        for item in level:
            if not isinstance(item, dict):
                continue
            props = item.get("properties") or {}
            value = props.get(key)
            values.extend(value if isinstance(value, list) else [value])
            for v in props.values():
                below.extend(v if isinstance(v, list) else [v])
        level = below
    return values
