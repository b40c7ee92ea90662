"""`crawl report OUT.jsonl [--stats FILE] -o FILE`: the HTML report of an existing output.

The same report as ``crawl --report FILE`` writes at the end of a crawl (`crawler.observe`),
made from the crawl's JSON Lines, streamed (its size does not matter); the Sieve's figures and
the crawl's time come from its ``--stats`` JSON, when given. Exit status 0, or 2 with one line
on stderr when an input cannot be read or the report cannot be written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="crawl report",
        description="Make the HTML report of a crawl from its JSON Lines output.",
    )
    parser.add_argument("results", metavar="OUT.jsonl", help="the crawl's JSON Lines output")
    parser.add_argument("--stats", metavar="FILE", help="the crawl's --stats JSON (the Sieve, "
                        "its time)")  # fmt: skip
    parser.add_argument("-o", "--output", metavar="FILE", required=True,
                        help="the HTML report to write")  # fmt: skip
    parser.add_argument("-q", "--quiet", action="store_true", help="only errors on stderr")
    return parser


def main(argv: list[str]) -> int:
    """`crawl report` on `argv` (the arguments after ``report``)."""
    args = build_parser().parse_args(argv)
    from crawler.errors import ConfigError, OutputError
    from crawler.observe import read_stats, report_from_jsonl

    try:
        if Path(args.output).resolve() in {Path(p).resolve() for p in (args.results, args.stats)
                                           if p}:  # fmt: skip
            raise ConfigError(f"-o {args.output}: that is an input; give another file")
        stats = read_stats(args.stats) if args.stats else None
        digest, skipped, size = report_from_jsonl(args.results, args.output, stats)
    except (ConfigError, OutputError) as exc:
        print(f"crawl report: error: {exc}", file=sys.stderr)
        return 2
    if not args.quiet:
        note = f"; {skipped:,} lines that were not results skipped" if skipped else ""
        print(f"crawl report: {digest.pages:,} results, report written to {args.output} "
              f"({size:,} bytes){note}", file=sys.stderr)  # fmt: skip
    return 0
