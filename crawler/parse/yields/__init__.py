"""What a crawl yields of an HTML page beyond its links and text: metadata and fields.

| module | holds |
| --- | --- |
| `read` | `Yields` (what is asked), `read_yields`, the extract hook's `ExtractPage` |
| `meta` | The `meta` object: description, language, author, dates, OpenGraph, JSON-LD, microdata |
| `jsonld` | JSON-LD blocks, parsed and bounded |
| `microdata` | Microdata items, nested items included |
| `fields` | ``[[extract]]`` rules: lexbor's CSS selectors, values, bounds |

What other folders use is exported here, imported when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler._exports import lazy

if TYPE_CHECKING:
    from crawler.parse.yields.fields import selector_problem
    from crawler.parse.yields.read import ExtractFn, ExtractPage, Yielded, Yields, read_yields

__all__ = ["ExtractFn", "ExtractPage", "Yielded", "Yields", "read_yields", "selector_problem"]

__getattr__ = lazy(
    __name__,
    {
        "ExtractFn": "read",
        "ExtractPage": "read",
        "Yielded": "read",
        "Yields": "read",
        "read_yields": "read",
        "selector_problem": "fields",
    },
)
