"""A crawl's Prometheus metrics: `CrawlMetrics`, a collector in a registry of the crawl's own.

Most figures are read from the crawl's existing stats when Prometheus scrapes (the crawl pays
nothing for them between scrapes): pages' bytes, errors by kind, retries, the frontier, the hosts
by state, the Sieve, duplicates, renders, the harvest rate. What the stats do not keep, the pages
by exact HTTP status and the histogram of fetch times, `CrawlMetrics.observe` counts as each
result is produced (a `Crawler.watchers` hook: two dict updates and a bisect per result).

In a shared crawl (``--redis``) every sample carries the label ``crawl_id``: each process serves
its own figures (its own results; the Sieve's are the shared Sieve's), and Prometheus sums them.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from crawler.errors import FetchError
from crawler.output.results import CrawlResult

if TYPE_CHECKING:
    from crawler.engine.crawler import Crawler

__all__ = ["FETCH_BUCKETS", "CrawlMetrics", "error_kinds"]

# upper bounds (seconds) of the fetch-time histogram's buckets, +Inf last
FETCH_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


def error_kinds() -> list[str]:
    """Every `FetchError` kind (the error tree's), sorted: shown at 0 before the first one."""
    kinds, todo = set(), [FetchError]
    while todo:
        cls = todo.pop()
        kinds.add(cls.kind)
        todo.extend(cls.__subclasses__())
    return sorted(kinds)


class CrawlMetrics(Collector):
    """The metrics of one crawl, in `registry` (a `CollectorRegistry` of its own: a program
    may run two crawls). `attach` it to the crawler; `exposition()` is the text to serve."""

    def __init__(self, crawl_id: str | None = None) -> None:
        """`crawl_id`: the label every sample carries (a shared crawl's), or None."""
        self.crawler: Crawler | None = None
        self.labels = {"crawl_id": crawl_id} if crawl_id is not None else {}
        self.statuses: Counter[str] = Counter()  # "200", "404", ..., "error"
        self.buckets = [0] * (len(FETCH_BUCKETS) + 1)  # per bucket, not cumulative
        self.fetch_sum = 0.0
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)

    def attach(self, crawler: Crawler) -> None:
        """Read `crawler`'s figures, and count its results as they are produced."""
        self.crawler = crawler
        crawler.watchers.append(self.observe)

    def observe(self, result: CrawlResult) -> None:
        """Count one result: by status, and its fetch time."""
        self.statuses["error" if result.status is None else str(result.status)] += 1
        ms = result.elapsed_ms
        if ms is not None:
            seconds = ms / 1000.0
            self.buckets[bisect_left(FETCH_BUCKETS, seconds)] += 1
            self.fetch_sum += seconds

    def exposition(self) -> bytes:
        """The Prometheus text format of every metric, as of now."""
        return generate_latest(self.registry)

    # -- the collector -------------------------------------------------------------------------

    def _family(
        self, kind: Callable[..., Metric], name: str, doc: str, label: str | None = None
    ) -> Metric:
        labels = [*self.labels, *([label] if label else [])]
        family: Metric = kind(name, doc, labels=labels)
        return family

    def _add(self, family: Metric, value: float, label: str | None = None) -> Metric:
        values = [*self.labels.values(), *([label] if label is not None else [])]
        family.add_metric(values, value)  # type: ignore[attr-defined]
        return family

    def collect(self) -> Iterator[Metric]:
        crawler = self.crawler
        yield from self._results()
        if crawler is None:
            return
        yield from self._counts(crawler)
        yield from self._frontier(crawler)
        yield from self._sieve(crawler)

    def _results(self) -> Iterator[Metric]:
        pages = self._family(CounterMetricFamily, "crawl_pages", "Results by HTTP status "
                             "(or 'error': no response)", "status")  # fmt: skip
        for status, n in sorted(self.statuses.items()):
            self._add(pages, n, status)
        yield pages
        fetch = self._family(HistogramMetricFamily, "crawl_fetch_seconds",
                             "Time of a fetch, its body read")  # fmt: skip
        cumulative, running = [], 0
        for bound, n in zip([*map(str, FETCH_BUCKETS), "+Inf"], self.buckets, strict=True):
            running += n
            cumulative.append((bound, float(running)))
        fetch.add_metric(list(self.labels.values()), cumulative, self.fetch_sum)  # type: ignore[attr-defined]
        yield fetch

    def _counts(self, crawler: Crawler) -> Iterator[Metric]:
        stats = crawler.stats
        yield self._add(self._family(CounterMetricFamily, "crawl_bytes",
                                     "Bytes of the bodies received"), stats.bytes)  # fmt: skip
        errors = self._family(CounterMetricFamily, "crawl_errors",
                              "Results with an error, by kind", "kind")  # fmt: skip
        for kind in sorted(set(error_kinds()) | set(stats.errors)):
            self._add(errors, stats.errors[kind], kind)
        yield errors
        yield self._add(self._family(CounterMetricFamily, "crawl_retries",
                                     "Fetches tried again"), stats.retries)  # fmt: skip
        if crawler.config.dedup.enabled:
            dup = self._family(CounterMetricFamily, "crawl_duplicates",
                               "Pages whose content an earlier page had", "kind")  # fmt: skip
            self._add(dup, stats.exact_duplicates, "exact")
            yield self._add(dup, stats.near_duplicates, "near")
        if crawler.rendering is not None:
            rendered = crawler.rendering.stats()["rendered"]
            yield self._add(self._family(CounterMetricFamily, "crawl_pages_rendered",
                                         "Pages rendered in the browser"), rendered)  # fmt: skip
        if crawler.focus is not None:
            rate = stats.harvest_rate
            yield self._add(self._family(GaugeMetricFamily, "crawl_harvest_rate",
                                         "Share of the scored pages that were relevant"),
                            rate if rate is not None else float("nan"))  # fmt: skip

    def _frontier(self, crawler: Crawler) -> Iterator[Metric]:
        frontier = crawler.frontier
        if frontier is None:  # the crawl is starting
            return
        f = frontier.stats
        yield self._add(self._family(GaugeMetricFamily, "crawl_frontier_urls",
                                     "URLs waiting in the frontier"), f.queued)  # fmt: skip
        hosts = self._family(GaugeMetricFamily, "crawl_hosts", "Hosts with URLs waiting, by "
                             "state; and hosts down", "state")  # fmt: skip
        self._add(hosts, f.ready_hosts, "ready")
        self._add(hosts, f.waiting_hosts - f.backoff_hosts, "waiting")
        self._add(hosts, f.backoff_hosts, "backing off")
        yield self._add(hosts, f.down_hosts, "down")

    def _sieve(self, crawler: Crawler) -> Iterator[Metric]:
        seen = crawler.seen_figures()
        yield self._add(self._family(GaugeMetricFamily, "crawl_sieve_items",
                                     "URLs in the Sieve (estimated)"),
                        seen["approx_items"])  # fmt: skip
        fpr = seen.get("false_positive_estimate", seen["false_positive_bound"])
        doc = "The Sieve's false-positive rate (estimated)"
        yield self._add(self._family(GaugeMetricFamily, "crawl_sieve_fpr", doc), fpr)
