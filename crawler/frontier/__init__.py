"""The frontier: which URL is fetched next, and when its host may be hit.

- :mod:`crawler.frontier.base`: the contract every frontier keeps (``FrontierBackend``, its rules
  in the module docstring) and ``FrontierStats``;
- :mod:`crawler.frontier.memory`: the in-memory ``Frontier``;
- :mod:`crawler.frontier.handout`: its base, handing entries out (``get()``, waiting getters, the
  timer);
- :mod:`crawler.frontier.refusals`: which queued pages a host's state refuses, and why;
- :mod:`crawler.frontier.queues`: one host's queue (priority order, first in first out on ties);
- :mod:`crawler.frontier.schedule`: which host goes next (ready time, then best priority).

Everything importable from ``crawler.frontier`` before it became a package still is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler.entries import Entry, EntryKind, Outcome
from crawler.frontier.base import FrontierBackend, FrontierStats
from crawler.frontier.handout import FrontierFailure
from crawler.frontier.memory import Frontier
from crawler.hosts import HostRule, host_key, parse_retry_after
from crawler.simtime import SimulatedLoop

__all__ = [
    "Entry",
    "EntryKind",
    "Frontier",
    "FrontierBackend",
    "FrontierFailure",
    "FrontierStats",
    "HostRule",
    "Outcome",
    "SimulatedLoop",
    "host_key",
    "parse_retry_after",
]

if TYPE_CHECKING:  # mypy checks that the in-memory frontier keeps the contract
    _frontier: FrontierBackend = Frontier()
