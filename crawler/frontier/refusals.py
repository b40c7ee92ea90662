"""Refusing a host's pages: which queued pages a host's state refuses, and why.

A page is refused when its host is down (``max_host_failures``), when its robots.txt disallows
it, or when robots.txt is unreachable (RFC 9309: then nothing may be fetched); when the host
refused the connection to its robots.txt, the refusal is that connection failure
(``connect: ...``). The in-memory
:class:`crawler.frontier.memory.Frontier` moves such pages to its refusals (``sweep``), hands
them out at once as REFUSED entries and names the reason in the result's error (``refusal``).
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import replace
from typing import Final

from crawler.frontier.entries import Entry, EntryKind, Packer
from crawler.frontier.hosts import Host
from crawler.frontier.robots import RobotsPolicy

__all__ = ["UNREACHABLE", "announce", "refusal", "sweep"]

logger = logging.getLogger("crawler.frontier.memory")  # where these lines were always logged

UNREACHABLE: Final = RobotsPolicy(status=None, temporary=True, reason="its fetch did not finish")
"""The policy of a host whose robots.txt fetch ended without ``set_robots()``."""


def refusal(host: Host | None) -> str:
    """Why a REFUSED entry of ``host`` was refused, as a result's error (`kind: message`): its
    host is down, or its robots.txt rules, or robots.txt being unreachable."""
    if host is not None and host.down is not None:
        return f"host_down: {host.down}"
    policy = host.policy if host is not None else None
    if policy is not None and policy.refused and policy.reason:  # its pages would be refused too
        tries = host.robots_failures if host is not None else 0
        return f"{policy.reason} (fetching its host's robots.txt, {tries} tries; not requested)"
    if policy is None or policy.temporary:
        why = f"{policy.reason}; " if policy is not None and policy.reason else ""
        return f"robots: robots.txt unreachable ({why}RFC 9309: complete disallow)"
    return "robots: disallowed by robots.txt"


def announce(host: Host, policy: RobotsPolicy) -> None:
    """Log a host's pages being refused from now on (a policy that came into force, or the host
    going down): a warning, but for a refused connection, which each page's result says."""
    if host.down is not None:
        logger.warning("%s is down (%s); refusing its %d queued pages", host.key, host.down,
                       host.queue.size)  # fmt: skip
    elif policy.refused:  # each page's result says it ("connect", "dns"): no warning
        logger.info("%s: %s (%d tries of its robots.txt): its %d queued pages fail so", host.key,
                    policy.reason, host.robots_failures, host.queue.size)  # fmt: skip
    elif policy.temporary:
        logger.warning("robots.txt of %s unreachable %d times: refusing its pages", host.key,
                       host.robots_failures)  # fmt: skip


def sweep(host: Host, refusals: deque[Entry]) -> list[Entry]:
    """Move the queued pages of ``host`` its new policy disallows (all of them, once the host is
    down) to ``refusals`` (handed out at once). Returns, in queue order, those taken out that may
    be fetched without their session or tracking parameters (``RobotsPolicy.fetchable``), with
    that URL: the caller queues them again."""
    policy = host.policy
    if (policy is None and host.down is None) or not host.queue.size:
        return []
    if host.down is not None:
        policy = None
    allowed = _nothing if policy is None else policy.allowed
    prefix = host.prefix
    again: list[Entry] = []
    for head, context, priority in host.queue.remove_disallowed(allowed, prefix):
        entry = Packer.unpack(head, context, prefix, EntryKind.PAGE, priority)
        fetch = None if policy is None else policy.fetchable(entry.url, entry.key)
        if fetch is None:
            refusals.append(entry)
        else:
            again.append(replace(entry, url=fetch))
    return again


def _nothing(url: str) -> bool:
    return False
