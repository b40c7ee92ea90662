"""The frontier: which URL is fetched next, and when its host may be hit.

- :mod:`crawler.frontier.base`: the contract every frontier keeps (``FrontierBackend``, its rules
  in the module docstring) and ``FrontierStats``;
- :mod:`crawler.frontier.memory`: the in-memory ``Frontier``;
- :mod:`crawler.frontier.handout`: its base, handing entries out (``get()``, waiting getters, the
  timer);
- :mod:`crawler.frontier.refusals`: which queued pages a host's state refuses, and why;
- :mod:`crawler.frontier.queues`: one host's queue (priority order, first in first out on ties);
- :mod:`crawler.frontier.schedule`: which host goes next (ready time, then best priority).

- :mod:`crawler.frontier.settings`: what a frontier is told, the same for both frontiers:
  ``Politeness`` and ``QueueLimits`` (frozen; built by ``[politeness]`` and ``[crawl]``);
- :mod:`crawler.frontier.hosts`: per-host state and the politeness rules (delay, backoff,
  robots.txt lifetime, the circuit breaker);
- :mod:`crawler.frontier.robots`: robots.txt policy (RFC 9309) on top of protego;
- :mod:`crawler.frontier.entries`: the records that flow through it, packed to save memory;
- :mod:`crawler.frontier.redis`: its twin shared through Redis (several processes, one crawl).

The simulated clock its tests and benchmarks run on is `crawler.testing.simtime.SimulatedLoop`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler.fetch.steering import HostRule
from crawler.frontier.base import FrontierBackend, FrontierStats
from crawler.frontier.entries import Entry, EntryKind, Outcome
from crawler.frontier.handout import FrontierFailure
from crawler.frontier.hosts import host_key, parse_retry_after
from crawler.frontier.memory import Frontier

__all__ = [
    "Entry",
    "EntryKind",
    "Frontier",
    "FrontierBackend",
    "FrontierFailure",
    "FrontierStats",
    "HostRule",
    "Outcome",
    "host_key",
    "parse_retry_after",
]

if TYPE_CHECKING:  # mypy checks that the in-memory frontier keeps the contract
    _frontier: FrontierBackend = Frontier()
