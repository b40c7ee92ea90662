"""Link extraction from fetched pages (selectolax / lexbor).

`extract` turns a response body into a `Page`: the hrefs to follow (``a[href]`` and
``area[href]``, in document order), the base URL they resolve against, the page's title and
canonical URL, and the robots directives that apply to it (``<meta name=robots>``,
``<meta name=TOKEN>`` and the ``X-Robots-Tag`` header). It never raises on what a server sends:
binary bodies, lying or missing Content-Types, unknown charsets, invalid UTF-8, BOMs and absurdly
deep nesting all still produce a `Page` record.
"""

from __future__ import annotations

import codecs
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from selectolax.lexbor import LexborHTMLParser, SelectolaxError
from w3lib.encoding import html_body_declared_encoding, http_content_type_encoding, read_bom

__all__ = ["Page", "extract", "is_html"]

logger = logging.getLogger(__name__)

_BASE_TAG = re.compile(rb"<base[\s>/]", re.IGNORECASE)
TITLE_MAX_CHARS = 1000
"""Longest title kept; longer ones are cut (after whitespace is collapsed)."""

DEPTH_LIMIT = 512
"""Element nesting kept when a page is pathologically deep (browsers cap the tree similarly)."""

MAX_TAGS = 200_000
"""Tags parsed at most. Lexbor's tree costs about 0.5 KiB per element, so a 10 MiB body of
nothing but tags would take 0.5 GiB; markup from the (MAX_TAGS + 1)-th "<" left by the
deep-nesting guard on is dropped."""

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
_C0_OR_SPACE = "".join(map(chr, range(0x21)))  # what the URL parser strips around a URL

_LINKS_CSS = "a[href], area[href]"
_CANONICAL_CSS = 'link[rel~="canonical" i][href]'
_FOLLOWABLE_BASE_SCHEMES = frozenset({"http", "https"})

# X-Robots-Tag: "name: value" directives that are not user-agent scopes.
_VALUED_DIRECTIVES = frozenset(
    {"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"}
)
_UA_SCOPE_RE = re.compile(r"[a-z0-9_*][a-z0-9_.*-]*\Z")

# Deep-nesting guard (see _defuse_deep_nesting).
_GUARD_CHUNK = 8192
_DEPTH_ALARM = 2 * DEPTH_LIMIT
_TAG_RE = re.compile(rb"<(/?)([A-Za-z][^\t\n\f\r />]*)")
_VOID = frozenset(
    b"area base br col embed hr img input keygen link meta param source track wbr".split()
)
# Never hidden: elements we read, raw-text elements (hiding one would turn its text into markup),
# and containers whose content must stay out of the document (template) or foreign (svg, math).
_KEEP = frozenset(
    b"a area base link meta title script style textarea xmp iframe noembed noframes noscript"
    b" plaintext template svg math".split()
)


@dataclass(frozen=True, slots=True, repr=False)
class Page:
    """What one response body yields. Always produced, whatever the body holds."""

    is_html: bool
    charset: str | None
    title: str | None
    base: str
    canonical: str | None
    links: tuple[str, ...]
    links_found: int
    nofollow_skipped: int
    truncated: bool
    noindex: bool
    nofollow: bool

    def __repr__(self) -> str:
        return (
            f"Page(is_html={self.is_html}, charset={self.charset!r}, title={self.title!r}, "
            f"base={self.base!r}, canonical={self.canonical!r}, links={len(self.links)}/"
            f"{self.links_found} (nofollow_skipped={self.nofollow_skipped}, "
            f"truncated={self.truncated}), noindex={self.noindex}, nofollow={self.nofollow})"
        )


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


