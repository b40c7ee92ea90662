"""How deep each element of a page lands: a model of the HTML tree builder's stack of open
elements, to turn into text the elements nested deeper than a limit (`crawler.parse.defuse` runs it
on the pages its cheap estimate flags).

It follows the rules of WHATWG's "in body" insertion mode that set the depth of real pages,
where a count of tags is far off:
- void elements (`<br>`, `<img>`...) open nothing;
- the end tags a page may leave out: a `<li>` closes the `<li>` before it, the next block
  closes a `<p>`, likewise `<dd>`/`<dt>`, `<option>`, headings, table rows and cells, `<a>`;
- an end tag closes every element opened after the one it names, and is ignored when no open
  element in scope has its name (so `<div></b>` repeated nests, as lexbor does);
- foreign content (`<svg>`, `<math>`): there `<path/>` closes itself, and an HTML tag such as
  `<div>` (a "breakout" tag) ends it; `<foreignObject>` & co. hold HTML again;
- comments, and the text of `<script>`, `<style>`, `<textarea>`, `<title>`, `<xmp>`,
  `<iframe>`, `<noembed>`, `<noframes>`, `<plaintext>`, hold no tags.
Left out (a page built to exploit them nests deeper than the model says; `crawler.parse.defuse` says
what bounds that): the adoption agency's reparenting (its depth is kept unchanged), the
reconstruction of formatting elements, select/template/frameset modes, quirks, script data's
escape states. On both documentation sites of the benchmarks it escapes nothing.
"""

from __future__ import annotations

import re
from functools import cache

from crawler.parse.defuse.names import (
    BREAKOUT,
    BUTTON_SCOPE,
    CLOSES_P,
    FORMATTING,
    HEADINGS,
    INTEGRATION_POINTS,
    KEEP,
    LIST_SCOPE,
    RAW_TEXT,
    SCOPE,
    SCOPED_END,
    SPECIAL,
    TABLE_PARTS,
    TABLE_SCOPE,
    VOID,
)  # fmt: skip

__all__ = ["escape_deep_nesting"]

_HTML, _FOREIGN, _INTEGRATION = 0, 1, 2  # the kind of an open element

# a comment's start, or a tag up to its ">" (a value is quoted only after "=", a stray quote is a
# plain byte); linear (possessive)
_TOKEN_RE = re.compile(
    rb"<(?:!--|(/?)([A-Za-z][^\t\n\f\r />]*+)"
    rb"(?:[^>\"'=]++|=[\t\n\f\r ]*+(?:\"[^\"]*+\"?|'[^']*+'?)|[=\"'])*+)"
)
_FONT_BREAKOUT_RE = re.compile(rb"[\t\n\f\r /](?:color|face|size)[\t\n\f\r /=>]", re.I)


@cache
def _raw_text_end(name: bytes) -> re.Pattern[bytes]:
    return re.compile(rb"</" + name + rb"[\t\n\f\r />]", re.I)


def escape_deep_nesting(data: bytes, limit: int) -> tuple[bytes, int]:
    """(`data` with the start tags of elements that would nest deeper than `limit`, and their end
    tags, escaped as "&lt;"; the number of tags escaped). Elements in `KEEP` are never escaped."""
    stack = _Stack()
    names, kinds = stack.names, stack.kinds
    pieces: list[bytes] = []
    last = 0
    hidden: dict[bytes, int] = {}
    size = len(data)
    pos = 0
    while pos < size:
        # tags one after another; a comment or raw text ends the run, which goes on after it
        for match in _TOKEN_RE.finditer(data, pos):
            start, end = match.span()  # end: at the tag's ">"
            slash, name = match.group(1, 2)
            if name is None:  # a comment: up to the first "-->" or "--!>"
                pos = _comment_end(data, start + 4)
                break
            if end >= size:  # the data ends inside the tag: the tokenizer drops it
                pos = size
                break
            name = name.lower()
            if slash:  # an end tag
                if not hidden.get(name):
                    stack.end(name)
                    continue
                hidden[name] -= 1
            else:
                foreign = bool(kinds) and kinds[-1] == _FOREIGN
                closed = data[end - 1] == 0x2F and _self_closing(data, start, end)
                if foreign and name == b"font":  # a breakout only with these attributes
                    breakout: object = _FONT_BREAKOUT_RE.search(data, start, end + 1)
                else:
                    breakout = name in BREAKOUT
                if (
                    len(names) < limit
                    or name in KEEP
                    or (closed if foreign and not breakout else name in VOID)
                ):  # not too deep, or opens nothing
                    if not stack.start(name, closed, breakout) or kinds[-1] != _HTML:
                        continue
                    if name in RAW_TEXT:
                        found = _raw_text_end(name).search(data, end + 1)
                        pos = found.start() if found else size
                        break
                    if name == b"plaintext":
                        pos = size  # the rest is text
                        break
                    continue
                # too deep: escaped, so that lexbor sees no tag (nor what it would have closed)
                hidden[name] = hidden.get(name, 0) + 1
            pieces += (data[last:start], b"&lt;")
            last = start + 1
        else:
            break
    if not pieces:
        return data, 0
    pieces.append(data[last:])
    return b"".join(pieces), len(pieces) // 2


