"""What a crawl reads of each HTML page beyond its links and text: `Yields`, `read_yields`.

`Yields` says what is asked (metadata, ``[[extract]]`` rules, an extract hook); `read_yields`
reads it off a parsed page's lexbor tree, before the main content's extraction changes the tree.
A rule or a hook that fails gives its page a ``fields_error`` and the crawl goes on.

The hook, ``Crawler(config, extract=fn)``, is called with an `ExtractPage` (the page's URL,
status, headers, lexbor tree and what the rules and metadata found) and returns a dict of
JSON values, added to the page's ``fields`` (replacing a rule's field of the same name).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from selectolax.lexbor import LexborHTMLParser, LexborNode

from crawler.parse.yields.fields import Rule, read_fields
from crawler.parse.yields.meta import read_meta

__all__ = ["ExtractFn", "ExtractPage", "Yielded", "Yields", "read_yields"]

MAX_ERROR_CHARS = 500
"""Longest ``fields_error`` kept (an exception's message can be anything)."""


@dataclass(frozen=True, slots=True)
class ExtractPage:
    """What an extract hook is given: one HTML page, parsed.

    `tree` is selectolax's `LexborHTMLParser` of the page (of its rendered DOM when it was
    rendered): read it (``tree.css("h2")``, ``tree.css_first("link[rel=next]")``), do not change
    it, the crawl reads the page's main content from it afterwards. `base` is the URL its
    relative links resolve against (its <base href>, else `url`). `fields` holds what the
    ``[[extract]]`` rules found, `meta` the page's metadata (None without ``[output] meta``)."""

    url: str
    base: str
    status: int | None
    headers: tuple[tuple[str, str], ...]
    tree: LexborHTMLParser
    fields: dict[str, Any]
    meta: dict[str, Any] | None

    def header(self, name: str) -> str | None:
        """The first value of response header `name` (any case), or None."""
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), None)


ExtractFn = Callable[[ExtractPage], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Yields:
    """What is read of each HTML page: `meta` (the metadata), `rules` (the ``[[extract]]``
    rules), `hook` (an extract hook); `status` and `headers`, the response's (for the hook)."""

    meta: bool = False
    rules: tuple[Rule, ...] = ()
    hook: ExtractFn | None = None
    status: int | None = None
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, meta: bool, rules: tuple[Rule, ...], hook: ExtractFn | None) -> Yields | None:
        """The crawl's yields, None when nothing is asked."""
        return cls(meta, rules, hook) if meta or rules or hook is not None else None

    @property
    def fields(self) -> bool:
        """Whether pages get ``fields`` (rules or a hook)."""
        return bool(self.rules) or self.hook is not None

    def at(self, status: int | None, headers: tuple[tuple[str, str], ...]) -> Yields:
        """These yields for one response (what its hook is told; without a hook, these)."""
        if self.hook is None:
            return self
        return dataclasses.replace(self, status=status, headers=headers)


@dataclass(frozen=True, slots=True)
class Yielded:
    """What `read_yields` read of one page (None: not asked)."""

    meta: dict[str, Any] | None = None
    fields: dict[str, Any] | None = None
    fields_error: str | None = None


def read_yields(
    tree: LexborHTMLParser,
    yields: Yields,
    url: str,
    base: str,
    found_meta: list[LexborNode] | None = None,
) -> Yielded:
    """Read what `yields` asks of the page at `url` (`base`: its links' base; `found_meta`: the
    elements of `crawler.parse.yields.meta.META_CSS`, when a pass over the tree found them)."""
    meta = read_meta(tree, base, found_meta) if yields.meta else None
    if not yields.fields:
        return Yielded(meta)
    fields, problems = read_fields(tree, yields.rules, base)
    if yields.hook is not None:
        page = ExtractPage(url, base, yields.status, yields.headers, tree, dict(fields), meta)
        problem = _run_hook(yields.hook, page, fields)
        if problem is not None:
            problems.append(f"extract hook: {problem}")
    error = "; ".join(problems)[:MAX_ERROR_CHARS] if problems else None
    return Yielded(meta, fields, error)


def _run_hook(hook: ExtractFn, page: ExtractPage, fields: dict[str, Any]) -> str | None:
    """Call `hook` and put what it returns into `fields`; what went wrong, or None."""
    try:
        got = hook(page)
    except Exception as exc:  # the user's code: its page is marked, the crawl goes on
        return f"{type(exc).__name__}: {exc}"
    if not isinstance(got, dict):  # (typed as a dict: the hook's author may not have read it)
        return f"returned {type(got).__name__}, not a dict"  # type: ignore[unreachable]
    if not all(isinstance(key, str) for key in got):
        return "returned a dict whose keys are not all strings"
    try:  # what the JSON Lines output will have to write
        json.dumps(got, ensure_ascii=False, allow_nan=False).encode()
    except (TypeError, ValueError, RecursionError) as exc:
        return f"returned a value JSON cannot hold ({exc})"
    fields.update(got)
    return None
