"""From response bytes to a lexbor tree, safely.

`parse_markup` decides whether a body is HTML (the Content-Type, checked against binary file
signatures, or sniffed when it says nothing reliable), decodes it to UTF-8 (BOM > Content-Type
charset > <meta charset> > UTF-8), defuses pathological markup (`crawler.defuse`: absurd
nesting, tag floods), parses it with lexbor and reads what the crawl needs from the tree into a
`Markup` record of plain values (`crawler.links` interprets them). The steps are separate
functions because they run in different places: lexbor releases the GIL while it parses, so for
big bodies the crawl runs `parse_tree` in a parse thread (`crawler.parsing`) and `prepare` /
`read_tree`, which hold the GIL anyway, on the event loop. It never raises on what a server
sends.
"""

from __future__ import annotations

import codecs
import logging
import re
import time
from dataclasses import dataclass, field

from selectolax.lexbor import LexborHTMLParser, LexborNode, SelectolaxError
from w3lib.encoding import html_body_declared_encoding, http_content_type_encoding, read_bom

from crawler.defuse import DEPTH_LIMIT, MAX_TAGS, defuse
from crawler.urlsyntax import STRIP, cut_fragment

__all__ = [
    "ANCHOR_MAX_CHARS",
    "BODY_MAX_CHARS",
    "CONTENT_MAX_CHARS",
    "CONTEXT_BUDGET_CHARS",
    "CONTEXT_CLIMB",
    "CONTEXT_MAX_CHARS",
    "DEPTH_LIMIT",
    "HEADINGS_MAX_CHARS",
    "MAX_TAGS",
    "SIBLINGS",
    "SLOW_PARSE_SECONDS",
    "TITLE_MAX_CHARS",
    "Markup",
    "is_html",
    "parse_markup",
    "parse_tree",
    "prepare",
    "read_tree",
]  # fmt: skip

logger = logging.getLogger(__name__)

_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml", "application/vnd.wap.xhtml+xml"})
# Content-Types that say nothing reliable about the body: sniff it.
_SNIFF_TYPES = frozenset(
    {
        "",
        "text/plain",
        "application/octet-stream",
        "binary/octet-stream",
        "application/unknown",
        "application/x-unknown",
        "unknown/unknown",
        "application/x-download",
        "application/force-download",
        "*/*",
    }
)
# WHATWG MIME sniffing "identify an unknown type" HTML patterns (after leading whitespace), plus
# the head elements and common tags real pages served without a Content-Type start with.
_HTML_SNIFF_RE = re.compile(
    rb"[\t\n\f\r ]*<(?:!doctype[\t\n\f\r ]+html|!--|html|head|body|meta|link|base|title|script"
    rb"|style|iframe|h[1-6]|div|span|font|table|form|ul|ol|img|center|section|article|header|nav"
    rb"|main|a|b|i|br|p)(?:[\t\n\f\r />]|\Z)",
    re.IGNORECASE,
)
# Signatures of binary formats that servers (or broken Content-Encoding handling) label text/html.
_BINARY_MAGIC = (
    b"\x89PNG\r\n\x1a\n",
    b"GIF87a",
    b"GIF89a",
    b"\xff\xd8\xff",
    b"%PDF-",
    b"PK\x03\x04",
    b"\x1f\x8b",
    b"\x28\xb5\x2f\xfd",
    b"BZh9",
    b"7z\xbc\xaf\x27\x1c",
    b"Rar!\x1a\x07",
    b"\x7fELF",
    b"wOFF",
    b"wOF2",
    b"OggS",
    b"fLaC",
    b"ID3",
    b"\x00\x00\x01\x00",
)

SLOW_PARSE_SECONDS = 1.0
"""A parse that takes longer is logged (a typical page parses in ~1 ms per 100 KB)."""

