"""What a crawl writes: its results, JSON Lines, WARC.

| module | holds |
| --- | --- |
| `jsonl` | Where the `crawl` command's results go: output paths checked before the ... |
| `results` | What a crawl produces: one immutable `CrawlResult` per URL, and the running ... |
| `warc` | WARC 1.1 output (ISO 28500), written with warcio |

What other folders use is exported here, imported when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler._exports import lazy

if TYPE_CHECKING:
    from crawler.output.jsonl import (
        JsonlWriter,
        check_not_inputs,
        check_output_paths,
        earlier_results,
        open_output,
        repair_jsonl,
    )
    from crawler.output.results import CrawlResult, CrawlStats
    from crawler.output.warc import WarcOutput, check_series

__all__ = [
    "CrawlResult",
    "CrawlStats",
    "JsonlWriter",
    "WarcOutput",
    "check_not_inputs",
    "check_output_paths",
    "check_series",
    "earlier_results",
    "open_output",
    "repair_jsonl",
]

__getattr__ = lazy(
    __name__,
    {
        "CrawlResult": "results",
        "CrawlStats": "results",
        "JsonlWriter": "jsonl",
        "WarcOutput": "warc",
        "check_not_inputs": "jsonl",
        "check_output_paths": "jsonl",
        "check_series": "warc",
        "earlier_results": "jsonl",
        "open_output": "jsonl",
        "repair_jsonl": "jsonl",
    },
)
