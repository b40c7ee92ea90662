"""URL syntax: the RFC 3986 pieces `crawler.urls` is built from (regexes, percent-encoding fixes,
dot-segment removal, parameter patterns). Pure functions and constants, no state."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

__all__ = [
    "ASCII_HOST_OK", "DEFAULT_PORTS", "PATH_FIX", "PATH_OK", "QUERY_FIX", "QUERY_OK", "SPLIT",
    "STRIP", "TAB_NL", "compile_patterns", "cut_fragment", "fix_pct", "pair_key",
    "remove_dot_segments",
]  # fmt: skip

DEFAULT_PORTS: Final = {"http": "80", "https": "443"}
STRIP: Final = "".join(map(chr, range(0x21)))  # C0 controls and space
TAB_NL: Final = {ord("\t"): None, ord("\n"): None, ord("\r"): None}
# RFC 3986 appendix B, with a valid scheme; the fragment (after "#") is never captured.
SPLIT: Final = re.compile(
    r"(?:([A-Za-z][A-Za-z0-9+.\-]*):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?", re.S
).match
PATH_OK: Final = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/]*").fullmatch
QUERY_OK: Final = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*").fullmatch
PATH_FIX: Final = re.compile(r"%([0-9A-Fa-f]{2})|[^A-Za-z0-9\-._~!$&'()*+,;=:@/%]+|%").sub
QUERY_FIX: Final = re.compile(r"%([0-9A-Fa-f]{2})|[^A-Za-z0-9\-._~!$&'()*+,;=:@/?%]+|%").sub
SURROGATE: Final = re.compile("[\ud800-\udfff]")
UNRESERVED: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
ENCODED: Final = tuple(f"%{i:02X}" for i in range(256))
DECODED: Final = tuple(chr(i) if chr(i) in UNRESERVED else f"%{i:02X}" for i in range(256))
ASCII_HOST_OK: Final = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=]+").fullmatch
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
