"""What a response's header bytes mean: text every output can write, and the body's coding.

- `header_text`: aiohttp keeps header bytes that are not UTF-8 (a Latin-1 ``é`` in a
  Content-Type, a Location or a reason phrase) as lone surrogates (``surrogateescape``), which
  no UTF-8 writer accepts: one such byte made the JSON Lines writer end the crawl, and the WARC
  writer fail the page. In a URI-valued header (Location, Content-Location) each such byte
  becomes a ``%XX`` escape, as browsers send it; in any other header a U+FFFD.
- `content_coding`: the one content coding to undo, from every Content-Encoding header (two
  headers are two codings, as RFC 9110 8.4 lists them; ``identity`` is none). Stacked codings
  and transfer codings other than ``chunked`` (aiohttp undoes only that one) are a
  `DecodingError`, never a body passed on still encoded. A token that names no compression
  (``none``, ``UTF-8``, ``binary``: servers send those) is ignored, as browsers ignore it.
- `content_type`: the MIME type of every Content-Type header, as the Fetch standard reads it
  ("extract a MIME type"): values joined by commas (by a proxy, or two headers) are split, the
  last valid one wins and keeps the charset of the value that began its run of the same type.
"""

from __future__ import annotations

import re
from typing import Final

from multidict import MultiMapping

from crawler.errors import DecodingError

__all__ = ["content_coding", "content_type", "header_text"]

_ESCAPED: Final = re.compile("[\udc80-\udcff]")  # a byte that was not UTF-8, surrogateescape'd
_URI_HEADERS: Final = frozenset({"location", "content-location"})


def _percent(match: re.Match[str]) -> str:
    return f"%{ord(match.group()) - 0xDC00:02X}"


def header_text(name: str, value: str) -> str:
    """`value` with every byte that was not UTF-8 made writable (see the module docstring)."""
    if value.isascii():
        return value
    if name.lower() in _URI_HEADERS:
        return _ESCAPED.sub(_percent, value)
    return _ESCAPED.sub("\ufffd", value)


def _codings(values: list[str]) -> list[str]:
    return [c for v in values for c in (p.strip().lower() for p in v.split(",")) if c]


def content_coding(headers: MultiMapping[str]) -> str:
    """The content coding to undo ("" for none), lower-case; DecodingError if unsupported."""
    transfer_values = headers.getall("Transfer-Encoding", [])
    if "Content-Encoding" not in headers and transfer_values in ([], ["chunked"]):
        return ""  # the usual case, in two lookups
    transfer = _codings(transfer_values)
    if [c for c in transfer if c not in ("chunked", "identity")]:
        raise DecodingError(f"unsupported Transfer-Encoding {', '.join(transfer)!r}")
    values = headers.getall("Content-Encoding", [])
    codings = [c for c in _codings(values) if c in _COMPRESSIONS]
    if len(codings) > 1:
        raise DecodingError(f"stacked Content-Encoding {', '.join(codings)!r} is not supported")
    return codings[0] if codings else ""


# Content codings that compress (IANA's registry and what servers send): undone, or refused. Any
# other token ("identity", "none", "UTF-8", "binary", "text") is no coding, as Chromium reads it.
_COMPRESSIONS: Final = frozenset(
    {"gzip", "x-gzip", "deflate", "br", "zstd", "compress", "x-compress", "bzip2", "x-bzip2",
     "lzma", "xz", "lz4", "snappy", "sdch", "exi", "pack200-gzip", "aes128gcm", "dcb", "dcz"}
)  # fmt: skip

# A MIME type's essence (type/subtype, RFC 9110 tokens) and its charset parameter.
_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_ESSENCE: Final = re.compile(rf"[ \t]*({_TOKEN}/{_TOKEN})[ \t]*(?:;|\Z)")
_CHARSET: Final = re.compile(r';[ \t]*charset[ \t]*=[ \t]*("?)([^";, \t]*)\1', re.IGNORECASE)
_SPLIT: Final = re.compile(r'(?:[^,"]|"(?:[^"\\]|\\.)*"?)+')


def content_type(values: list[str]) -> str | None:
    """The Content-Type that counts among all the headers' `values` (see the module docstring):
    a single value without a comma as it is, else the last valid MIME type (if it has no charset,
    with that of the value that began its run of the same type); the values as sent when none
    is valid; None for none, or a blank one."""
    if len(values) == 1 and "," not in values[0]:
        return values[0] if values[0].strip() else None  # an empty header: no type
    chosen: str | None = None
    essence = charset = ""
    for value in (m.group() for v in values for m in _SPLIT.finditer(v)):
        match = _ESSENCE.match(value)
        if match is None or match.group(1) == "*/*":
            continue
        chosen, own = value.strip(), _CHARSET.search(value)
        if match.group(1).lower() != essence:
            essence, charset = match.group(1).lower(), own.group(2) if own else ""
        elif not own and charset:  # (a value's own charset is not passed on: the first is)
            chosen += f"; charset={charset}"
    if chosen is None:
        return ", ".join(values) if values else None
    return chosen
