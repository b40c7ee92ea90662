"""One block of a page's main content: what the walk (`blocks`) reads and the writers
(`page` for text, `markdown`) write out."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Block"]


@dataclass(slots=True)
class Block:
    """One block of the main content: `kind` is "p", "h1".."h6", "li", "pre", "quote" or
    "row"; `depth` a list item's nesting; `marker` its "-" or "1."; `text` plain, `markdown`
    inline markdown (empty unless asked); `cells` a row's cells (its text's cells a tab apart,
    its markdown's " | " apart)."""

    kind: str
    text: str
    markdown: str = ""
    depth: int = 0
    marker: str = "-"
    cells: int = 0
