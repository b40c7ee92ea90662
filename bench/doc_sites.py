"""The documentation sites the content-dedup and recrawl benchmarks run on, side by side.

Debian's python3.11-doc (530 pages, Sphinx: the text is in a `role="main"` element, so a
banner a mirror puts after `<body>` is outside it) and sqlite3-doc (766 smaller pages, hand
written: no main element, so the whole body is the page's text, its menu and such a banner
included). Both are installed when missing (bench.corpus). postgresql-doc-15 (1,169 pages,
DocBook: no main element either) is held out: the dedup benchmark runs it with --held-out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from bench.corpus import ensure_docs, ensure_postgres_docs, ensure_sqlite_docs

__all__ = ["HELD_OUT", "POSTGRES", "PYTHON", "SITES", "SQLITE", "DocSite"]


@dataclass(frozen=True, slots=True)
class DocSite:
    """A documentation site on disk: its name, where it is, and where a mirror's banner goes
    "inside the main content" (the first match of `inside`, else after `<body>`)."""

    name: str
    ensure: Callable[[], Path]
    inside: re.Pattern[bytes]
    inside_label: str

    def root(self) -> Path:
        return self.ensure()

    def pages(self) -> list[tuple[str, bytes]]:
        """Every HTML page as (path relative to the root, body), in a stable order."""
        return list(_pages(self.root()))


@cache
def _pages(root: Path) -> tuple[tuple[str, bytes], ...]:
    return tuple(
        (path.relative_to(root).as_posix(), path.read_bytes())
        for path in sorted(root.rglob("*.html"))
    )


PYTHON = DocSite(
    "python3.11-doc",
    ensure_docs,
    re.compile(rb"<[a-z]+ [^>]*role=\"main\"[^>]*>"),
    "first thing in the role=main element",
)
SQLITE = DocSite(
    "sqlite3-doc",
    ensure_sqlite_docs,
    re.compile(rb"</h[12]>"),
    "after the first h1/h2 heading",
)
SITES = (PYTHON, SQLITE)
# never looked at while the fingerprint was tuned: run only when asked (bench_dedup --held-out)
POSTGRES = DocSite(
    "postgresql-doc-15",
    ensure_postgres_docs,
    re.compile(rb"</h[12]>"),
    "after the first h1/h2 heading",
)
HELD_OUT = (POSTGRES,)
