"""What a response's header bytes mean: text every output can write, and the body's coding.

- `header_text`: aiohttp keeps header bytes that are not UTF-8 (a Latin-1 ``é`` in a
  Content-Type, a Location or a reason phrase) as lone surrogates (``surrogateescape``), which
  no UTF-8 writer accepts: one such byte made the JSON Lines writer end the crawl, and the WARC
  writer fail the page. In a URI-valued header (Location, Content-Location) each such byte
  becomes a ``%XX`` escape, as browsers send it; in any other header a U+FFFD.
- `content_coding`: the one content coding to undo, from every Content-Encoding header (two
  headers are two codings, as RFC 9110 8.4 lists them; ``identity`` is none). Stacked codings
  and transfer codings other than ``chunked`` (aiohttp undoes only that one) are a
  `DecodingError`, never a body passed on still encoded.
"""

from __future__ import annotations

import re
from typing import Final

from multidict import MultiMapping

from crawler.errors import DecodingError

__all__ = ["content_coding", "header_text"]

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
    codings = [c for c in _codings(headers.getall("Content-Encoding", [])) if c != "identity"]
    if len(codings) > 1:
        raise DecodingError(f"stacked Content-Encoding {', '.join(codings)!r} is not supported")
    return codings[0] if codings else ""