def extract(
    body: bytes,
    url: str,
    *,
    content_type: str | None = None,
    x_robots_tag: str | Sequence[str] | None = None,
    respect_nofollow: bool = True,
    max_links: int = 10_000,
    user_agent_token: str | None = None,
) -> Page:
    """Parse one response body fetched from `url`.

    `x_robots_tag` is the header's value, or all its values when it was sent several times (each
    is then scoped on its own). Directives scoped to a user agent ("googlebot: nofollow") apply
    only when the scope equals `user_agent_token` (case-insensitive, the part before any "/");
    `<meta name=TOKEN>` is read alongside `<meta name=robots>` likewise. With `respect_nofollow`,
    links with rel=nofollow are skipped and a nofollow page yields no links. At most `max_links`
    links are kept (`truncated` tells); `links_found` counts every a/area href seen.

    Raises ValueError only for bad arguments (a negative `max_links`, a non-bytes body).
    """
    if isinstance(max_links, bool) or not isinstance(max_links, int) or max_links < 0:
        raise ValueError(f"max_links must be a non-negative int, got {max_links!r}")
    body = _as_bytes(body)
    ua = _ua_token(user_agent_token)
    noindex, nofollow = _header_robots(x_robots_tag, ua)
    if not is_html(content_type, body):
        return Page(False, None, None, url, None, (), 0, 0, False, noindex, nofollow)

    charset, markup = _decode(body, content_type)
    try:
        tree = LexborHTMLParser(_cap_tags(_defuse_deep_nesting(markup), url))
    except (SelectolaxError, ValueError, MemoryError) as exc:  # the record survives a bad body
        logger.warning("cannot parse %s as HTML: %s", url, exc)
        return Page(True, charset, None, url, None, (), 0, 0, False, noindex, nofollow)

    for meta in tree.css("meta[name]"):
        name = (meta.attrs.get("name") or "").strip().lower()
        if name == "robots" or (ua is not None and name == ua):
            meta_noindex, meta_nofollow = _robots_directives(meta.attrs.get("content") or "", ua)
            noindex |= meta_noindex
            nofollow |= meta_nofollow

    # Whole-tree CSS queries cost ~0.15 ms each on a typical page, so the head elements are
    # looked up in <head> first. The first <base href> and <title> anywhere count (HTML spec):
    # the body is searched only when the head has none (for <base>, only if the bytes mention
    # one). rel=canonical counts only in <head>, as search engines read it.
    head = tree.head or tree
    base = url
    base_node = head.css_first("base[href]")
    if base_node is None and head is not tree and _BASE_TAG.search(markup):
        base_node = tree.css_first("base[href]")
    if base_node is not None:
        joined = _join(url, base_node.attrs.get("href") or "")
        if joined is not None and urlsplit(joined).scheme in _FOLLOWABLE_BASE_SCHEMES:
            base = joined

    canonical = None
    canonical_node = head.css_first(_CANONICAL_CSS)
    if canonical_node is not None:
        href = (canonical_node.attrs.get("href") or "").strip(_C0_OR_SPACE)
        canonical = _join(base, href) if href else None

    title = None
    title_node = head.css_first("title") or tree.css_first("title")
    if title_node is not None:
        text = title_node.text(deep=True).lstrip()[: 4 * TITLE_MAX_CHARS]
        title = " ".join(text.split())[:TITLE_MAX_CHARS].rstrip() or None

    nodes = tree.css(_LINKS_CSS)
    found = len(nodes)
    if nofollow and respect_nofollow:
        return Page(True, charset, title, base, canonical, (), found, found, False, noindex, True)
    hrefs: list[str] = []
    skipped = 0
    for node in nodes:
        attrs = node.attributes
        rel = attrs.get("rel")
        if rel and respect_nofollow and "nofollow" in rel.lower().split():
            skipped += 1
        else:
            hrefs.append((attrs.get("href") or "").strip(_C0_OR_SPACE))
    truncated = len(hrefs) > max_links
    links = tuple(hrefs[:max_links]) if truncated else tuple(hrefs)
    return Page(
        True, charset, title, base, canonical, links, found, skipped, truncated, noindex, nofollow
    )


def _as_bytes(body: object) -> bytes:
    if isinstance(body, bytes):
        return body
    if isinstance(body, bytearray | memoryview):
        return bytes(body)
    raise ValueError(f"body must be bytes, got {type(body).__name__}")


def _ua_token(user_agent_token: str | None) -> str | None:
    if user_agent_token is None:
        return None
    token = user_agent_token.partition("/")[0].strip().lower()
    return token or None


