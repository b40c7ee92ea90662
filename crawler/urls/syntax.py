"""URL syntax: the RFC 3986 pieces `crawler.urls.canonical` is built from (regexes, percent-encoding
fixes, dot-segment removal, parameter patterns), and the WHATWG URL Standard's IPv4 host parser
(what browsers make of "127.1" or "0x7f.1"). Pure functions and constants, no state."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

__all__ = [
    "ASCII_HOST_OK", "DEFAULT_PORTS", "PATH_FIX", "PATH_OK", "QUERY_FIX", "QUERY_OK", "SPLIT",
    "STRIP", "TAB_NL", "compile_patterns", "cut_fragment", "ends_in_number", "fix_pct",
    "legacy_query", "pair_key", "parse_ipv4", "remove_dot_segments",
]  # fmt: skip

DEFAULT_PORTS: Final = {"http": "80", "https": "443"}
STRIP: Final = "".join(map(chr, range(0x21)))  # C0 controls and space
TAB_NL: Final = {ord("\t"): None, ord("\n"): None, ord("\r"): None}
# RFC 3986 appendix B, with a valid scheme; the fragment (after "#") is never captured.
SPLIT: Final = re.compile(
    r"(?:([A-Za-z][A-Za-z0-9+.\-]*):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?", re.S
).match
PATH_OK: Final = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/]*").fullmatch
# In a query, browsers encode "'" (the WHATWG special-query percent-encode set): so does the key.
QUERY_OK: Final = re.compile(r"[A-Za-z0-9\-._~!$&()*+,;=:@/?]*").fullmatch
PATH_FIX: Final = re.compile(r"%([0-9A-Fa-f]{2})|[^A-Za-z0-9\-._~!$&'()*+,;=:@/%]+|%").sub
QUERY_FIX: Final = re.compile(r"%([0-9A-Fa-f]{2})|[^A-Za-z0-9\-._~!$&()*+,;=:@/?%]+|%").sub
SURROGATE: Final = re.compile("[\ud800-\udfff]")
UNRESERVED: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
ENCODED: Final = tuple(f"%{i:02X}" for i in range(256))
DECODED: Final = tuple(chr(i) if chr(i) in UNRESERVED else f"%{i:02X}" for i in range(256))
ASCII_HOST_OK: Final = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=]+").fullmatch
_IPV4_DIGITS: Final = {
    8: re.compile("[0-7]*").fullmatch,
    10: re.compile("[0-9]+").fullmatch,
    16: re.compile("[0-9A-Fa-f]*").fullmatch,
}
# A byte of an encoded query as browsers send it (the WHATWG query percent-encode set).
QUERY_BYTE: Final = tuple(
    f"%{b:02X}" if b < 0x21 or b > 0x7E or chr(b) in "\"#<>'" else chr(b) for b in range(256)
)
_NON_ASCII: Final = re.compile(r"[^\x00-\x7f]+")
PATTERN_OK: Final = re.compile(r"[^\s=&;#?/*]*\*?[^\s=&;#?/*]*").fullmatch


def fix_pct(m: re.Match[str]) -> str:
    """Regex callback: uppercase/decode one %XX, or percent-encode a run of disallowed chars."""
    hexdigits = m.group(1)
    if hexdigits is not None:
        return DECODED[int(hexdigits, 16)]
    run = m.group(0)
    if run == "%":
        return "%25"
    try:
        data = run.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates become U+FFFD, as browsers do
        data = SURROGATE.sub("\ufffd", run).encode("utf-8")
    return "".join([ENCODED[b] for b in data])


def remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4 for an absolute path (one starting with "/")."""
    segments = path.split("/")
    out: list[str] = []
    for seg in segments[1:]:
        if seg == "..":
            if out:
                out.pop()
        elif seg != ".":
            out.append(seg)
    if segments[-1] in (".", ".."):
        out.append("")
    return "/" + "/".join(out)


def pair_key(pair: str) -> str:
    return pair.partition("=")[0]


