"""From response bytes to a lexbor tree, safely.

`parse_markup` decides whether a body is HTML and decodes it to UTF-8 (`crawler.parse.sniff`),
defuses pathological markup (`crawler.parse.defuse`: absurd nesting, tag floods), parses it with
lexbor and reads what the crawl needs from the tree into a `Markup` record of plain values
(`crawler.parse.links` interprets them): the links, metas, title and, when asked, the page's text
here, each link's anchor text and context in `crawler.parse.anchors`. The steps are separate
functions because they run in different places: lexbor releases the GIL while it parses, so for
big bodies the crawl runs `parse_tree` in a parse thread (`crawler.parse.thread`) and `prepare` /
`read_tree`, which hold the GIL anyway, on the event loop. It never raises on what a server
sends.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urljoin

from selectolax.lexbor import LexborHTMLParser, LexborNode, SelectolaxError

from crawler.parse.anchors import Contexts, collapse, link_details
from crawler.parse.defuse import DEPTH_LIMIT, MAX_TAGS, defuse
from crawler.parse.sniff import decode, is_html
from crawler.parse.tags import tag_ids
from crawler.urls.syntax import STRIP, cut_fragment

if TYPE_CHECKING:
    from crawler.parse.yields import Yields

__all__ = [
    "BODY_MAX_CHARS",
    "CONTENT_MAX_CHARS",
    "DEPTH_LIMIT",
    "HEADINGS_MAX_CHARS",
    "MAX_TAGS",
    "SLOW_PARSE_SECONDS",
    "TITLE_MAX_CHARS",
    "Main",
    "Markup",
    "parse_markup",
    "parse_tree",
    "prepare",
    "read_tree",
    "refresh_url",
]  # fmt: skip

logger = logging.getLogger(__name__)

SLOW_PARSE_SECONDS = 1.0
"""A parse that takes longer is logged (a typical page parses in ~1 ms per 100 KB)."""

TITLE_MAX_CHARS = 1000
"""Longest title kept; longer ones are cut (after whitespace is collapsed)."""
HEADINGS_MAX_CHARS = 10_000
"""Longest h1-h6 text kept for a page."""
BODY_MAX_CHARS = 100_000
"""Longest visible body text kept for a page."""
CONTENT_MAX_CHARS = 1_000_000
"""Longest main-content text kept for a page (its content fingerprint's input)."""

# One whole-tree pass finds the links, the robots meta tags and the first <base href>, in
# document order. "[href]" also matches <link>, <use>...: sorted out by tag id, which is cheaper
# than lexbor matching four selectors per element (~40% of the pass on a typical page). Lexbor
# lists an element once per selector of the list it matches (a <meta name href>, twice: harmless,
# and ":not([href])" would cost the pass ~5%); the text pass's selectors are kept disjoint.
_TREE_CSS = "[href], meta, frame[src], iframe[src]"
_CANONICAL_CSS = 'link[rel~="canonical" i][href]'

_A, _AREA, _META, _BASE = tag_ids("a", "area", "meta", "base")
_LINK_TAGS = frozenset((_A, _AREA))
_FRAME_TAGS = frozenset(tag_ids("frame", "iframe"))  # their src: a page of the site, often
(_FRAME,) = tag_ids("frame")
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_HEADING_TAGS = frozenset(tag_ids(*_HEADINGS))
# With `text`, the same pass finds the headings too (one more pass would cost more than the
# longer selector); a heading that is a link is listed once, as a link.
_TEXT_TREE_CSS = f"{_TREE_CSS}, :is({', '.join(_HEADINGS)}):not([href])"
# With metadata, the same pass finds its elements (`crawler.parse.yields.meta.META_CSS`): the
# scripts and the [itemscope] elements the selectors above do not list already (an element is
# listed once per selector it matches: a link twice would be counted twice).
_META_CSS = f"{_TREE_CSS}, script[type], [itemscope]:not([href], [src], meta)"
_TEXT_META_CSS = (
    f"{_TEXT_TREE_CSS}, script[type], [itemscope]:not([href], [src], meta, {', '.join(_HEADINGS)})"
)
# A refresh's content: a time (digits and dots), then ";", "," or whitespace, and the URL,
# maybe after "url=" and in quotes (the HTML standard's "shared declarative refresh steps").
_REFRESH = re.compile(
    r"[\t\n\f\r ]*(?=[0-9.])[0-9.]*(?:[\t\n\f\r ]*[;,]|[\t\n\f\r ])[\t\n\f\r ]*"
    r"(?:url[\t\n\f\r ]*=[\t\n\f\r ]*)?(['\"]?)(.*)",
    re.IGNORECASE | re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class Markup:
    """What a body holds for the crawl, as plain values (the lexbor tree is not kept).

    `hrefs`: every a/area href, frame/iframe src and <meta http-equiv=refresh> URL in document
    order, then a frameset's <noframes> links (C0 controls and spaces stripped);
    `nofollow`: the indices in `hrefs` of links with rel=nofollow; `metas`: (lowercased name,
    content) of each <meta name>; `base_href`: the first <base href> anywhere;
    `canonical_href`: the first rel=canonical link in <head>; `title`: the first <title>
    (<head>'s first), whitespace collapsed, at most TITLE_MAX_CHARS.
    Empty when the body is not HTML or could not be parsed.

    Read only when asked (a focused crawl): `anchors`, per distinct href (fragment cut, as in
    `crawler.urls.syntax.cut_fragment`) the (anchor text, rel, text around it) of its first
    occurrence with an anchor text (else of its first); `text`, the page's (h1-h6 text, main
    content text, whitespace collapsed). Read only when asked (content dedup): `content`, the
    main content's text. Read only when asked (`--text`, `--markdown`): `main_text` and
    `markdown`, the main content as plain text and as markdown, and `main_truncated`, whether
    they were cut to stay within their bound (`crawler.parse.extract.limit_for`). The main
    content is chosen by `crawler.parse.extract` (once a page, whichever of these asked for it).
    Read only when asked (`crawler.parse.yields`): `meta`, the page's metadata; `fields`, what
    the ``[[extract]]`` rules and the extract hook found, `fields_error` what failed.
    """

    is_html: bool
    charset: str | None = None
    hrefs: tuple[str, ...] = ()
    nofollow: tuple[int, ...] = ()
    metas: tuple[tuple[str, str], ...] = ()
    base_href: str | None = None
    canonical_href: str | None = None
    title: str | None = None
    anchors: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    text: tuple[str, str] | None = None
    content: str | None = None
    main_text: str | None = None
    markdown: str | None = None
    main_truncated: bool = False
    meta: dict[str, Any] | None = None
    fields: dict[str, Any] | None = None
    fields_error: str | None = None


NOT_HTML = Markup(is_html=False)


def parse_markup(
    body: bytes,
    url: str,
    content_type: str | None = None,
    *,
    anchors: bool = False,
    text: bool = False,
    content: bool = False,
    main: Main = None,
    yields: Yields | None = None,
) -> Markup:
    """Sniff, decode, defuse, parse and read one response body fetched from `url` (its links
    made absolute in markdown); `anchors`, `text`, `content`, `main`, `yields` as for
    `read_tree`."""
    prepared = prepare(body, url, content_type)
    if prepared is None:
        return NOT_HTML
    charset, data = prepared
    tree = parse_tree(data, url)
    return read_tree(
        tree, charset, anchors=anchors, text=text, content=content, main=main, url=url,
        yields=yields,
    )  # fmt: skip


def prepare(
    body: bytes, url: str, content_type: str | None = None, *, strict: bool = False
) -> tuple[str, bytes] | None:
    """(charset, UTF-8 bytes safe to parse) of an HTML body; None if the body is not HTML.
    `strict`: see `crawler.parse.defuse.defuse`."""
    if not is_html(content_type, body):
        return None
    charset, data = decode(body, content_type)
    return charset, defuse(data, url, strict=strict)


def parse_tree(data: bytes, url: str) -> LexborHTMLParser | None:
    """Lexbor's tree of `prepare`d bytes (None if lexbor fails). Runs without the GIL."""
    started = time.perf_counter()
    try:
        tree = LexborHTMLParser(data)
    except (SelectolaxError, ValueError, MemoryError) as exc:  # the record survives a bad body
        logger.warning("cannot parse %s as HTML: %s", url, exc)
        return None
    elapsed = time.perf_counter() - started
    if elapsed > SLOW_PARSE_SECONDS:
        logger.warning(
            "%s: parsing %d bytes took %.1f s (markup built to be slow?)", url, len(data),
            elapsed,
        )  # fmt: skip
    return tree


Main = Literal["text", "markdown"] | None
"""What `read_tree` writes of the main content besides `text` / `content`: its plain text
("text"), its plain text and its markdown ("markdown"), or neither (None)."""


def read_tree(
    tree: LexborHTMLParser | None,
    charset: str,
    *,
    anchors: bool = False,
    text: bool = False,
    content: bool = False,
    main: Main = None,
    url: str = "",
    yields: Yields | None = None,
) -> Markup:
    """The `Markup` record of a parsed tree (an empty HTML one when there is no tree).

    `anchors`: also read each link's anchor text, rel and surrounding text; `text`: also read
    the page's headings and main content text (focus); `content`: also read its main content
    text (dedup); `main`: also write the main content as `main_text` (and `markdown`), its
    links made absolute against `url` and the page's <base href>; `yields`: also read the
    page's metadata and fields (`crawler.parse.yields`). The main content is read after
    everything else: choosing it strips scripts and boilerplate from `tree`."""
    if tree is None:
        return Markup(
            True, charset, text=("", "") if text else None, content="" if content else None,
            main_text="" if main else None, markdown="" if main == "markdown" else None,
        )  # fmt: skip
    details: dict[str, tuple[str, str, str]] | None = {} if anchors else None
    # the metadata's elements, found by the same pass (one more pass costs ~15% of a page)
    found_meta: list[LexborNode] | None = [] if yields is not None and yields.meta else None
    hrefs, nofollow, metas, base_href, framed, headings = _read_elements(
        tree, text, details, found_meta
    )
    if framed:
        _noframes_links(tree, hrefs, nofollow)
    head = tree.head or tree
    canonical_href = _canonical_href(head)
    title = _title(tree, head)
    yielded = None
    if yields is not None:  # before the main content's extraction strips scripts (JSON-LD)
        from crawler.parse.yields import read_yields

        yielded = read_yields(tree, yields, url, _base(url, base_href), found_meta)
    page_text = main_text = markdown = None
    truncated = False
    if text or content or main:
        # imported here: a crawl that reads no page text (the default) does not load it
        from crawler.parse.extract.page import extract

        found = extract(
            tree, _base(url, base_href), markdown=main == "markdown", layout=main is not None
        )
        if text:
            page_text = (
                collapse(" ".join(headings), HEADINGS_MAX_CHARS),
                collapse(found.words, BODY_MAX_CHARS),
            )
        if main:
            main_text, markdown, truncated = found.text, found.markdown, found.truncated
    markup = Markup(
        True, charset, tuple(hrefs), tuple(nofollow), tuple(metas), base_href, canonical_href,
        title, details if details is not None else {}, page_text,
        found.words[:CONTENT_MAX_CHARS] if content else None, main_text, markdown, truncated,
    )  # fmt: skip
    if yielded is None:
        return markup
    return dataclasses.replace(
        markup, meta=yielded.meta, fields=yielded.fields, fields_error=yielded.fields_error
    )


def _base(url: str, base_href: str | None) -> str:
    """The URL a page's relative links resolve against: its <base href>, else its own."""
    if not base_href:
        return url
    try:
        return urljoin(url, base_href)
    except ValueError:  # a malformed <base href> (a bad IPv6 literal): the page's own URL
        return url


# What `_read_elements`' pass found: (hrefs, nofollow, metas, base_href) as in `Markup`, then
# whether the page is a frameset (a <frame src>: its <noframes> links are read too) and, with
# `text`, the h1-h6 texts. A plain tuple: a NamedTuple cost ~0.8 us a page more (its making and
# field reads; a page's pass is ~200 us).
_Found = tuple[list[str], list[int], list[tuple[str, str]], str | None, bool, list[str]]


def _read_elements(
    tree: LexborHTMLParser,
    text: bool,
    details: dict[str, tuple[str, str, str]] | None,
    found_meta: list[LexborNode] | None = None,
) -> _Found:
    """The tree's one whole pass (`_TREE_CSS`; with `text`, `_TEXT_TREE_CSS`), in document
    order: links, frames, metas and the first <base href>; with `text`, the headings too; with
    `details` (`anchors`), each href's anchor details put there; with `found_meta`, the
    elements the page's metadata is read from (`crawler.parse.yields.meta.META_CSS`) appended
    to it, but for [itemscope] frames. The crawl's per-element loop: what it fills are locals
    (no attribute lookup per element)."""
    hrefs: list[str] = []
    nofollow: list[int] = []
    metas: list[tuple[str, str]] = []
    contexts = Contexts()
    headings: list[str] = []
    base_href: str | None = None
    framed = False
    css = _TEXT_TREE_CSS if text else _TREE_CSS
    if found_meta is not None:
        css = _TEXT_META_CSS if text else _META_CSS
    for node in tree.css(css):
        tag_id = node.tag_id
        if tag_id in _LINK_TAGS:  # svg:a too, as browsers follow it
            attrs = node.attributes  # one dict: cheaper than two node.attrs lookups
            if found_meta is not None and "itemscope" in attrs:
                found_meta.append(node)
            rel = attrs.get("rel")
            if rel and "nofollow" in rel.lower().split():
                nofollow.append(len(hrefs))
            href = attrs.get("href") or attrs.get("xlink:href")  # SVG 1.1 links have the latter
            hrefs.append(href.strip(STRIP) if href else "")
            if details is not None:  # a page repeats its links: read each href's once
                cut = cut_fragment(hrefs[-1])
                known = details.get(cut)
                if known is None or not known[0]:
                    detail = link_details(node, rel, contexts)
                    if known is None or detail[0]:
                        details[cut] = detail
        elif tag_id in _FRAME_TAGS:
            src = node.attributes.get("src")
            if src:  # a frameset's pages are only reached through their frames
                hrefs.append(src.strip(STRIP))
                framed = framed or tag_id == _FRAME
        elif tag_id == _META:
            _read_meta(node.attributes, metas, hrefs)
            if found_meta is not None:
                found_meta.append(node)
        elif tag_id == _BASE and base_href is None:
            base_href = node.attributes.get("href") or ""
        elif text and tag_id in _HEADING_TAGS:  # "[href]" matches <link>, <use>... too
            headings.append(node.text(deep=True, separator=" "))
            if found_meta is not None and "itemscope" in node.attributes:
                found_meta.append(node)
        elif found_meta is not None:  # a script, an [itemscope] (or a <link>: sorted out there)
            found_meta.append(node)
    return hrefs, nofollow, metas, base_href, framed, headings


def _read_meta(
    attrs: dict[str, str | None], metas: list[tuple[str, str]], hrefs: list[str]
) -> None:
    """Read one <meta>'s attributes: a <meta name> into `metas`, a refresh's URL into `hrefs`."""
    name = attrs.get("name")
    if name is not None:
        metas.append((name.strip().lower(), attrs.get("content") or ""))
    if (attrs.get("http-equiv") or "").strip().lower() == "refresh":
        target = refresh_url(attrs.get("content") or "")
        if target:  # where the page sends the browser: a link of the page
            hrefs.append(target)


def _canonical_href(head: LexborHTMLParser | LexborNode) -> str | None:
    """The href of the first rel=canonical link in `head` (C0 controls and spaces stripped)."""
    canonical = head.css_first(_CANONICAL_CSS)
    return (canonical.attrs.get("href") or "").strip(STRIP) if canonical else None


def _title(tree: LexborHTMLParser, head: LexborHTMLParser | LexborNode) -> str | None:
    """The first <title> (`head`'s first), whitespace collapsed, at most TITLE_MAX_CHARS."""
    title_node = head.css_first("title") or tree.css_first("title")
    if title_node is None:
        return None
    raw = title_node.text(deep=True).lstrip()[: 4 * TITLE_MAX_CHARS]
    return " ".join(raw.split())[:TITLE_MAX_CHARS].rstrip() or None


def _noframes_links(tree: LexborHTMLParser, hrefs: list[str], nofollow: list[int]) -> None:
    """Append the a/area hrefs of a frameset page's <noframes> elements to `hrefs` (and their
    rel=nofollow indices to `nofollow`): the parser keeps that markup as raw text, but it links
    what a frameless client reads (old javadoc's "Non-frame version"). It is defused and
    parsed as a body of its own; only pages with a <frame src> pay for this."""
    for node in tree.css("noframes"):
        raw = node.text(deep=True)
        if "href" not in raw.lower():
            continue
        inner = parse_tree(defuse(raw.encode(), "a <noframes> element"), "a <noframes> element")
        for link in inner.css("[href]") if inner is not None else ():
            if link.tag_id in _LINK_TAGS:
                attrs = link.attributes
                rel = attrs.get("rel")
                if rel and "nofollow" in rel.lower().split():
                    nofollow.append(len(hrefs))
                href = attrs.get("href") or attrs.get("xlink:href")
                hrefs.append(href.strip(STRIP) if href else "")


def refresh_url(content: str) -> str | None:
    """The URL of a `<meta http-equiv=refresh>` content ("5; url='/next'"), read as the HTML
    standard's declarative refresh steps do; None when it only reloads the page."""
    match = _REFRESH.match(content)
    if match is None:
        return None
    quote, url = match.group(1), match.group(2)
    if quote:
        url = url.split(quote, 1)[0]
    url = url.strip(STRIP)
    return url or None
