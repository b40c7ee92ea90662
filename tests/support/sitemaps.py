"""Helpers shared by several test modules (moved from test_sitemaps.py)."""

from __future__ import annotations

import tracemalloc

from crawler.parse.sitemaps import Sitemap, parse_sitemap


def parse_traced(body: bytes) -> tuple[Sitemap, int]:
    """`parse_sitemap(body)` and the peak of the memory it allocated (tracemalloc)."""
    tracemalloc.start()
    try:
        sitemap = parse_sitemap(body)
        return sitemap, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