def _self_closing(data: bytes, start: int, end: int) -> bool:
    """Whether the tag from `start` to the "/>" at `end` is self-closing: its "/" does not end
    an unquoted value ("<g x=y/>" is a <g> with x="y/"), nor is one ("<g x= />": x="/")."""
    if data[end - 2] in b"\"'":
        return True
    if data[end - 2] in b" \n\t\r\f" and data[start : end - 1].rstrip(b" \n\t\r\f").endswith(b"="):
        return False
    run = max(data.rfind(space, start, end - 1) for space in (b" ", b"\n", b"\t", b"\r", b"\f"))
    return data.find(b"=", max(run, start), end - 1) < 0


def _comment_end(data: bytes, pos: int) -> int:
    """Where a comment whose "<!--" ends at `pos` ends (after its "-->", or the data's end)."""
    if data.startswith(b">", pos) or data.startswith(b"->", pos):  # <!--> and <!--->
        return data.index(b">", pos) + 1
    ends = [i for i in (data.find(b"-->", pos), data.find(b"--!>", pos)) if i >= 0]
    if not ends:
        return len(data)
    end = min(ends)
    return end + (3 if data.startswith(b"-->", end) else 4)


class _Stack:
    """The stack of open elements: names (lowercase) and kinds, without html and body."""

    __slots__ = ("kinds", "names")

    def __init__(self) -> None:
        self.names: list[bytes] = []
        self.kinds: list[int] = []

    def start(self, name: bytes, closed: bool, breakout: object) -> bool:
        """A start tag (`closed`: written "<x/>"); whether it opened an element (pushed)."""
        if self.kinds and self.kinds[-1] == _FOREIGN:
            if not breakout:
                if closed:
                    return False
                self._push(name, _INTEGRATION if name in INTEGRATION_POINTS else _FOREIGN)
                return True
            while self.kinds and self.kinds[-1] == _FOREIGN:  # back to HTML content
                self.pop_to(len(self.kinds) - 1)
        return self._start_html(name, closed)

    def _start_html(self, name: bytes, closed: bool) -> bool:
        if name in VOID or name in (b"html", b"body", b"head"):
            return False
        if name in (b"svg", b"math"):
            if closed:
                return False
            self._push(name, _FOREIGN)
            return True
        if name in CLOSES_P:
            self._close(b"p", BUTTON_SCOPE)
        if name == b"li":
            self._close_item((b"li",))
        elif name in (b"dd", b"dt"):
            self._close_item((b"dd", b"dt"))
        elif name in HEADINGS:
            if self.names and self.names[-1] in HEADINGS and self.kinds[-1] == _HTML:
                self.pop_to(len(self.names) - 1)
        elif name in (b"option", b"optgroup"):
            if self.names and self.names[-1] == b"option":
                self.pop_to(len(self.names) - 1)
        elif name in (b"a", b"button", b"nobr"):
            self._close(name, SCOPE, keep_depth=name != b"button")
        elif name == b"form":
            if self._find(b"form", TABLE_SCOPE) >= 0:
                return False  # a form inside a form is ignored
        elif name in TABLE_PARTS:
            self._start_table_part(name)
        self._push(name, _HTML)
        return True

    def _start_table_part(self, name: bytes) -> None:
        """A table part closes the open one of its kind and opens what it implies (a <tr> in a
        <table> opens a <tbody>, a cell a <tr>)."""
        if name in (b"td", b"th"):
            i = max(self._find(b"td", TABLE_SCOPE), self._find(b"th", TABLE_SCOPE))
            if i >= 0:
                self.pop_to(i)
        elif name == b"tr":
            self._close(b"tr", TABLE_SCOPE)
        elif name in (b"tbody", b"thead", b"tfoot"):
            i = max(self._find(n, TABLE_SCOPE) for n in (b"tbody", b"thead", b"tfoot"))
            if i >= 0:
                self.pop_to(i)
        top = self.names[-1] if self.names else b""
        if name in (b"td", b"th") and top != b"tr":
            if top == b"table":
                self._push(b"tbody", _HTML)
            self._push(b"tr", _HTML)
        elif name == b"tr" and top == b"table":
            self._push(b"tbody", _HTML)

    def end(self, name: bytes) -> None:
        """An end tag: closes what it names (and everything opened after it), or nothing."""
        names, kinds = self.names, self.kinds
        i = len(names) - 1
        while i >= 0 and kinds[i] != _HTML:  # foreign content: the nearest of its name
            if names[i] == name:
                self.pop_to(i)
                return
            i -= 1
        if name in (b"br", b"html", b"body", b"head"):
            return
        if name == b"p":
            self._close(b"p", BUTTON_SCOPE)
        elif name == b"li":
            self._close(name, LIST_SCOPE)
        elif name in HEADINGS:
            if (i := max(self._find(h, SCOPE) for h in HEADINGS)) >= 0:
                self.pop_to(i)
        elif name in SCOPED_END:
            self._close(name, SCOPE)
        elif name == b"form":  # only the form leaves the stack
            i = self._find(b"form", SCOPE)
            if i >= 0:
                del names[i], kinds[i]
        elif name in TABLE_PARTS:
            self._close(name, TABLE_SCOPE)
        elif name in FORMATTING:
            self._close(name, SCOPE, keep_depth=True)
        else:  # any other end tag: up to the first special element
            for i in range(len(names) - 1, -1, -1):
                if names[i] == name:
                    self.pop_to(i)
                    return
                if names[i] in SPECIAL:
                    return

    def _find(self, name: bytes, scope: frozenset[bytes]) -> int:
        """The index of the nearest open `name` (HTML) in `scope`, or -1."""
        names, kinds = self.names, self.kinds
        for i in range(len(names) - 1, -1, -1):
            if names[i] == name and kinds[i] == _HTML:
                return i
            if names[i] in scope:
                return -1
        return -1

    def _close(self, name: bytes, scope: frozenset[bytes], *, keep_depth: bool = False) -> None:
        """Close the nearest open `name` in `scope`. `keep_depth` (a formatting element, the
        adoption agency): left open if a special element was opened after it."""
        i = self._find(name, scope)
        if i >= 0 and not (keep_depth and any(n in SPECIAL for n in self.names[i + 1 :])):
            self.pop_to(i)

    def _close_item(self, item: tuple[bytes, ...]) -> None:
        """A <li> (or <dd>, <dt>) closes the open one, unless a special element other than
        address, div and p was opened after it."""
        names = self.names
        for i in range(len(names) - 1, -1, -1):
            if names[i] in item:
                self.pop_to(i)
                return
            if names[i] in SPECIAL and names[i] not in (b"address", b"div", b"p"):
                return

    def pop_to(self, i: int) -> None:
        """Close the element at `i` and every one opened after it."""
        del self.names[i:], self.kinds[i:]

    def _push(self, name: bytes, kind: int) -> None:
        self.names.append(name)
        self.kinds.append(kind)

    def __repr__(self) -> str:
        return f"<_Stack depth={len(self.names)} top={self.names[-3:]!r}>"
