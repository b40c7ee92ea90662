"""A page's microdata items (HTML's ``itemscope`` / ``itemprop``), as extruct lists them.

Each top-level item (an ``itemscope`` that is no one's ``itemprop``) is
``{"type": ..., "id": ..., "properties": {name: value}}``: ``type`` its ``itemtype`` (a string,
a list when it names several; left out when it has none), ``id`` its ``itemid`` (left out when
none); a property given once is its value, given more often a list of them. A value is read as
the HTML standard says: a nested item for an ``itemscope``, ``content`` of a <meta>, the absolute
URL of an <a>/<area>/<link> href or of an <img>/<audio>/<video>/<iframe>/<embed>/<source>/
<track> src, <object>'s data, <data>/<meter>'s value, <time>'s datetime, else a ``content``
attribute (schema.org's examples put a machine-readable price there), else the element's text,
whitespace collapsed. ``itemref`` is not followed.

Bounded: MAX_ITEMS top-level items, MAX_PROPERTIES properties a page, items nested MAX_DEPTH
deep, each value at most MAX_VALUE_CHARS; what is left out is counted ("microdata_over",
"microdata_too_deep").
"""

from __future__ import annotations

from collections import Counter
from typing import Any
from urllib.parse import urljoin

from selectolax.lexbor import LexborNode

from crawler.urls.syntax import STRIP

__all__ = ["MAX_DEPTH", "MAX_ITEMS", "MAX_PROPERTIES", "MAX_VALUE_CHARS", "read_microdata"]

MAX_ITEMS = 1000
MAX_PROPERTIES = 10_000
MAX_DEPTH = 16
MAX_VALUE_CHARS = 10_000

_SRC = frozenset({"audio", "embed", "iframe", "img", "source", "track", "video"})
_HREF = frozenset({"a", "area", "link"})
_VALUE = frozenset({"data", "meter"})


class _Budget:
    __slots__ = ("properties", "skipped")

    def __init__(self, skipped: Counter[str]) -> None:
        self.properties = MAX_PROPERTIES
        self.skipped = skipped


def read_microdata(scopes: list[LexborNode], base: str, skipped: Counter[str]) -> list[Any]:
    """The top-level microdata items among `scopes` (a page's ``itemscope`` elements, in
    document order), URLs made absolute against `base`."""
    items: list[Any] = []
    budget = _Budget(skipped)
    for node in scopes:
        if "itemprop" in node.attributes:  # a property of another item
            continue
        if len(items) >= MAX_ITEMS:
            skipped["microdata_over"] += 1
            continue
        items.append(_item(node, base, 1, budget))
    return items


def _item(scope: LexborNode, base: str, depth: int, budget: _Budget) -> dict[str, Any]:
    attrs = scope.attributes
    item: dict[str, Any] = {}
    types = (attrs.get("itemtype") or "").split()
    if types:
        item["type"] = types[0] if len(types) == 1 else types
    if attrs.get("itemid"):
        item["id"] = (attrs.get("itemid") or "").strip()
    found: dict[str, list[Any]] = {}
    stack = list(scope.iter())[::-1]  # the item's elements, in document order
    while stack:
        node = stack.pop()
        attrs = node.attributes
        nested = "itemscope" in attrs
        names = (attrs.get("itemprop") or "").split()
        if names:
            value = _nested(node, base, depth, budget) if nested else _value(node, attrs, base)
            for name in names:
                if budget.properties <= 0:
                    budget.skipped["microdata_over"] += 1
                    break
                budget.properties -= 1
                found.setdefault(name, []).append(value)
        if not nested:  # an itemscope's elements are its own
            stack.extend(list(node.iter())[::-1])
    item["properties"] = {k: v[0] if len(v) == 1 else v for k, v in found.items()}
    return item


def _nested(node: LexborNode, base: str, depth: int, budget: _Budget) -> Any:
    if depth >= MAX_DEPTH:
        budget.skipped["microdata_too_deep"] += 1
        return None
    return _item(node, base, depth + 1, budget)


def _value(node: LexborNode, attrs: dict[str, str | None], base: str) -> str:
    tag = node.tag
    if tag == "meta":
        value = attrs.get("content") or ""
    elif tag in _HREF or tag in _SRC:
        raw = (attrs.get("href" if tag in _HREF else "src") or "").strip(STRIP)
        value = _absolute(raw, base) if raw else ""
    elif tag == "object":
        value = _absolute((attrs.get("data") or "").strip(STRIP), base)
    elif tag in _VALUE:
        value = attrs.get("value") or ""
    elif tag == "time" and attrs.get("datetime") is not None:
        value = attrs.get("datetime") or ""
    elif attrs.get("content"):  # not HTML's rule, but schema.org's examples' (and extruct's)
        value = attrs.get("content") or ""
    else:
        value = " ".join(_shown_text(node)[: 4 * MAX_VALUE_CHARS].split())
    return value[:MAX_VALUE_CHARS]


_UNSHOWN = frozenset(("script", "style", "template"))
_UNSHOWN_CSS = ", ".join(sorted(_UNSHOWN))


def _shown_text(node: LexborNode) -> str:
    """`node`'s text without what scripts, styles and templates hold (their code is not the
    value's text; as extruct reads it), at most 4 * MAX_VALUE_CHARS characters."""
    if node.css_first(_UNSHOWN_CSS) is None:
        return node.text(deep=True)
    parts: list[str] = []
    size = 0
    child, parents = node.child, list[LexborNode]()
    while size < 4 * MAX_VALUE_CHARS:
        if child is None:
            if not parents:
                break
            child = parents.pop().next
            continue
        if child.tag == "-text":
            text = child.text_content or ""
            parts.append(text)
            size += len(text)
        elif child.child is not None and child.tag not in _UNSHOWN:
            parents.append(child)
            child = child.child
            continue
        child = child.next
    return "".join(parts)


def _absolute(url: str, base: str) -> str:
    """`url` resolved against `base` (as given when it cannot be: a bad IPv6 literal)."""
    if not url:
        return url
    try:
        return urljoin(base, url)
    except ValueError:
        return url
