"""The `crawl` console script: `entry` imports the command (`crawler.cli`) and runs it.

A Ctrl-C while the command's modules load (~0.2 s: aiohttp, asyncio), or outside the crawl's own
handler (reading the config and seeds, opening the state, printing the summary), ends the
command with a line on stderr and exit status 130, not a KeyboardInterrupt traceback. With
``--state`` the state is untouched or consistent (each of its writes is a transaction).
"""

from __future__ import annotations

import signal
import sys
from typing import NoReturn

__all__ = ["entry"]


def interrupted(when: str = "before the crawl started; nothing was fetched") -> NoReturn:
    """Exit 130 with a line on stderr: a SIGINT outside the crawl's own handler."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C changes nothing now
    print(f"\ncrawl: interrupted {when}".rstrip(), file=sys.stderr)
    sys.exit(128 + signal.SIGINT)


def entry() -> NoReturn:
    try:
        from crawler.cli import entry as command
    except KeyboardInterrupt:
        interrupted()
    command()
