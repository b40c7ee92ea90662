"""`python -m crawler.cli`: the `crawl` command."""

from __future__ import annotations

from crawler.cli.command import entry

entry()
