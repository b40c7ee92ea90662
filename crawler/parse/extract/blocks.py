"""The chosen elements as blocks: paragraphs, headings, list items, code, quotes, table rows.

One walk over each chosen element's subtree (lexbor's child / next pointers, no recursion: the
defused tree can be 512 deep) reads its text into `Block`s, each with its plain text and, when
asked, its markdown (links made absolute against the page's URL, emphasis, inline code).
The lists of links inside the main content went before the walk
(`crawler.parse.extract.clean.strip_link_lists`); the walk leaves out images, comments and a
heading's permalink (a "¶" linking to the page itself), and reads a table cell's paragraphs and
lists into its row.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from selectolax.lexbor import LexborNode

from crawler.parse.extract.block import Block
from crawler.parse.extract.markdown import code_span, escape, link_target, overhead

__all__ = ["Block", "read_blocks"]

_SPACES = re.compile(r"\s+")

_BLOCK_TAGS = frozenset((
    "p", "div", "section", "article", "main", "address", "figure", "figcaption", "center",
    "form", "fieldset", "details", "summary", "hgroup", "dl", "dt", "dd", "ul", "ol", "table",
    "caption", "thead", "tbody", "tfoot", "body", "hr",
))  # fmt: skip
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
# blocks read as part of a table cell's text (a table inside it too: a cell is one line)
_IN_CELL = _BLOCK_TAGS | _HEADINGS.keys() | {"li", "pre", "blockquote", "br", "tr"}
_SKIPPED = frozenset(("img", "picture", "source", "track", "map", "area", "wbr", "-comment"))
_EMPHASIS = {"em": "*", "i": "*", "strong": "**", "b": "**"}


class _Mark(str):
    """Where an inline element's markdown starts among the open block's pieces (a type of its
    own: no text the page holds is taken for one)."""

    __slots__ = ()


class _Code(str):
    """A code span written, with the text inside it (two in a row are written as one: their
    backticks would run together)."""

    inner: str


class _Reader:
    """The walk's state: the open block's text and markdown pieces, and the blocks so far;
    the characters written so far, against `limit` (`done`: read no more)."""

    __slots__ = (
        "base", "blocks", "cell_at", "cells", "code", "cut", "kind", "limit", "lists",
        "markdown", "md", "open", "quote", "row", "text", "used",
    )  # fmt: skip

    def __init__(self, base: str, markdown: bool, limit: int) -> None:
        self.base = base
        self.markdown = markdown
        self.limit = limit
        self.used = [0, 0]  # the text and markdown of the blocks so far, with what joins them
        self.open = [0, 0]  # the open block's, whitespace not collapsed yet
        self.cut = False  # a block was cut or left out to stay within `limit`
        self.blocks: list[Block] = []
        self.text: list[str] = []
        self.md: list[str] = []
        self.kind = "p"
        self.lists: list[list[int]] = []  # per open list: [next number or 0 for bullets]
        self.quote = 0
        self.cells = 0  # open table cells: their blocks are read into the cell's line
        self.row: list[tuple[str, str]] | None = None  # the open row's cells, text and markdown
        self.cell_at = (0, 0)  # where the open cell's text and markdown pieces start
        self.code = 0  # open inline <code> elements: their text is not escaped

    def done(self) -> bool:
        """Whether a block was cut, or the blocks so far and the open one reach the limit."""
        used, open_, limit = self.used, self.open, self.limit
        return self.cut or used[0] + open_[0] > limit or used[1] + open_[1] > limit

    def flush(self, next_kind: str = "p") -> None:
        text = _SPACES.sub(" ", "".join(self.text)).strip()
        if text:
            markdown = ""
            if self.markdown:
                while (start := _last_mark(self.md)) >= 0:  # elements still open: closed here
                    self._wrap_at(start, code=self.md[start] == "code")
                markdown = _SPACES.sub(" ", "".join(self.md)).strip()
            kind = "quote" if self.quote and self.kind == "p" else self.kind
            depth, marker = 0, "-"
            if kind == "li" and self.lists:
                depth = len(self.lists) - 1
                counter = self.lists[-1]
                if counter[0]:
                    marker = f"{counter[0]}."
                    counter[0] += 1
            self._append(Block(kind, text, markdown, depth, marker))
        self.text.clear()
        self.md.clear()
        self.open = [0, 0]
        self.kind = next_kind
        if self.markdown:  # the code elements still open go on in the next block
            self.md.extend(_Mark("code") for _ in range(self.code))

    def _append(self, block: Block) -> None:
        """Add `block`, cut to what is left of the limit (its markdown then plain text)."""
        text_room = self.limit - self.used[0] - 2
        md_room = self.limit - self.used[1] - overhead(block) - 2
        if len(block.text) > text_room or (self.markdown and len(block.markdown) > md_room):
            self.cut = True
            block.text = block.text[: max(0, text_room)].rstrip()
            if self.markdown:  # the inline markup goes: its text cut as it is, escaped
                plain = block.text if block.kind == "pre" else escape(block.text)
                block.markdown = plain[: max(0, md_room)].rstrip("\\ ")
            if not block.text or (self.markdown and not block.markdown):
                return
        self.blocks.append(block)
        self.used[0] += len(block.text) + 2
        self.used[1] += len(block.markdown) + overhead(block) + 2

    def stop(self) -> None:
        """Read no more: the open block ends here, within the limit."""
        self.flush()
        self.cut = True

    def add(self, text: str, markdown: str | None = None) -> None:
        self.text.append(text)
        self.open[0] += len(text)
        if self.markdown:
            if markdown is None:
                markdown = text if self.code else escape(text)
            self.md.append(markdown)
            self.open[1] += len(markdown)

    def pre(self, node: LexborNode) -> None:
        self.flush()
        # a CR would end a line in markdown; in the tree only a character reference makes one
        code = node.text(deep=True).replace("\r\n", "\n").replace("\r", "\n").strip("\n")
        if code.strip():
            self._append(Block("pre", code, code if self.markdown else ""))

    def enter(self, node: LexborNode) -> bool:
        """Open `node`; whether to read what is inside it."""
        tag = node.tag or ""
        if tag == "-text":
            value = node.text_content
            if value:
                self.add(value)
            return False  # nothing inside, nothing to close
        if tag in _SKIPPED:
            return False
        if tag == "br":
            self.add("\n", "  \n" if self.markdown else None)  # a hard line break
            return False
        if self.cells and tag in _IN_CELL:
            if self.text:  # a paragraph, list or code inside a cell: part of the row's line
                self.add(" ")
            return True
        if tag == "pre":
            self.pre(node)
            return False
        if tag == "a" and _is_permalink(node):
            return False
        if tag == "p" and not self.markdown and not self.cells and node.css_first("br") is None:
            # a paragraph's text in one call: lexbor joins its inline elements' text as the
            # walk does (nothing in it to leave out: junk went before): python3.11-doc's
            # pages 2.0 -> 1.8 ms (the markdown walk: 6.4 ms)
            self.flush()
            self.add(node.text(deep=True))
            self.flush()
            return False
        if tag in _HEADINGS:
            self.flush(tag)
        elif tag == "li":
            self.flush("li")
        elif tag in ("ul", "ol"):
            self.flush()
            self.lists.append([_start(node) if tag == "ol" else 0])
        elif tag == "blockquote":
            self.flush()
            self.quote += 1
        elif tag == "tr":
            self.flush("row")
            self.row = []
        elif tag in ("td", "th"):
            if self.cells:  # a cell of a table inside a cell: part of its line
                if self.text:
                    self.add(" ")
            else:
                if self.row is None:  # a cell outside a row
                    self.flush("row")
                    self.row = []
                self.cell_at = (len(self.text), len(self.md))
            self.cells += 1
        elif tag in _BLOCK_TAGS:
            self.flush(self.kind if self.kind == "li" and not self.text else "p")
        elif self.markdown:
            self._open_inline(node, tag)
        return True

    def leave(self, node: LexborNode) -> None:
        """Close `node` (an element whose inside was read)."""
        tag = node.tag or ""
        if tag in ("td", "th"):
            self.cells = max(0, self.cells - 1)
            if not self.cells:
                self._close_cell()
            return
        if self.cells and tag in _IN_CELL:
            return
        if tag == "tr":
            self._close_row()
        elif tag in _HEADINGS or tag == "li":
            self.flush()
        elif tag in ("ul", "ol"):
            self.flush()
            if self.lists:
                self.lists.pop()
        elif tag == "blockquote":
            self.flush()
            self.quote = max(0, self.quote - 1)
        elif tag in _BLOCK_TAGS:
            self.flush()
        elif self.markdown:
            self._close_inline(node, tag)

    def _close_cell(self) -> None:
        """End the open cell: its text and markdown, whitespace collapsed, join the row."""
        text_at, md_at = self.cell_at
        text = _SPACES.sub(" ", "".join(self.text[text_at:])).strip()
        markdown = ""
        if self.markdown:
            while (start := _last_mark(self.md)) >= md_at:  # elements still open: closed here
                self._wrap_at(start, code=self.md[start] == "code")
            markdown = _SPACES.sub(" ", "".join(self.md[md_at:])).strip()
        del self.text[text_at:], self.md[md_at:]
        if self.row is None:
            self.row = []
        self.row.append((text, markdown))

    def _close_row(self) -> None:
        """End the open row: a block of its cells (none when they are all empty)."""
        row, self.row = self.row or [], None
        self.text.clear()  # the whitespace between the cells
        self.md.clear()
        self.open = [0, 0]
        self.kind = "p"
        if any(text for text, _ in row):
            self._append(
                Block(
                    "row",
                    "\t".join(text for text, _ in row),
                    " | ".join(md for _, md in row) if self.markdown else "",
                    cells=len(row),
                )
            )

    def _open_inline(self, node: LexborNode, tag: str) -> None:
        if self.code and tag != "code":
            return  # a code span holds no markup
        if tag == "a" or tag in _EMPHASIS:
            self.md.append(_Mark(tag))  # marks where the element's text starts
        elif tag == "code":
            self.md.append(_Mark("code"))
            self.code += 1

    def _close_inline(self, node: LexborNode, tag: str) -> None:
        if self.code and tag != "code":
            return
        if tag == "a":
            url = link_target(self.base, node.attributes.get("href") or "")
            self._wrap(tag, lambda inner: f"[{inner}]({url})" if url else inner)
        elif tag in _EMPHASIS:
            mark = _EMPHASIS[tag]
            self._wrap(tag, lambda inner: f"{mark}{inner}{mark}")
        elif tag == "code":
            self.code = max(0, self.code - 1)
            start = _last_mark(self.md, tag)
            if start >= 0:
                self._wrap_at(start, code=True)

    def _wrap(self, tag: str, build: Callable[[str], str]) -> None:
        """Replace the markdown since `tag`'s mark with `build` of it."""
        start = _last_mark(self.md, tag)
        if start >= 0:
            self._wrap_at(start, build)

    def _wrap_at(
        self, start: int, build: Callable[[str], str] = str, *, code: bool = False
    ) -> None:
        """Replace the markdown since the mark at `start` with `build` of it (`code`: a code
        span of it), its whitespace moved outside (CommonMark reads "*x *" as text, not
        emphasis)."""
        raw = "".join(self.md[start + 1 :])
        del self.md[start:]
        inner = raw.strip()
        if not inner:  # nothing inside: no markers
            self.md.append(raw)
            return
        lead, trail = raw[: len(raw) - len(raw.lstrip())], raw[len(raw.rstrip()) :]
        if code:
            before = _last_piece(self.md)
            if not lead and before >= 0 and type(self.md[before]) is _Code:
                previous = self.md[before]
                inner = previous.inner + inner  # type: ignore[attr-defined]
                self.open[1] -= len(previous)
                del self.md[before:]
            span = _Code(code_span(inner, in_cell=self.cells > 0))
            span.inner = inner
            built: str = span
        else:
            built = build(inner)
        self.open[1] += len(built) - len(inner)
        self.md += (lead, built, trail)


