"""Focused crawling: the score hook, the built-in topic scorer and the fetch budget.

| module | holds |
| --- | --- |
| `budget` | The fetch budget of a focused crawl: at most `limit` page results, whatever ... |
| `scoring` | What a focused crawl scores: a `Link` found on a page, and the `PageText` of ... |
| `shared_budget` | The fetch budget of a focused crawl shared through Redis: `SharedBudget` |
| `relevance/` | The built-in topic scorer of focused crawls (``crawl --focus "words"``) |

What other folders use is exported here, imported when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler._exports import lazy

if TYPE_CHECKING:
    from crawler.focus.budget import FetchBudget
    from crawler.focus.scoring import (
        FollowsRedirects,
        Link,
        PageText,
        Rescorer,
        ScoreFn,
        Scorer,
        score_links,
    )
    from crawler.focus.shared_budget import SharedBudget

__all__ = [
    "FetchBudget",
    "FollowsRedirects",
    "Link",
    "PageText",
    "Rescorer",
    "ScoreFn",
    "Scorer",
    "SharedBudget",
    "score_links",
]

__getattr__ = lazy(
    __name__,
    {
        "FetchBudget": "budget",
        "FollowsRedirects": "scoring",
        "Link": "scoring",
        "PageText": "scoring",
        "Rescorer": "scoring",
        "ScoreFn": "scoring",
        "Scorer": "scoring",
        "SharedBudget": "shared_budget",
        "score_links": "scoring",
    },
)
