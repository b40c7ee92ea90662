"""A page's JSON-LD blocks (``<script type="application/ld+json">``), parsed and bounded.

Each block is read as extruct reads it: HTML comment and CDATA wrappers stripped, control
characters in strings allowed, a top-level array's items listed one by one. A block that is
not JSON, or holds NaN / Infinity (which no JSON output can hold), is skipped and counted
("jsonld_broken"); one longer than MAX_BLOCK_CHARS, or past MAX_PAGE_CHARS of JSON-LD on the
page, is skipped unparsed ("jsonld_too_big"); one nested deeper than MAX_DEPTH, skipped
("jsonld_too_deep"). A string that escapes half a surrogate pair ("\\ud800") gets U+FFFD in its
place: a UTF-8 output cannot hold it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

__all__ = ["MAX_BLOCKS", "MAX_BLOCK_CHARS", "MAX_DEPTH", "MAX_PAGE_CHARS", "read_jsonld"]

MAX_BLOCK_CHARS = 1_000_000
"""Longest JSON-LD block parsed (real ones are a few KB; a product feed may be ~100 KB)."""
MAX_PAGE_CHARS = 2_000_000
"""JSON-LD parsed per page, all blocks together."""
MAX_BLOCKS = 100
"""JSON-LD blocks read per page; the rest are counted ("jsonld_over")."""
MAX_DEPTH = 64
"""Deepest nesting of arrays and objects kept (schema.org data is rarely 10 deep)."""

_WRAPPER = re.compile(r"^\s*(?://\s*)?(?:<!--|<!\[CDATA\[)|(?://\s*)?(?:-->|\]\]>)\s*$")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class _NotJson(ValueError):
    """NaN or Infinity in a block: valid for Python's json, not for JSON."""


def _refuse_constant(name: str) -> Any:
    raise _NotJson(name)


def read_jsonld(scripts: Iterable[str], skipped: Counter[str]) -> list[Any]:
    """The JSON-LD items of the texts of a page's ld+json scripts, in document order; what was
    skipped is counted in `skipped`."""
    items: list[Any] = []
    budget = MAX_PAGE_CHARS
    for n, text in enumerate(scripts):
        if n >= MAX_BLOCKS:
            skipped["jsonld_over"] += 1
            continue
        if len(text) > min(MAX_BLOCK_CHARS, budget):
            skipped["jsonld_too_big"] += 1
            continue
        budget -= len(text)
        data = _parse(text, skipped)
        if data is None:
            continue
        if isinstance(data, list):
            items.extend(data)
        else:
            items.append(data)
    return items


def _parse(text: str, skipped: Counter[str]) -> Any:
    """One block's JSON, or None (counted) when it is skipped."""
    text = _WRAPPER.sub("", text.strip())
    if not text:
        return None
    try:
        data = json.loads(text, strict=False, parse_constant=_refuse_constant)
    except RecursionError:  # nested past the interpreter's limit
        skipped["jsonld_too_deep"] += 1
        return None
    except ValueError:  # not JSON (JSONDecodeError), NaN, an integer of 4,300+ digits
        skipped["jsonld_broken"] += 1
        return None
    if text.count("[") + text.count("{") > MAX_DEPTH and _depth(data) > MAX_DEPTH:
        skipped["jsonld_too_deep"] += 1
        return None
    if _SURROGATE_ESCAPE.search(text):
        data = _mend(data)
    return data


def _depth(value: Any) -> int:
    """The nesting depth of parsed JSON (a scalar: 0), without recursion; stops past MAX_DEPTH."""
    deepest = 0
    stack = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            node = node.values()
        elif not isinstance(node, list):
            continue
        depth += 1
        if depth > MAX_DEPTH:
            return depth
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in node)
    return deepest


def _mend(value: Any) -> Any:
    """`value` with every lone surrogate in its strings (keys too) replaced by U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_mend(v) for v in value]
    if isinstance(value, dict):
        return {_mend(k): _mend(v) for k, v in value.items()}
    return value