TITLE_MAX_CHARS = 1000
"""Longest title kept; longer ones are cut (after whitespace is collapsed)."""
ANCHOR_MAX_CHARS = 256
"""Longest anchor text kept for a link (read only for a focused crawl, like the three below)."""
CONTEXT_MAX_CHARS = 200
"""Longest text around a link kept (its enclosing block's, centred on the anchor)."""
CONTEXT_CLIMB = 16
"""Ancestors of a link searched for its enclosing block (deeper in inline tags: no context)."""
CONTEXT_BUDGET_CHARS = 4_000_000
"""Text read for the links' contexts of one page at most (then links get none)."""
SIBLINGS = 8
"""Siblings read on each side of a link for its context in a long block."""
_SHORT_BLOCK = 4 * CONTEXT_MAX_CHARS  # a longer block: the text next to the link is its context
HEADINGS_MAX_CHARS = 10_000
"""Longest h1-h6 text kept for a page."""
BODY_MAX_CHARS = 100_000
"""Longest visible body text kept for a page."""
CONTENT_MAX_CHARS = 1_000_000
"""Longest main-content text kept for a page (its content fingerprint's input)."""

# One whole-tree pass finds the links, the robots meta tags and the first <base href>, in
# document order. "[href]" also matches <link>, <use>...: sorted out by tag id, which is cheaper
# than lexbor matching four selectors per element (~40% of the pass on a typical page).
_TREE_CSS = "[href], meta[name]"
_CANONICAL_CSS = 'link[rel~="canonical" i][href]'


def _tag_ids(*names: str) -> tuple[int, ...]:
    """Lexbor's tag id of each element name (each parsed on its own: <script> or <style> would
    swallow the names after it; table cells need their table)."""
    table = LexborHTMLParser("<table><caption></caption><tr><th></th><td></td></tr></table>")
    ids = []
    for name in names:
        node = LexborHTMLParser(f"<{name}></{name}>").css_first(name) or table.css_first(name)
        if node is None:
            raise ImportError(f"crawler.markup: no lexbor tag id for <{name}>")
        ids.append(node.tag_id)
    return tuple(ids)


_A, _AREA, _META, _BASE = _tag_ids("a", "area", "meta", "base")
_LINK_TAGS = frozenset((_A, _AREA))
# The elements whose text is "the text around a link" (the nearest one enclosing it).
_BLOCKS = frozenset(_tag_ids(
    "p", "li", "dd", "dt", "td", "th", "caption", "figcaption", "blockquote", "pre", "div",
    "section", "article", "aside", "main", "nav", "header", "footer", "form", "fieldset",
    "address", "details", "summary", "h1", "h2", "h3", "h4", "h5", "h6",
))  # fmt: skip
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
# Left out of a page's visible text (removed after the links are read): what is not text, and
# the boilerplate the pages of a site share (navigation bars, sidebars, headers, footers).
_HIDDEN = ("script", "style", "noscript", "template", "svg", "nav", "header", "footer", "aside")
_HIDDEN_ROLE = "navigation"  # any element with this ARIA role (a Sphinx sidebar, say) too
_HIDDEN_CSS = ", ".join((*_HIDDEN, f"[role~={_HIDDEN_ROLE} i]"))
_HEADING_TAGS = frozenset(_tag_ids(*_HEADINGS))
_HIDDEN_TAGS = frozenset(_tag_ids(*_HIDDEN))
# With `text`, the same pass finds the headings and the hidden elements too (one more pass
# would cost more than the longer selector).
_TEXT_TREE_CSS = ", ".join((_TREE_CSS, *_HEADINGS, _HIDDEN_CSS))
# The page's main content, when it marks it (Sphinx's document body, for instance).
_MAIN_CSS = "main, [role~=main i]"


