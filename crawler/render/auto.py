"""``[render] mode = "auto"``: render a page only when its static HTML looks script-driven.

`script_driven` reads the static body and its parsed `Markup` and names the signal it saw, or
None. A page without a ``<script`` is never rendered. With scripts, any one of:

- an empty application root: ``<div id="root"></div>`` (``app``, ``__next``, ``__nuxt``,
  ``___gatsby``, ``svelte``...), or an empty ``<app-root>``;
- a ``<noscript>`` asking for JavaScript ("enable JavaScript", "requires JavaScript");
- fewer than ``FEW_LINKS`` links and less than ``LITTLE_TEXT`` characters of visible text.

Measured (docs/render.md): every page of the fixture's script host that needs it, and none of
the static documentation sites' pages (sqlite3-doc, python3.11-doc).
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser

from crawler.parse.markup import Markup

__all__ = ["FEW_LINKS", "LITTLE_TEXT", "script_driven"]

FEW_LINKS = 5
"""Fewer links than this (with little text) make a page with scripts look script-driven."""
LITTLE_TEXT = 200
"""Characters of visible text under which a page with scripts and few links looks empty."""
SCAN_BYTES = 512 * 1024
"""The static body is searched up to here for the markers."""

_ROOT_IDS = rb"root|app|__next|__nuxt|___gatsby|svelte|application|main-app|spa|react-root"
_EMPTY_ROOT = re.compile(
    rb"<(div|main|section|body)\b[^>]*\bid\s*=\s*[\"']?(?:" + _ROOT_IDS + rb")[\"'\s>/]"
    rb"[^>]*>\s*(?:<!--.*?-->\s*)*</\1\s*>|<(app-root)\b[^>]*>\s*</app-root\s*>",
    re.IGNORECASE | re.DOTALL,
)
_NOSCRIPT = re.compile(rb"<noscript\b[^>]*>(.{0,2000}?)</noscript", re.IGNORECASE | re.DOTALL)
_ASKS = re.compile(rb"enable|turn on|requires?|needs?|must have|support", re.IGNORECASE)


def script_driven(body: bytes, markup: Markup) -> str | None:
    """Why the page looks script-driven ("empty app root", "noscript asks for JavaScript",
    "few links and little text"), or None."""
    head = body[:SCAN_BYTES]
    if not markup.is_html or not re.search(rb"<script\b", head, re.IGNORECASE):
        return None
    if _EMPTY_ROOT.search(head):
        return "empty app root"
    for block in _NOSCRIPT.findall(head):
        if b"javascript" in block.lower() and _ASKS.search(block):
            return "noscript asks for JavaScript"
    if len(markup.hrefs) < FEW_LINKS and _visible_text(head) < LITTLE_TEXT:
        return "few links and little text"
    return None


def _visible_text(body: bytes) -> int:
    """Characters of the body's visible text (scripts, styles, templates left out)."""
    tree = LexborHTMLParser(body)
    node = tree.body
    if node is None:
        return 0
    for hidden in node.css("script, style, noscript, template"):
        hidden.decompose()
    return len("".join(node.text(deep=True, separator=" ").split()))