def read_blocks(
    roots: list[LexborNode], base: str, markdown: bool, limit: int
) -> tuple[list[Block], bool]:
    """The blocks of `roots`' subtrees, in document order, and whether they were cut to keep
    their text and markdown (as `crawler.parse.extract.markdown.as_markdown` writes it) within
    `limit` characters each."""
    reader = _Reader(base, markdown, limit)
    for root in roots:
        if reader.done():
            reader.stop()
            break
        if root.tag == "pre":
            reader.pre(root)
            continue
        # a chosen table cell is a layout table's (a data table's cell is read with its
        # table): a container of blocks, not a cell of a row that is not read
        cell = root.tag in ("td", "th")
        if cell:
            reader.flush()
        else:
            reader.enter(root)
        node = root.child
        parents: list[LexborNode] = []
        while True:
            if reader.done():
                reader.stop()
                return reader.blocks, True
            if node is None:
                if not parents:
                    break
                node = parents.pop()
                reader.leave(node)
                node = node.next
                continue
            if reader.enter(node):
                if node.child is not None:
                    parents.append(node)
                    node = node.child
                    continue
                reader.leave(node)
            node = node.next
        if cell:
            reader.flush()
        else:
            reader.leave(root)
    reader.flush()
    return reader.blocks, reader.cut


def _is_permalink(link: LexborNode) -> bool:
    """A link to a place in its own page marked by a symbol (a heading's "¶" or "#")."""
    href = link.attrs.get("href") or ""
    return href.startswith("#") and not any(char.isalnum() for char in link.text(deep=True))


def _start(node: LexborNode) -> int:
    try:
        # at most nine digits, as markdown reads them (a longer number is a long marker an item)
        return min(max(1, int(node.attributes.get("start") or 1)), 999_999_999)
    except ValueError:
        return 1


def _last_mark(items: list[str], tag: str | None = None) -> int:
    """The index of the last mark (of `tag`) in `items`, -1 if none."""
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if type(item) is _Mark and (tag is None or item == tag):
            return index
    return -1


def _last_piece(items: list[str]) -> int:
    """The index of the last piece in `items` that is not empty, -1 if none."""
    for index in range(len(items) - 1, -1, -1):
        if items[index]:
            return index
    return -1
