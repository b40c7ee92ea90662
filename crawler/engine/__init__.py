"""The crawl: `Crawler`, its workers, what a worker does with a URL, the crawl's figures.

| module | holds |
| --- | --- |
| `assemble` | Assembling a crawl: the parts `Crawler.crawl()` builds once, before its first ... |
| `components` | Build the crawl's components from the typed config (config flows one way: ... |
| `crawler` | The crawl engine: workers that take URLs from the frontier and turn them ... |
| `focus` | A focused crawl's work on each fetched page: its relevance, and its new ... |
| `gctune` | The garbage collector while a crawl runs: fewer, larger collections of young ... |
| `pages` | What a crawl worker does with one URL the frontier hands out: `PageHandler` |
| `rendering` | A crawl's rendering of its pages (``[render]``, ``--render``): `Rendering` |
| `recrawl` | What a recrawl keeps of each response and sends back: ETag and Last-Modified |
| `run` | `CrawlRun`: `Crawler.crawl()`'s generator, watched so that ``async with ... |
| `stats` | A crawl's figures in one JSON-ready dict (``Crawler.stats_dict()``, ... |
| `worker` | A crawl worker's loop: entries taken from the frontier, each turned into its ... |

What other folders use is exported here, imported when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler._exports import lazy

if TYPE_CHECKING:
    from crawler.engine.components import settings
    from crawler.engine.crawler import Crawler

__all__ = [
    "Crawler",
    "settings",
]

__getattr__ = lazy(
    __name__,
    {
        "Crawler": "crawler",
        "settings": "components",
    },
)
