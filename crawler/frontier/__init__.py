"""The frontier: which URL is fetched next, and when its host may be hit.

- :mod:`crawler.frontier.memory`: the in-memory ``Frontier``.

Everything importable from ``crawler.frontier`` before it became a package still is.
"""

from __future__ import annotations

from crawler.entries import Entry, EntryKind, Outcome
from crawler.frontier.memory import Frontier, FrontierStats
from crawler.hosts import HostRule, host_key, parse_retry_after
from crawler.simtime import SimulatedLoop

__all__ = [
    "Entry",
    "EntryKind",
    "Frontier",
    "FrontierStats",
    "HostRule",
    "Outcome",
    "SimulatedLoop",
    "host_key",
    "parse_retry_after",
]
