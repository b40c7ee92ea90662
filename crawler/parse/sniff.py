"""Sniffing a response body: is it HTML (or a PDF), and in which charset.

`is_pdf` tells a PDF by its Content-Type, or by its %PDF- header when the type says nothing
reliable (or says HTML); `is_html` decides from the Content-Type, checked against binary file
signatures, or by sniffing the body when the type says nothing reliable (WHATWG MIME sniffing);
`decode` turns an HTML body into the UTF-8 bytes lexbor reads (BOM > Content-Type charset >
<meta charset> > UTF-8, the WHATWG encoding sniffing order). They run on any bytes a server
sends and never raise.
"""

from __future__ import annotations

import codecs
import logging
import re

from w3lib.encoding import html_body_declared_encoding, http_content_type_encoding, read_bom

__all__ = ["decode", "is_html", "is_pdf"]

logger = logging.getLogger(__name__)

_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml", "application/vnd.wap.xhtml+xml"})
_PDF_TYPES = frozenset({"application/pdf", "application/x-pdf", "application/acrobat", "text/pdf"})
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
_WS = rb"[\t\n\f\r ]*"
_HTML_SNIFF_RE = re.compile(
    _WS + rb"(?:<\?xml[^>]{0,256}>" + _WS + rb")?"  # an XML declaration (XHTML) may come first
    rb"<(?:!doctype[\t\n\f\r ]+html|!--|html|head|body|meta|link|base|title|script"
    rb"|style|iframe|h[1-6]|div|span|font|table|form|ul|ol|img|center|section|article|header|nav"
    rb"|main|a|b|i|br|p)(?:[\t\n\f\r />]|\Z)",
    re.IGNORECASE,
)
# XML types: HTML when the root is XHTML's <html>, as browsers render it (old XHTML sites);
# before it, only an XML declaration, processing instructions, comments and a doctype.
_XML_TYPES = frozenset({"text/xml", "application/xml"})
_XHTML_RE = re.compile(
    _WS
    + rb"(?:<[?!][^>]*>"
    + _WS
    + rb")*<html[\t\n\f\r ][^>]*xmlns"
    + _WS
    + b"="
    + _WS
    + rb"[\"']http://www\.w3\.org/1999/xhtml[\"']",
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


def is_html(content_type: str | None, body: bytes) -> bool:
    """Whether a response should be parsed as HTML.

    An HTML Content-Type (text/html, application/xhtml+xml) is believed unless the body starts
    with a binary file signature (PNG, gzip, PDF...). A missing, text/plain or octet-stream-like
    Content-Type is sniffed: the body must start (after a BOM, whitespace and an XML
    declaration) like an HTML document. An XML type is HTML when its root is XHTML's <html>.
    Any other type (images, JSON, CSS...) is not HTML.
    """
    mime = content_type.partition(";")[0].strip().lower() if content_type else ""
    if mime in _HTML_TYPES:
        return not body.startswith(_BINARY_MAGIC)
    if mime in _SNIFF_TYPES or "/" not in mime:
        return _HTML_SNIFF_RE.match(_sniff_prefix(body)) is not None
    if mime in _XML_TYPES:
        return _XHTML_RE.match(_sniff_prefix(body)) is not None
    return False


def is_pdf(content_type: str | None, body: bytes) -> bool:
    """Whether a response is a PDF to read (with `[parse] pdf`): a PDF Content-Type (whatever
    the body holds: a body that is not a PDF then gets a `not_pdf` error), or a body that
    starts with the %PDF- header under a type that says nothing reliable or says HTML."""
    mime = content_type.partition(";")[0].strip().lower() if content_type else ""
    if mime in _PDF_TYPES:
        return True
    if mime in _SNIFF_TYPES or mime in _HTML_TYPES or "/" not in mime:
        return body[:1024].lstrip(b"\x00\t\n\f\r ").startswith(b"%PDF-")
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


def decode(body: bytes, content_type: str | None) -> tuple[str, bytes]:
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
