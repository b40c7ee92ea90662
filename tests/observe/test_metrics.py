"""`--metrics`: Prometheus text at /metrics while a real crawl of the fixture site runs, read with
prometheus-client's own parser; each crawl its own registry; the address checked before the
crawl."""

from __future__ import annotations

import asyncio
import itertools
import socket
from collections import Counter
from pathlib import Path

import aiohttp
import pytest
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from crawler.cli.main import main
from crawler.config.checks import listen_address
from crawler.engine.crawler import Crawler
from crawler.errors import ConfigError
from crawler.observe import CrawlMetrics, MetricsServer
from crawler.observe.metrics import error_kinds
from crawler.output.results import CrawlResult
from crawler.state.db import FILENAME
from crawler.testing.fixture import FixtureSite
from crawler.testing.redis_server import RedisServer
from tests.support.server import site_config

WATCHDOG = 120.0

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> Samples:
    """Every sample of a scrape: (name, sorted labels) -> value."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum of `name`'s samples whose labels include `labels`."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= set(ls))


async def scrape(session: aiohttp.ClientSession, address: str) -> Samples:
    async with session.get(f"http://{address}/metrics") as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        return parse(await response.text())


def counters(samples: Samples) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    names = ("_total", "_bucket", "_count", "_sum")
    return {k: v for k, v in samples.items() if k[0].endswith(names)}


async def test_the_metrics_of_a_real_crawl_only_grow_and_agree_with_its_results(
    site: FixtureSite,
) -> None:
    config = site_config(site).override("dedup", enabled=True)
    metrics = CrawlMetrics()
    server = await MetricsServer.start(metrics, "127.0.0.1:0")
    results: list[CrawlResult] = []
    scrapes: list[Samples] = []
    try:
        async with (
            asyncio.timeout(WATCHDOG),
            aiohttp.ClientSession() as session,
            Crawler(config) as crawler,
        ):
            metrics.attach(crawler)
            scrapes.append(await scrape(session, server.address))  # before any result
            async for result in crawler.crawl(site.seeds):
                results.append(result)
                if len(results) % 3 == 0:  # while it runs: workers go on between scrapes
                    scrapes.append(await scrape(session, server.address))
            scrapes.append(await scrape(session, server.address))
    finally:
        await server.close()
    assert len(results) > 20 and len(scrapes) > 8
    for before, after in itertools.pairwise(scrapes):  # counters never go down
        grown = counters(after)
        assert all(grown.get(k, 0.0) >= v for k, v in counters(before).items())
    last = scrapes[-1]
    statuses = Counter("error" if r.status is None else str(r.status) for r in results)
    assert total(last, "crawl_pages_total") == len(results)
    for status, n in statuses.items():
        assert total(last, "crawl_pages_total", status=status) == n
    assert total(last, "crawl_bytes_total") == sum(r.size for r in results)
    kinds = Counter(r.error.split(":", 1)[0] for r in results if r.error)
    assert kinds, "the fixture site has failing pages"
    for kind in {*kinds, *error_kinds()}:
        assert total(last, "crawl_errors_total", kind=kind) == kinds[kind]
    assert total(last, "crawl_retries_total") == crawler.stats.retries > 0
    fetched = [r.elapsed_ms for r in results if r.elapsed_ms is not None]
    assert total(last, "crawl_fetch_seconds_count") == len(fetched)
    assert total(last, "crawl_fetch_seconds_bucket", le="+Inf") == len(fetched)
    assert total(last, "crawl_fetch_seconds_sum") == pytest.approx(sum(fetched) / 1000)
    dups = sum(r.duplicate_of is not None for r in results)
    assert dups and total(last, "crawl_duplicates_total", kind="exact") == dups
    assert total(last, "crawl_frontier_urls") == 0  # the crawl ran out of work
    assert {ls for n, ls in last if n == "crawl_hosts"} == {
        (("state", s),) for s in ("ready", "waiting", "backing off", "down")
    }
    assert total(last, "crawl_sieve_items") == pytest.approx(crawler.stats.admitted, rel=0.05)
    assert 0 < total(last, "crawl_sieve_fpr") < 1e-3
    assert server.scrapes == len(scrapes)


def test_each_crawl_has_a_registry_of_its_own() -> None:
    one, two = CrawlMetrics(), CrawlMetrics("shared-a")
    when = "2026-01-01T00:00:00+00:00"
    result = CrawlResult(url="http://a.test/", key="http://a.test/", status=404, depth=0,
                         parent=None, fetched_at=when, elapsed_ms=30.0)  # fmt: skip
    one.observe(result)
    first, second = parse(one.exposition().decode()), parse(two.exposition().decode())
    assert total(first, "crawl_pages_total", status="404") == 1
    assert total(second, "crawl_pages_total") == 0
    assert REGISTRY.get_sample_value("crawl_pages_total", {"status": "404"}) is None
    # a shared crawl's process labels every sample with the crawl id
    two.observe(result)
    assert all(dict(ls).get("crawl_id") == "shared-a"
               for _, ls in parse(two.exposition().decode()))  # fmt: skip
    assert total(first, "crawl_fetch_seconds_bucket", le="0.05") == 1
    assert total(first, "crawl_fetch_seconds_bucket", le="0.025") == 0


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("9100", ("127.0.0.1", 9100)),
        (":9100", ("127.0.0.1", 9100)),
        ("0.0.0.0:9100", ("0.0.0.0", 9100)),
        ("[::1]:0", ("::1", 0)),
        ("metrics.local:80", ("metrics.local", 80)),
    ],
)
def test_a_listen_address_binds_loopback_unless_a_host_is_named(
    text: str, address: tuple[str, int]
) -> None:
    assert listen_address(text) == address


@pytest.mark.parametrize("text", ["", "host:", "::1:9100", "127.0.0.1:70000", "a b:1", "x:y"])
def test_a_bad_listen_address_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"\w"):
        listen_address(text)


async def test_an_address_in_use_is_a_config_error_naming_the_option() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=rf"--metrics 127.0.0.1:{port}: cannot listen"):
            await MetricsServer.start(CrawlMetrics(), f"127.0.0.1:{port}")


def test_crawl_with_a_port_in_use_exits_2_before_crawling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, state = tmp_path / "out.jsonl", tmp_path / "state"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status = main(["http://127.0.0.1:9/", "-q", "-o", str(out), "--state", str(state),
                       "--metrics", str(port)])  # fmt: skip
    err = capsys.readouterr().err
    assert status == 2, err
    assert f"crawl: error: --metrics {port}: cannot listen there" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not out.exists() or out.stat().st_size == 0
    assert not (state / FILENAME).exists()


def test_a_bad_metrics_setting_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["http://127.0.0.1:9/", "-q", "-o", str(tmp_path / "o"), "--metrics", "x:y"])
    err = capsys.readouterr().err
    assert status == 2 and err.startswith("crawl: error: --metrics") and "x:y" in err, err


async def test_a_shared_crawls_process_serves_its_own_figures_labelled_with_the_crawl_id(
    site: FixtureSite, redis_server: RedisServer
) -> None:
    config = site_config(site).override("cluster", redis=redis_server.url, crawl_id="obs")
    metrics = CrawlMetrics("obs")
    server = await MetricsServer.start(metrics, "127.0.0.1:0")
    results: list[CrawlResult] = []
    try:
        async with (
            asyncio.timeout(WATCHDOG),
            aiohttp.ClientSession() as session,
            Crawler(config) as crawler,
        ):
            metrics.attach(crawler)
            async for result in crawler.crawl(site.seeds):
                results.append(result)
            last = await scrape(session, server.address)
    finally:
        await server.close()
    assert results and all(dict(labels)["crawl_id"] == "obs" for _, labels in last)
    assert total(last, "crawl_pages_total", crawl_id="obs") == len(results)
    assert total(last, "crawl_bytes_total") == sum(r.size for r in results)
    assert total(last, "crawl_frontier_urls") == 0
    shared = crawler.seen_figures()  # the shared Sieve's, in Redis
    assert shared["shared"] and total(last, "crawl_sieve_items") == shared["approx_items"] > 0
