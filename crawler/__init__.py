"""A single-process asyncio web crawler for focused crawls, with a scalable Bloom URL-seen Sieve."""

from __future__ import annotations

__all__: list[str] = []
