"""The crawl report (``--report FILE``, ``crawl report OUT.jsonl``): one HTML file, written whole.

`LiveReport` follows a running crawl (each result into a `Digest`, a `Crawler.watchers` hook)
and writes the report when the crawl ends, interrupted or not. `report_from_jsonl` makes the
same report from a JSON Lines output, streamed line by line (memory bounded by the digest, not
by the file), with the crawl's ``--stats`` JSON when it is given.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crawler.errors import ConfigError, OutputError
from crawler.observe.digest import Digest
from crawler.observe.page import render_page
from crawler.output.results import CrawlResult

if TYPE_CHECKING:
    from crawler.engine.crawler import Crawler

__all__ = ["LiveReport", "read_stats", "report_from_jsonl", "write_report"]


def write_report(path: str | Path, digest: Digest, stats: dict[str, Any] | None,
                 *, title: str) -> int:  # fmt: skip
    """Write the report to `path` whole (a temporary file renamed over it); its size in bytes.
    An `OutputError` names the file when it cannot be written."""
    page = render_page(digest, stats, title=title).encode("utf-8")
    target = Path(path)
    temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        # (created as any file is, 0666 less the umask: a report is for people to read)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(page)
            os.replace(temp, target)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise OutputError(f"report {path}: cannot write: {exc.strerror or exc}") from None
    return len(page)


class LiveReport:
    """The report of a running crawl: `attach` it, `write` it at the end."""

    def __init__(self, path: str, threshold: float = 0.5) -> None:
        self.path = path
        self.digest = Digest(threshold=threshold)

    def attach(self, crawler: Crawler) -> None:
        scorer = crawler.focus.scorer if crawler.focus is not None else None
        if scorer is not None:
            self.digest.threshold = scorer.threshold
        crawler.watchers.append(self.observe)

    def observe(self, result: CrawlResult) -> None:
        self.digest.add_result(result)

    def write(self, stats: dict[str, Any], *, interrupted: bool = False) -> int:
        title = "Crawl report" + (" (interrupted)" if interrupted else "")
        return write_report(self.path, self.digest, stats, title=title)


def read_stats(path: str) -> dict[str, Any]:
    """A ``--stats`` JSON file; a `ConfigError` naming it when it is not one."""
    try:
        stats = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"--stats {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ConfigError(f"--stats {path}: not JSON: {exc}") from None
    if not isinstance(stats, dict) or "pages" not in stats:
        raise ConfigError(f"--stats {path}: not a crawl's stats (crawl --stats FILE writes one)")
    return stats


def report_from_jsonl(
    source: str, output: str, stats: dict[str, Any] | None = None
) -> tuple[Digest, int, int]:
    """The report of the JSON Lines `source`, written to `output`: (its digest, the lines that
    were not results and were skipped, the report's size in bytes)."""
    threshold = (stats or {}).get("harvest_threshold")
    digest = Digest(threshold=float(threshold) if threshold is not None else 0.5)
    skipped = 0
    loads = json.JSONDecoder().decode
    try:
        with open(source, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                try:
                    record = loads(line)
                except ValueError:  # a torn last line, a blank one
                    skipped += bool(line.strip())
                    continue
                if isinstance(record, dict) and "url" in record:
                    digest.add(record)
                else:
                    skipped += 1
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read: {exc.strerror or exc}") from None
    size = write_report(output, digest, stats, title=f"Crawl report: {Path(source).name}")
    return digest, skipped, size
