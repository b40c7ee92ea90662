"""Markdown that says what the page said and nothing more: escaping, links, code, the writer.

A page's text is data, never markup: every character CommonMark could read as markup is
escaped (so no raw HTML, autolink, entity, link or block construct comes from the page's
words), a code span or fence is longer than any run of backticks inside it, a link's scheme is
on an allow-list (read as a browser reads it: case-insensitive, tabs and newlines dropped,
controls and spaces trimmed) and its destination is percent-encoded where it could end early.
The output is bounded: list nesting is indented at most `MAX_LEVELS` deep (deeper items are
written at the last level), and `as_markdown` stops at a block boundary before `limit`
characters.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import quote, urljoin, urlsplit

if TYPE_CHECKING:
    from crawler.parse.extract.block import Block

__all__ = [
    "MAX_LEVELS",
    "as_markdown",
    "code_span",
    "escape",
    "fenced",
    "guard_start",
    "link_target",
    "overhead",
]

MAX_LEVELS = 8  # list nesting written; a deeper item is written at the eighth level

_BACKTICKS = re.compile(r"`+")
# markdown's markup characters; "_" only at a word's edge (snake_case stays readable), "&"
# only where it starts an entity, "!" only at a piece's end (where a link's "[" may follow)
_MD_ESCAPE = re.compile(
    r"([\\`*\[\]<>#|]|(?<![^\W_])_|_(?![^\W_])|&(?=#?[0-9A-Za-z]+;)|!$)"
)  # fmt: skip
# what starts a block at a line's start: a list marker, a thematic break or setext underline,
# a tilde fence ("#", ">", "*", "`", "_" and "|" are escaped wherever they are)
_BLOCK_START = re.compile(r"^(?:[-+=~]|(\d{1,9})[.)])")
_SCHEMES = frozenset(("http", "https", "mailto", "ftp"))
_TRIMMED = "".join(map(chr, range(0x21)))  # C0 controls and space, trimmed as WHATWG does
_DROPPED = str.maketrans("", "", "\t\n\r")  # removed anywhere, as WHATWG does
# what ends or breaks a link destination, or is read as an escape, entity or code: encoded
_UNSAFE_URL = re.compile(r"[\x00-\x20\x7f-\x9f<>()\"'`|\\\s]")
_ENTITY_LIKE = re.compile(r"&(?=#?[0-9A-Za-z]+;)")


def escape(text: str) -> str:
    """`text` with the characters markdown would read as markup escaped."""
    return _MD_ESCAPE.sub(r"\\\1", text)


def guard_start(markdown: str) -> str:
    """`markdown` with a list marker, break, underline or fence at its start escaped (a
    paragraph of "- x" or "1. x" is text, not a list)."""
    found = _BLOCK_START.match(markdown)
    if found is None:
        return markdown
    at = found.end() - 1 if found.group(1) else 0
    return f"{markdown[:at]}\\{markdown[at:]}"


def code_span(inner: str, in_cell: bool = False) -> str:
    """A code span of `inner`, fenced by more backticks than it holds in a row (in a table
    cell its pipes escaped: a table splits its rows on them, code spans or not)."""
    if in_cell:
        inner = inner.replace("|", "\\|")
    fence = "`" * (_longest_run(inner) + 1)
    pad = " " if inner.startswith("`") or inner.endswith("`") else ""
    return f"{fence}{pad}{inner}{pad}{fence}"


def fenced(code: str) -> str:
    """A fenced code block of `code`, its fence longer than any run of backticks inside."""
    fence = "`" * max(3, _longest_run(code) + 1)
    return f"{fence}\n{code}\n{fence}"


def _longest_run(text: str) -> int:
    return max((len(run) for run in _BACKTICKS.findall(text)), default=0)


def link_target(base: str, href: str) -> str | None:
    """The destination of a link to `href` on a page at `base`, absolute and safe to write
    in `(...)`; None for an in-page anchor and a scheme not on the allow-list (javascript:,
    vbscript:, data:, file:...), however it is spelled."""
    href = href.strip(_TRIMMED).translate(_DROPPED)
    if not href or href.startswith("#"):
        return None
    try:
        url = urljoin(base, href)
        scheme = urlsplit(url).scheme
    except ValueError:
        return None
    if scheme.lower() not in _SCHEMES:
        return None
    url = _UNSAFE_URL.sub(lambda found: quote(found.group(), safe=""), url)
    return _ENTITY_LIKE.sub(r"\\&", url)


def overhead(block: Block) -> int:
    """What `as_markdown` writes for `block` beyond its markdown, about (a list item's indent
    reckoned from its own marker: `as_markdown` counts exactly)."""
    if block.kind == "pre":
        return 2 * (_longest_run(block.markdown) + 4)
    if block.kind == "row":
        return 8 * (block.cells + 2)
    if block.kind == "li":
        return (min(block.depth, MAX_LEVELS - 1) + 1) * (len(block.marker) + 1) - 1
    return 10


_TIGHT = frozenset(("li", "row"))  # kinds whose runs are one line apart, not a blank line


def as_markdown(blocks: list[Block], limit: int | None = None) -> tuple[str, bool]:
    """CommonMark of the blocks, and whether it stopped before the last block to stay within
    `limit` characters."""
    parts: list[str] = []
    size = 0
    previous = ""
    columns: list[int] = []  # the content column of each open list level
    widest = 0  # the cells of the open table's widest row
    for index, block in enumerate(blocks):
        kind = block.kind
        separator = ("\n" if kind in _TIGHT and kind == previous else "\n\n") if parts else ""
        if kind.startswith("h") and len(kind) == 2:
            written = f"{'#' * int(kind[1])} {block.markdown}"
        elif kind == "li":
            if previous != "li":
                columns.clear()
            written = _item(block, columns)
        elif kind == "pre":
            written = fenced(block.markdown)
        elif kind == "quote":
            written = "> " + guard_start(block.markdown)
        elif kind == "row":
            if previous != "row":
                widest = _widest(blocks, index)
            written = _row(block, widest, header=previous != "row")
        else:
            written = guard_start(block.markdown)
        if limit is not None and size + len(separator) + len(written) > limit:
            return "".join(parts), True
        parts += (separator, written)
        size += len(separator) + len(written)
        previous = kind
    return "".join(parts), False


def _item(block: Block, columns: list[int]) -> str:
    """A list item, indented to the content of the item it is nested in: one level deeper than
    the item before at most (markdown has no item without a parent), `MAX_LEVELS` in all."""
    depth = min(block.depth, len(columns), MAX_LEVELS - 1)
    del columns[depth:]
    indent = columns[-1] if columns else 0
    columns.append(indent + len(block.marker) + 1)
    return f"{' ' * indent}{block.marker} {guard_start(block.markdown)}"


def _widest(blocks: list[Block], index: int) -> int:
    """The cells of the widest row of the table whose first row is `blocks[index]`."""
    widest = 1
    for row in blocks[index:]:
        if row.kind != "row":
            break
        widest = max(widest, row.cells)
    return widest


def _row(block: Block, widest: int, header: bool) -> str:
    """A table row padded to `widest` cells (every row of a pipe table has as many as its
    delimiter row); the first, its header, with the delimiter row under it."""
    padding = " |" * (widest - max(1, block.cells))
    written = f"| {block.markdown} |{padding}"
    return f"{written}\n|" + " --- |" * widest if header else written
