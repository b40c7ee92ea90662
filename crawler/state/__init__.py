"""The crawl state on disk (`--state`): the journal, the seen fingerprints, limits on resume.

| module | holds |
| --- | --- |
| `crawlstate` | Crash-safe crawl state in one directory: ``DIR/state.sqlite`` (stdlib ... |
| `db` | The crawl state's database file, ``DIR/state.sqlite`` (stdlib sqlite3, WAL mode) |
| `forgetting` | `Crawler.forget` in the crawl state: a forgotten URL stays admissible across... |
| `limits` | A crawl's limits across a resume: `max_pages` and `max_depth` may change, ... |

What other folders use is exported here, imported when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler._exports import lazy

if TYPE_CHECKING:
    from crawler.state.crawlstate import CrawlState, Validators
    from crawler.state.db import FILENAME, StateError

__all__ = [
    "FILENAME",
    "CrawlState",
    "StateError",
    "Validators",
]

__getattr__ = lazy(
    __name__,
    {
        "CrawlState": "crawlstate",
        "FILENAME": "db",
        "StateError": "db",
        "Validators": "crawlstate",
    },
)