@dataclass(frozen=True, slots=True)
class Markup:
    """What a body holds for the crawl, as plain values (the lexbor tree is not kept).

    `hrefs`: every a/area href in document order (C0 controls and spaces stripped), `nofollow`:
    the indices in `hrefs` of links with rel=nofollow; `metas`: (lowercased name, content) of
    each <meta name>; `base_href`: the first <base href> anywhere; `canonical_href`: the first
    rel=canonical link in <head>; `title`: the first <title> (<head>'s first), whitespace
    collapsed, at most TITLE_MAX_CHARS. Empty when the body is not HTML or could not be parsed.

    Read only when asked (a focused crawl): `anchors`, per distinct href (fragment cut, as in
    `crawler.urlsyntax.cut_fragment`) the (anchor text, rel, text around it) of its first
    occurrence with an anchor text (else of its first); `text`, the page's (h1-h6 text, visible
    body text). Read only when asked (content dedup): `content`, the visible text of the page's
    main content (its first <main> or role=main element, else its <body>). Visible text leaves
    out scripts, styles, templates, inline SVG and the boilerplate a site's pages share (nav,
    header, footer, aside, role=navigation). Whitespace is collapsed in all but `content`.
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


NOT_HTML = Markup(is_html=False)


def parse_markup(
    body: bytes,
    url: str,
    content_type: str | None = None,
    *,
    anchors: bool = False,
    text: bool = False,
    content: bool = False,
) -> Markup:
    """Sniff, decode, defuse, parse and read one response body fetched from `url` (for logs);
    `anchors`, `text` and `content` as for `read_tree`."""
    prepared = prepare(body, url, content_type)
    if prepared is None:
        return NOT_HTML
    charset, data = prepared
    tree = parse_tree(data, url)
    return read_tree(tree, charset, anchors=anchors, text=text, content=content)


def prepare(
    body: bytes, url: str, content_type: str | None = None, *, strict: bool = False
) -> tuple[str, bytes] | None:
    """(charset, UTF-8 bytes safe to parse) of an HTML body; None if the body is not HTML.
    `strict`: see `crawler.defuse.defuse`."""
    if not is_html(content_type, body):
        return None
    charset, data = _decode(body, content_type)
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


def read_tree(
    tree: LexborHTMLParser | None,
    charset: str,
    *,
    anchors: bool = False,
    text: bool = False,
    content: bool = False,
) -> Markup:
    """The `Markup` record of a parsed tree (an empty HTML one when there is no tree).

    `anchors`: also read each link's anchor text, rel and surrounding text; `text`: also read
    the page's headings and visible body text; `content`: also read its main content's visible
    text (`text` and `content` strip hidden elements from `tree`)."""
    if tree is None:
        return Markup(
            True, charset, text=("", "") if text else None, content="" if content else None
        )
    hrefs: list[str] = []
    nofollow: list[int] = []
    metas: list[tuple[str, str]] = []
    details: dict[str, tuple[str, str, str]] | None = {} if anchors else None
    contexts = _Contexts()
    headings: list[str] = []
    hidden: list[LexborNode] = []
    base_href: str | None = None
    for node in tree.css(_TEXT_TREE_CSS if text else _TREE_CSS):
        tag_id = node.tag_id
        if tag_id in _LINK_TAGS:  # svg:a too, as browsers follow it
            attrs = node.attributes  # one dict: cheaper than two node.attrs lookups
            rel = attrs.get("rel")
            if rel and "nofollow" in rel.lower().split():
                nofollow.append(len(hrefs))
            href = attrs.get("href") or attrs.get("xlink:href")  # SVG 1.1 links have the latter
            hrefs.append(href.strip(STRIP) if href else "")
            if details is not None:  # a page repeats its links: read each href's once
                cut = cut_fragment(hrefs[-1])
                known = details.get(cut)
                if known is None or not known[0]:
                    detail = _link_details(node, rel, contexts)
                    if known is None or detail[0]:
                        details[cut] = detail
        elif tag_id == _META:
            attrs = node.attributes
            metas.append(((attrs.get("name") or "").strip().lower(), attrs.get("content") or ""))
        elif tag_id == _BASE and base_href is None:
            base_href = node.attributes.get("href") or ""
        elif not text:  # "[href]" matches <link>, <use>...: nothing to read
            continue
        elif tag_id in _HEADING_TAGS:
            headings.append(node.text(deep=True, separator=" "))
        elif tag_id in _HIDDEN_TAGS:
            hidden.append(node)
        elif _HIDDEN_ROLE in (node.attributes.get("role") or "").lower().split():
            hidden.append(node)  # (the other elements here are "[href]" ones)

    head = tree.head or tree
    canonical = head.css_first(_CANONICAL_CSS)
    canonical_href = (canonical.attrs.get("href") or "").strip(STRIP) if canonical else None
    title = None
    title_node = head.css_first("title") or tree.css_first("title")
    if title_node is not None:
        raw = title_node.text(deep=True).lstrip()[: 4 * TITLE_MAX_CHARS]
        title = " ".join(raw.split())[:TITLE_MAX_CHARS].rstrip() or None
    page_text, main_text = _page_text(tree, headings, hidden, text, content)
    return Markup(
        True, charset, tuple(hrefs), tuple(nofollow), tuple(metas), base_href, canonical_href,
        title, details if details is not None else {}, page_text, main_text,
    )  # fmt: skip


def _collapse(text: str, limit: int) -> str:
    """`text` with whitespace runs made one space, at most `limit` characters."""
    return " ".join(text.lstrip()[: 4 * limit].split())[:limit].rstrip()


class _Contexts:
    """The text of the block elements a page's links are in, read once per block, and at most
    CONTEXT_BUDGET_CHARS in all (nested blocks each hold their inner blocks' text: on a page
    built for it, reading them all could take minutes)."""

    __slots__ = ("left", "long", "texts")

    def __init__(self) -> None:
        self.texts: dict[int, str] = {}  # block element -> its collapsed text (a short one)
        self.long: set[int] = set()  # block elements with a long text
        self.left = CONTEXT_BUDGET_CHARS

    def __repr__(self) -> str:
        return f"<_Contexts blocks={len(self.texts)} left={self.left}>"


def _link_details(node: LexborNode, rel: str | None, contexts: _Contexts) -> tuple[str, str, str]:
    """(anchor text, rel, text around it) of one a/area element."""
    anchor = _collapse(node.text(deep=True, separator=" "), ANCHOR_MAX_CHARS)
    if not anchor:
        image = node.css_first("img[alt]")
        alt = node.attributes.get("alt") if image is None else image.attributes.get("alt")
        anchor = _collapse(alt or "", ANCHOR_MAX_CHARS)
    rel = " ".join((rel or "").split())
    block = node.parent
    for _ in range(CONTEXT_CLIMB):
        if block is None or block.tag_id in _BLOCKS:
            break
        block = block.parent
    else:
        block = None
    if block is None:  # directly in <body> (the body would be too much), or deep in inline tags
        return anchor, rel, ""
    key = block.mem_id
    around = contexts.texts.get(key)
    if around is None and key not in contexts.long:
        if contexts.left <= 0:
            return anchor, rel, ""
        raw = block.text(deep=True, separator=" ")
        contexts.left -= len(raw)
        around = " ".join(raw.split())
        if len(around) > _SHORT_BLOCK:  # not kept: the text next to each link is read instead
            contexts.long.add(key)
            around = None
        else:
            contexts.texts[key] = around
    if around is None:
        return anchor, rel, _next_to(node, anchor, contexts) if contexts.left > 0 else ""
    if len(around) > CONTEXT_MAX_CHARS:  # a window centred on the anchor (or the block's start)
        at = max(0, around.find(anchor)) if anchor else 0
        start = max(0, min(at + len(anchor) // 2 - CONTEXT_MAX_CHARS // 2,
                           len(around) - CONTEXT_MAX_CHARS))  # fmt: skip
        around = around[start : start + CONTEXT_MAX_CHARS].strip()
    return anchor, rel, around


def _next_to(node: LexborNode, anchor: str, contexts: _Contexts) -> str:
    """The text of a link's siblings next to it (half of CONTEXT_MAX_CHARS on each side, from
    at most SIBLINGS siblings each way), around its anchor text: its context in a long block."""
    half = (CONTEXT_MAX_CHARS - len(anchor)) // 2
    before: list[str] = []
    after: list[str] = []
    for side, step in ((before, "prev"), (after, "next")):
        sibling, size = getattr(node, step), 0
        for _ in range(SIBLINGS):
            if sibling is None or size >= half:
                break
            raw = sibling.text(deep=True, separator=" ")
            contexts.left -= len(raw)
            side.append(raw)
            size += len(raw)
            sibling = getattr(sibling, step)
    left = " ".join(" ".join(reversed(before)).split())[-half:] if half > 0 else ""
    right = " ".join(" ".join(after).split())[:half] if half > 0 else ""
    return " ".join(part for part in (left, anchor, right) if part)[:CONTEXT_MAX_CHARS]


def _page_text(
    tree: LexborHTMLParser, headings: list[str], hidden: list[LexborNode], text: bool, content: bool
) -> tuple[tuple[str, str] | None, str | None]:
    """((h1-h6 text, visible body text) if `text`, visible main-content text if `content`) of
    a page. Hidden elements are removed from `tree`, the last first (in document order), so that
    none is inside one already removed: with `text`, the `hidden` ones the tree's pass found;
    else those inside the main content. The body's text serves both when the page marks no main
    content. The main-content text keeps its whitespace (its fingerprint splits the words)."""
    if not (text or content):
        return None, None
    for node in reversed(hidden):
        node.decompose()
    body = tree.body or tree.root
    body_text = body.text(deep=True, separator=" ") if text and body is not None else ""
    page_text = None
    if text:
        headings_text = _collapse(" ".join(headings), HEADINGS_MAX_CHARS)
        page_text = headings_text, _collapse(body_text, BODY_MAX_CHARS)
    if not content:
        return page_text, None
    root = tree.css_first(_MAIN_CSS)
    if root is None:
        if text:
            return page_text, body_text[:CONTENT_MAX_CHARS]
        root = body
    if root is None:
        return page_text, ""
    if not text:
        for node in reversed(root.css(_HIDDEN_CSS)):  # within the main content only
            node.decompose()
    return page_text, root.text(deep=True, separator=" ")[:CONTENT_MAX_CHARS]


def is_html(content_type: str | None, body: bytes) -> bool:
    """Whether a response should be parsed as HTML.

    An HTML Content-Type (text/html, application/xhtml+xml) is believed unless the body starts
    with a binary file signature (PNG, gzip, PDF...). A missing, text/plain or octet-stream-like
    Content-Type is sniffed: the body must start (after a BOM and whitespace) like an HTML
    document. Any other type (images, JSON, CSS...) is not HTML.
    """
    mime = content_type.partition(";")[0].strip().lower() if content_type else ""
    if mime in _HTML_TYPES:
        return not body.startswith(_BINARY_MAGIC)
    if mime in _SNIFF_TYPES or "/" not in mime:
        return _HTML_SNIFF_RE.match(_sniff_prefix(body)) is not None
    return False


def _sniff_prefix(body: bytes) -> bytes:
    """The start of `body` as ASCII-compatible bytes, without its BOM."""
    charset, bom = read_bom(body)
    if charset is None or bom is None:
        return body[:1024]
    return body[len(bom) : len(bom) + 1024].decode(charset, "ignore").encode("utf-8")


def _text_codec(name: str | None) -> str | None:
    """`name` if it is a text codec bytes can be decoded with, else None."""
    if not name:
        return None
    try:
        info = codecs.lookup(name)
    except LookupError:
        return None
    if not getattr(info, "_is_text_encoding", True) or info.name in _NOT_WEB_CHARSETS:
        return None  # base64, rot13...; UTF-7 smuggles markup past ASCII checks (WHATWG drops it)
    return info.name


# Python text codecs no browser knows: UTF-7 and the escape codecs smuggle markup past ASCII
# checks; punycode decodes in quadratic time (a 256 KB page took 25 s of CPU).
_NOT_WEB_CHARSETS = frozenset(
    {"utf-7", "punycode", "idna", "unicode-escape", "raw-unicode-escape", "undefined"}
)


def _decode(body: bytes, content_type: str | None) -> tuple[str, bytes]:
    """(charset used, the body as UTF-8 bytes for lexbor).

    Precedence: BOM > Content-Type charset > <meta charset> / http-equiv (first 4 KiB) > UTF-8.
    UTF-8 bodies are passed through untouched (lexbor reads invalid sequences as U+FFFD); other
    charsets are decoded with errors="replace" and re-encoded.
    """
    bom_charset, bom = read_bom(body)
    if bom_charset is not None and bom is not None:
        charset: str | None = bom_charset
        body = body[len(bom) :]
    else:
        charset = _text_codec(http_content_type_encoding(content_type))
        if charset is None:
            charset = _text_codec(html_body_declared_encoding(body))
            if charset is not None and charset.startswith(("utf-16", "utf-32")):
                charset = "utf-8"  # an ASCII-readable declaration cannot be UTF-16 (WHATWG)
        elif charset in ("utf-16", "utf-32"):
            charset += "-le"
    if charset is None or charset == "utf-8":
        return "utf-8", body
    try:
        return charset, body.decode(charset, "replace").encode("utf-8", "replace")
    except (UnicodeError, LookupError, ValueError, TypeError) as exc:
        logger.debug("charset %s unusable (%s); decoding as UTF-8", charset, exc)
        return "utf-8", body
