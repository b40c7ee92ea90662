"""The `crawl` console script: `entry` parses the arguments (`crawler.cli.args`, which loads
nothing of the crawl: `--help` and `--version` answer at once), imports the command
(`crawler.cli.main`) and runs it.

A Ctrl-C while the command's modules load (~0.2 s: aiohttp, asyncio), or outside the crawl's own
handler (reading the config and seeds, opening the state, printing the summary), ends the
command with a line on stderr and exit status 130, not a KeyboardInterrupt traceback. With
``--state`` the state is untouched or consistent (each of its writes is a transaction).

While the modules load, a SIGINT handler installed by this module's first statements exits at
once (the import is abandoned wherever it is: a KeyboardInterrupt raised there would print a
traceback before `entry` could catch it). What comes before this module runs is the
interpreter's own start-up (~15 ms: `site`, then `crawler/__init__`, which imports nothing); a
Ctrl-C inside that window is the interpreter's and prints its traceback, as for any Python
command.
"""

from __future__ import annotations

import os
import signal
import sys

TYPE_CHECKING = False  # not typing's: importing it would widen the window (see above)
if TYPE_CHECKING:
    from types import FrameType
    from typing import NoReturn

__all__ = ["entry"]


def interrupted(when: str = "before the crawl started; nothing was fetched") -> NoReturn:
    """Exit 130 with a line on stderr: a SIGINT outside the crawl's own handler."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C changes nothing now
    print(f"\ncrawl: interrupted {when}".rstrip(), file=sys.stderr)
    sys.exit(128 + signal.SIGINT)


def _while_loading(signum: int, frame: FrameType | None) -> None:
    interrupted()


# A SIGINT ignored by whoever started us (a background job of a shell script) stays ignored.
_LOADING = signal.getsignal(signal.SIGINT) is signal.default_int_handler
if _LOADING:
    signal.signal(signal.SIGINT, _while_loading)


def entry() -> NoReturn:
    # numpy (the Sieve's batches, the nesting estimate) starts OpenBLAS's thread pool when it is
    # imported, and those threads spin a while for work that never comes: the command does no
    # linear algebra (~25 ms of CPU a run on 2 cores). A value set by the user is kept.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if sys.argv[1:2] == ["report"]:  # `crawl report OUT.jsonl -o FILE` (crawler.cli.report)
        from crawler.cli.report import main as report

        sys.exit(report(sys.argv[2:]))
    try:
        # the arguments first: --help, --version and a usage error end here, before the
        # crawl's modules (the engine, aiohttp, the config's checks) are imported
        from crawler.cli.args import build_parser

        args = build_parser().parse_args()
        from crawler.cli.main import entry as command
    except KeyboardInterrupt:  # (not raised while our handler is in place)
        interrupted()
    try:
        if _LOADING:  # a KeyboardInterrupt from here on (its installing included), caught below
            signal.signal(signal.SIGINT, signal.default_int_handler)
        command(args)
    except KeyboardInterrupt:  # Ctrl-C outside the crawl's own handler (crawler.cli.run)
        interrupted("(SIGINT)")
