"""The fields a crawl is asked for (``[[extract]]`` rules), read with lexbor's CSS selectors.

A rule names a field, a CSS selector and what to take of each element it matches: ``attr`` =
"text" (its text, whitespace collapsed), "html" (its outer HTML) or an attribute's name (its
value; an ``href`` or ``src`` made absolute against the page's base, as links are); ``all``:
every match, as a list (else the first, or None when nothing matches). Bounded: MAX_MATCHES
matches a rule, MAX_VALUE_CHARS a value, MAX_PAGE_CHARS for all fields of a page; what is cut
is said in the result's ``fields_error``, the values kept.
"""

from __future__ import annotations

import contextlib
from typing import Any, Protocol
from urllib.parse import urljoin

from selectolax.lexbor import LexborHTMLParser, LexborNode, SelectolaxError

from crawler.urls.syntax import STRIP

__all__ = ["MAX_MATCHES", "MAX_PAGE_CHARS", "MAX_VALUE_CHARS", "Rule", "read_fields",
           "selector_problem"]  # fmt: skip

MAX_MATCHES = 10_000
"""Elements a rule with ``all = true`` takes at most."""
MAX_VALUE_CHARS = 100_000
"""Longest value kept (a text or an HTML cut there)."""
MAX_PAGE_CHARS = 1_000_000
"""All the fields of a page together: rules past it give None (or an empty list)."""

_URL_ATTRS = frozenset({"href", "src"})
_PROBE = LexborHTMLParser("<p></p>")


class Rule(Protocol):
    """One ``[[extract]]`` rule (`crawler.config.sections.ExtractRule` is one)."""

    @property
    def name(self) -> str: ...
    @property
    def css(self) -> str: ...
    @property
    def attr(self) -> str: ...
    @property
    def all(self) -> bool: ...


def selector_problem(css: str) -> str | None:
    """Why lexbor refuses the CSS selector `css`, or None when it takes it."""
    if not css.strip():
        return "an empty selector"
    try:
        _PROBE.css(css)
    except SelectolaxError as exc:
        return f"not a CSS selector lexbor reads ({exc})"
    return None


def read_fields(
    tree: LexborHTMLParser, rules: tuple[Rule, ...], base: str
) -> tuple[dict[str, Any], list[str]]:
    """(field name -> value of each rule, problems): a rule that fails is None and named in the
    problems, the others are read."""
    fields: dict[str, Any] = {}
    problems: list[str] = []
    left = MAX_PAGE_CHARS
    for rule in rules:
        try:
            value, used, cut = _read(tree, rule, base, left)
        except (SelectolaxError, ValueError) as exc:
            fields[rule.name] = [] if rule.all else None
            problems.append(f"rule {rule.name!r}: {exc}")
            continue
        left -= used
        fields[rule.name] = value
        if cut:
            problems.append(f"rule {rule.name!r}: {cut}")
    return fields, problems


def _read(tree: LexborHTMLParser, rule: Rule, base: str, left: int) -> tuple[Any, int, str]:
    """(value, characters used, what was cut or "")."""
    if not rule.all:
        node = tree.css_first(rule.css)
        if node is None:
            return None, 0, ""
        value = _take(node, rule.attr, base)
        if value is not None and len(value) > left:
            return None, 0, f"over the page's {MAX_PAGE_CHARS:,} characters of fields"
        return value, len(value or ""), ""
    nodes = tree.css(rule.css)
    cut = ""
    if len(nodes) > MAX_MATCHES:
        cut = f"{len(nodes):,} matches, the first {MAX_MATCHES:,} kept"
        nodes = nodes[:MAX_MATCHES]
    values: list[str | None] = []
    used = 0
    for node in nodes:
        value = _take(node, rule.attr, base)
        size = len(value or "")
        if used + size > left:
            cut = f"over the page's {MAX_PAGE_CHARS:,} characters of fields, {len(values):,} kept"
            break
        used += size
        values.append(value)
    return values, used, cut


def _take(node: LexborNode, attr: str, base: str) -> str | None:
    """What `attr` says to take of `node` (None for an attribute it does not have)."""
    if attr == "text":
        return " ".join(node.text(deep=True)[: 4 * MAX_VALUE_CHARS].split())[:MAX_VALUE_CHARS]
    if attr == "html":
        return (node.html or "")[:MAX_VALUE_CHARS]
    value = node.attributes.get(attr.lower())
    if value is None:
        return None
    if attr in _URL_ATTRS:
        value = value.strip(STRIP)
        if value:
            with contextlib.suppress(ValueError):  # a bad IPv6 literal: kept as given
                value = urljoin(base, value)
    return value[:MAX_VALUE_CHARS]
