"""Lexbor's tag ids, by element name: what the tree readers sort nodes by.

Comparing a node's ``tag_id`` with a set of ids is cheaper than matching CSS selectors per node.
"""

from __future__ import annotations

from selectolax.lexbor import LexborHTMLParser

__all__ = ["tag_ids"]


def tag_ids(*names: str) -> tuple[int, ...]:
    """Lexbor's tag id of each element name (each parsed on its own: <script> or <style> would
    swallow the names after it; table cells need their table, a frame its frameset)."""
    table = LexborHTMLParser("<table><caption></caption><tr><th></th><td></td></tr></table>")
    frameset = LexborHTMLParser("<frameset><frame></frameset>")  # <frame> lives only there
    ids = []
    for name in names:
        node = (
            LexborHTMLParser(f"<{name}></{name}>").css_first(name)
            or table.css_first(name)
            or frameset.css_first(name)
        )
        if node is None:
            raise ImportError(f"crawler.parse.tags: no lexbor tag id for <{name}>")
        ids.append(node.tag_id)
    return tuple(ids)