def _header_robots(value: str | Sequence[str] | None, ua: str | None) -> tuple[bool, bool]:
    """(noindex, nofollow) from X-Robots-Tag value(s); each value starts unscoped."""
    if value is None:
        return False, False
    values = [value] if isinstance(value, str) else value
    noindex = nofollow = False
    for one in values:
        one_noindex, one_nofollow = _robots_directives(one, ua, scoped=True)
        noindex |= one_noindex
        nofollow |= one_nofollow
    return noindex, nofollow


def _robots_directives(value: str, ua: str | None, *, scoped: bool = False) -> tuple[bool, bool]:
    """(noindex, nofollow) from a comma-separated robots directive list.

    With `scoped` (X-Robots-Tag), "name: directives" switches the scope to user agent `name` for
    the directives that follow it; they apply only when `name` is `ua` (or "*").
    """
    noindex = nofollow = False
    applies = True
    for raw in value.lower().split(","):
        part = raw.strip()
        if scoped and ":" in part:
            scope, _, rest = part.partition(":")
            scope = scope.strip()
            if scope not in _VALUED_DIRECTIVES and _UA_SCOPE_RE.match(scope):
                applies = scope == "*" or scope == ua
                part = rest
        if not applies:
            continue
        for directive in part.split():
            if directive == "noindex":
                noindex = True
            elif directive == "nofollow":
                nofollow = True
            elif directive == "none":
                noindex = nofollow = True
    return noindex, nofollow


def _text_codec(name: str | None) -> str | None:
    """`name` if it is a text codec bytes can be decoded with, else None."""
    if not name:
        return None
    try:
        info = codecs.lookup(name)
    except LookupError:
        return None
    if not getattr(info, "_is_text_encoding", True) or info.name == "utf-7":
        return None  # base64, rot13...; UTF-7 smuggles markup past ASCII checks (WHATWG drops it)
    return info.name


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


def _join(base: str, href: str) -> str | None:
    try:
        return urljoin(base, href.strip(_C0_OR_SPACE))
    except ValueError:  # e.g. an unbalanced IPv6 bracket
        return None


def _cap_tags(data: bytes, url: str) -> bytes:
    """`data` cut before its (MAX_TAGS + 1)-th "<" (one C-speed count for ordinary pages).
    Runs after _defuse_deep_nesting, whose escaped tags create no elements."""
    if data.count(b"<") <= MAX_TAGS:
        return data
    pos = -1
    for _ in range(MAX_TAGS + 1):
        pos = data.find(b"<", pos + 1)
    logger.warning("%s: more than %d tags, the rest of the page is not parsed", url, MAX_TAGS)
    return data[:pos]


def _defuse_deep_nesting(data: bytes) -> bytes:
    """Return `data`, with elements nested deeper than DEPTH_LIMIT turned into text.

    Lexbor's tree builder walks the stack of open elements for many tags, so a page nested N
    deep costs O(N^2) (100k nested <div> take ~20 s). A cheap chunked count of "<" and "</"
    (an over-estimate of the depth, as void elements count as opens) spots such pages; only
    those get a tag-by-tag pass that escapes the "<" of start tags beyond the limit (and of
    their end tags) as "&lt;". Links, meta, base, title and raw-text elements are never touched,
    and "&lt;" decodes back to "<" inside attribute values and titles.
    """
    count = data.count
    depth = peak = 0
    for start in range(0, len(data), _GUARD_CHUNK):
        end = start + _GUARD_CHUNK
        depth = max(depth + count(b"<", start, end) - 2 * count(b"</", start, end), 0)
        peak = max(peak, depth)
    if peak <= _DEPTH_ALARM:
        return data
    pieces: list[bytes] = []
    last = 0
    depth = 0
    hidden: dict[bytes, int] = {}
    for match in _TAG_RE.finditer(data):
        name = match.group(2).lower()
        if name in _VOID:
            continue
        if match.group(1):
            if hidden.get(name):
                hidden[name] -= 1
            else:
                depth = max(depth - 1, 0)
                continue
        elif depth < DEPTH_LIMIT or name in _KEEP:
            depth += 1
            continue
        else:
            hidden[name] = hidden.get(name, 0) + 1
        pieces.append(data[last : match.start()])
        pieces.append(b"&lt;")
        last = match.start() + 1
    if not pieces:
        return data
    logger.debug("defused %d deeply nested tags", len(pieces) // 2)
    pieces.append(data[last:])
    return b"".join(pieces)