def compile_patterns(names: Iterable[str], what: str) -> tuple[str, ...]:
    if isinstance(names, str):
        raise ValueError(f"{what} must be an iterable of parameter names, not the string {names!r}")
    out = []
    for name in names:
        if not isinstance(name, str) or not name or not PATTERN_OK(name):
            raise ValueError(
                f"{what}: invalid parameter pattern {name!r} (a non-empty name with at most one "
                "'*' wildcard, without spaces or any of = & ; # ? /)"
            )
        out.append(name.lower())
    return tuple(out)


def cut_fragment(href: str) -> str:
    """`href` up to and including its first "#". Nothing after it changes where a link leads
    (the fragment is dropped), so hrefs that differ only there resolve alike; the "#" stays, as
    a fragment-only reference resolves differently from an empty one."""
    cut = href.find("#")
    return href if cut < 0 else href[: cut + 1]


def ends_in_number(host: str) -> bool:
    """WHATWG "ends in a number": the last label of `host` (an ASCII host without trailing dots)
    is decimal digits or a 0x-hex number, so browsers parse the host as an IPv4 address."""
    last = host.rpartition(".")[2]
    if last.isdigit() and last.isascii():
        return True
    return last[:2] in ("0x", "0X") and _IPV4_DIGITS[16](last, 2) is not None


def parse_ipv4(host: str) -> str | None:
    """The dotted-decimal form of an IPv4 host as browsers read it (WHATWG IPv4 parser: one to
    four parts, each decimal, 0x-hex or 0-octal, the last filling the remaining bytes), or None
    if it is not one ("127.1" -> "127.0.0.1", "0x7f.1" -> "127.0.0.1", "1.2.3.256" -> None)."""
    parts = host.split(".")
    if len(parts) > 4:
        return None
    numbers = []
    for part in parts:
        radix, start = 10, 0
        if part[:2] in ("0x", "0X"):
            radix, start = 16, 2
        elif len(part) > 1 and part[0] == "0":
            radix, start = 8, 1
        if not part or _IPV4_DIGITS[radix](part, start) is None:
            return None
        try:
            numbers.append(int(part[start:], radix) if start < len(part) else 0)
        except ValueError:  # over sys.get_int_max_str_digits(): far too big anyway
            return None
    last = numbers.pop()
    if last >= 256 ** (4 - len(numbers)) or any(n > 255 for n in numbers):
        return None
    for i, n in enumerate(numbers):
        last += n << (24 - 8 * i)
    return f"{last >> 24}.{last >> 16 & 255}.{last >> 8 & 255}.{last & 255}"


def legacy_query(href: str, charset: str) -> str:
    """`href` with the non-ASCII text of its query percent-encoded in `charset`, the encoding of
    the page it is on, as browsers encode a link's query (WHATWG URL parser, query state): "é" is
    "%E9" on a windows-1252 page; a character the charset lacks is sent as "&#N;" ("%26%23N%3B").
    The path and fragment stay as they are (browsers encode them in UTF-8, as the crawl does).
    Call it for pages in a charset other than UTF-8/16/32 only. Never raises."""
    q = href.find("?")
    if q < 0 or href.isascii():
        return href
    h = href.find("#")
    if 0 <= h < q:
        return href
    end = len(href) if h < 0 else h
    query = href[q + 1 : end]
    if query.isascii():
        return href

    def encode(m: re.Match[str]) -> str:
        run, out = m.group(0), []
        while run:
            try:
                data, bad, run = run.encode(charset), "", ""
            except UnicodeEncodeError as exc:
                data, bad, run = (
                    run[: exc.start].encode(charset),
                    run[exc.start : exc.end],
                    run[exc.end :],
                )
            out += [QUERY_BYTE[b] for b in data]
            out += [f"%26%23{ord(c)}%3B" for c in bad]
        return "".join(out)

    try:
        return href[: q + 1] + _NON_ASCII.sub(encode, query) + href[end:]
    except (UnicodeError, LookupError, ValueError, TypeError):  # a codec that cannot encode
        return href
