"""A proxy that goes down, or the crawler's own network going down, end to end on loopback: the
crawl pauses instead of putting every host down, resumes when the proxy or the network answers,
or ends with a fatal error after ``[fetch] outage_give_up`` with every unfinished URL pending.

The gate's backoff is shortened (`Outage(base=...)`) so that the tests wait milliseconds."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import sqlite3
import struct
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from crawler.cli.main import main
from crawler.config.load import Config
from crawler.engine.components import settings
from crawler.engine.crawler import Crawler
from crawler.errors import ConnectionReset, NetworkUnavailable, ProxyError, ProxyUnavailable
from crawler.fetch.fetcher import Fetcher
from crawler.fetch.outage import Outage
from crawler.fetch.resolver import OverrideResolver
from crawler.fetch.settings import Transport
from crawler.output.results import CrawlResult
from crawler.state.crawlstate import CrawlState

PASSWORD = "s3cret-pw"
HOSTS = [f"h{i}.test" for i in range(4)]
URLS = [f"http://{host}/p{n}" for host in HOSTS for n in range(8)]


class Proxy:
    """A loopback HTTP proxy answering absolute-form requests itself; it can be stopped and
    started again on the same port (a proxy restart)."""

    def __init__(self) -> None:
        self.port = 0
        self.seen: list[str] = []
        self.refuse: int | None = None  # a status answered to everything instead
        self._runner: web.AppRunner | None = None

    async def handler(self, request: web.Request) -> web.StreamResponse:
        if self.refuse is not None:
            return web.Response(status=self.refuse)
        url = str(request.url)
        if url.endswith("/robots.txt"):
            return web.Response(status=404)
        self.seen.append(url)
        return web.Response(text="<html><title>page</title></html>", content_type="text/html")

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/{tail:.*}", self.handler)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, reuse_address=True)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    async def stop(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()


@pytest.fixture
async def proxy(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Proxy]:
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    p = Proxy()
    await p.start()
    try:
        yield p
    finally:
        await p.stop()


def proxy_config(port: int, **fetch: Any) -> Config:
    config = Config().override("fetch", proxy=f"http://pu:{PASSWORD}@127.0.0.1:{port}", **fetch)
    config = config.override(
        "politeness", delay=0.0, ip_delay=0.0, backoff_base=0.05, backoff_max=0.2
    )
    return config.override("crawl", concurrency=4)


def fast_gate(crawler: Crawler, give_up: float = 30.0) -> Outage:
    crawler.fetcher.outage = gate = Outage(give_up, base=0.02, cap=0.1)
    return gate


async def test_a_proxy_restarted_mid_crawl_loses_nothing(proxy: Proxy) -> None:
    results: list[CrawlResult] = []
    restart: asyncio.Task[None] | None = None

    async def down_for_a_while() -> None:
        await proxy.stop()
        await asyncio.sleep(0.5)  # several probes fail meanwhile
        await proxy.start()

    async with Crawler(proxy_config(proxy.port)) as crawler:
        gate = fast_gate(crawler)
        async for result in crawler.crawl(URLS):
            results.append(result)
            if len(results) == 5:
                restart = asyncio.create_task(down_for_a_while())
    assert restart is not None and restart.done()
    assert sorted(r.url for r in results) == sorted(URLS)
    assert [r.error for r in results if r.error] == []  # no host_down, no proxy error
    assert sorted(proxy.seen) == sorted(URLS)  # every page fetched once
    assert gate.pauses >= 1 and gate.resumes == gate.pauses and gate.probes >= 2
    assert crawler.stats.host_down == 0
    outages = crawler.stats_dict()["outages"]
    assert outages["pauses"] == gate.pauses and outages["paused_seconds"] > 0.3


async def test_a_proxy_that_never_comes_back_ends_the_crawl_and_a_resume_finishes_it(
    proxy: Proxy, tmp_path: Path
) -> None:
    config = proxy_config(proxy.port, outage_give_up=0.3)
    state = CrawlState.open(tmp_path / "s", settings(config))
    first: list[CrawlResult] = []

    async def run() -> None:
        async with Crawler(config, state=state) as crawler:
            fast_gate(crawler, 0.3)
            async for result in crawler.crawl(URLS):
                first.append(result)
                if len(first) == 5:
                    await proxy.stop()

    with pytest.raises(ProxyUnavailable) as caught:
        await run()
    message = str(caught.value)
    assert message.startswith("the proxy has not answered for 0 s ([fetch] outage_give_up = 0.3")
    assert f"cannot connect to the proxy 127.0.0.1:{proxy.port}" in message
    assert PASSWORD not in message
    assert all(r.error is None for r in first)
    db = sqlite3.connect(tmp_path / "s" / "state.sqlite")
    status = db.execute("SELECT value FROM meta WHERE name = 'status'").fetchone()
    pending = db.execute("SELECT COUNT(*) FROM urls WHERE done = 0").fetchone()[0]
    db.close()
    assert status == ("interrupted",) and pending == len(URLS) - len(first)
    # the proxy is back: the resume fetches every URL the first run did not
    await proxy.start()
    state = CrawlState.open(tmp_path / "s", settings(config))
    async with Crawler(config, state=state) as crawler:
        second = [r async for r in crawler.crawl(URLS)]
    assert all(r.error is None for r in second)
    assert sorted(r.url for r in first + second) == sorted(URLS)
    assert sorted(proxy.seen) == sorted(URLS)


async def test_a_proxy_name_that_does_not_resolve_is_the_proxys_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def resolve(self: OverrideResolver, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> Any:  # fmt: skip
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(OverrideResolver, "resolve", resolve)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    config = Config().override("fetch", proxy="http://proxy.test:3128", outage_give_up=0.2)
    results: list[CrawlResult] = []

    async def run() -> None:
        async with Crawler(config) as crawler:
            fast_gate(crawler, 0.2)
            async for result in crawler.crawl(URLS):
                results.append(result)

    with pytest.raises(ProxyUnavailable, match=r"cannot resolve the proxy's name proxy\.test"):
        await run()
    assert results == []  # not one URL failed: no "dns: cannot resolve h0.test"


async def test_a_proxy_refusing_the_credentials_ends_the_crawl_at_once(proxy: Proxy) -> None:
    proxy.refuse = 407
    results: list[CrawlResult] = []

    async def run() -> None:
        async with Crawler(proxy_config(proxy.port)) as crawler:
            async for result in crawler.crawl(URLS):
                results.append(result)

    with pytest.raises(ProxyUnavailable, match="refused the credentials of \\[fetch\\] proxy"):
        await asyncio.wait_for(run(), 10)  # at once: not after outage_give_up (300 s)
    assert results == []


@contextlib.asynccontextmanager
async def site() -> AsyncIterator[int]:
    async def handler(request: web.Request) -> web.StreamResponse:
        if request.path == "/robots.txt":
            return web.Response(status=404)
        return web.Response(text="<html><title>page</title></html>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield int(runner.addresses[0][1])
    finally:
        await runner.cleanup()


def failing_dns(monkeypatch: pytest.MonkeyPatch, code: int, names: set[str] | None) -> list[bool]:
    """The resolver override raises gaierror(`code`) for `names` (None: every name) while the
    returned flag is set."""
    down = [True]
    original = OverrideResolver.resolve

    async def resolve(self: OverrideResolver, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> Any:  # fmt: skip
        if down[0] and (names is None or host in names):
            raise socket.gaierror(code, "Temporary failure in name resolution")
        return await original(self, host, port, family)

    monkeypatch.setattr(OverrideResolver, "resolve", resolve)
    return down


def direct_config(port: int, hosts: list[str], **fetch: Any) -> Config:
    resolve = {host: "127.0.0.1" for host in hosts}
    config = Config().override("fetch", resolve=resolve, **fetch)
    config = config.override(
        "politeness", delay=0.0, ip_delay=0.0, backoff_base=0.05, backoff_max=0.2
    )
    return config.override("crawl", concurrency=4)


async def test_the_network_down_then_back_pauses_the_crawl(monkeypatch: pytest.MonkeyPatch) -> None:
    down = failing_dns(monkeypatch, socket.EAI_AGAIN, None)
    async with site() as port:
        urls = [f"http://{host}:{port}/p{n}" for host in HOSTS for n in range(5)]
        async with Crawler(direct_config(port, HOSTS)) as crawler:
            gate = fast_gate(crawler)
            loop = asyncio.get_running_loop()
            loop.call_later(0.4, down.__setitem__, 0, False)  # the resolver is back
            results = [r async for r in crawler.crawl(urls)]
    assert sorted(r.url for r in results) == sorted(urls)
    assert [r.error for r in results if r.error] == []  # no dns error, no host_down
    assert gate.pauses >= 1 and gate.kind == "network" and not gate.paused
    assert crawler.stats.host_down == 0


async def test_a_single_host_whose_dns_keeps_failing_ends_with_the_give_up(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    failing_dns(monkeypatch, socket.EAI_AGAIN, None)
    async with site() as port:
        config = direct_config(port, ["solo.test"], outage_give_up=0.3)
        state = CrawlState.open(tmp_path / "s", settings(config))

        async def run() -> None:
            async with Crawler(config, state=state) as crawler:
                fast_gate(crawler, 0.3)
                async for _ in crawler.crawl([f"http://solo.test:{port}/"]):
                    pass

        with pytest.raises(NetworkUnavailable) as caught:
            await run()
    assert "dns: cannot resolve solo.test: temporary failure" in str(caught.value)
    assert not isinstance(caught.value, ProxyUnavailable)
    db = sqlite3.connect(tmp_path / "s" / "state.sqlite")
    assert db.execute("SELECT COUNT(*) FROM urls WHERE done = 0").fetchone() == (1,)
    db.close()


async def test_many_names_that_do_not_exist_do_not_pause_the_crawl(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dead = {f"dead{i}.test" for i in range(12)}
    failing_dns(monkeypatch, socket.EAI_NONAME, dead)
    async with site() as port:
        urls = [f"http://{host}:{port}/" for host in sorted(dead)] + [
            f"http://live.test:{port}/p{n}" for n in range(4)
        ]
        config = direct_config(port, ["live.test"]).override("fetch", retries=0)
        async with Crawler(config) as crawler:
            gate = crawler.fetcher.outage
            assert gate is not None
            results = [r async for r in crawler.crawl(urls)]
    errors = {r.url: r.error for r in results}
    assert len(errors) == len(urls)
    # a name that does not exist is an answer: its pages fail as DNS errors (not robots refusals)
    assert all(str(errors[f"http://{host}:{port}/"]).startswith(f"dns: cannot resolve {host} (")
               for host in dead)  # fmt: skip
    assert all(errors[f"http://live.test:{port}/p{n}"] is None for n in range(4))
    assert gate.pauses == 0


# -- the proxy's failures, fetch by fetch -------------------------------------------------------


async def _close_at_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readline()
    writer.close()


async def _reset_at_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readline()
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.close()


@pytest.mark.parametrize("how", [_close_at_once, _reset_at_once])
async def test_a_proxy_hanging_up_before_answering_connect_is_the_proxys_failure(
    how: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    server = await asyncio.start_server(how, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server, Fetcher(Transport(user_agent="t/1", proxy=f"http://127.0.0.1:{port}")) as f:
        with pytest.raises(ProxyError, match=f"the proxy 127.0.0.1:{port} .* before answering"):
            await f.fetch("https://a.test/")  # CONNECT: nothing went to the target yet
        # a plain-HTTP request went out: its reset may be the target's, as before
        with pytest.raises(ConnectionReset):
            await f.fetch("http://a.test/")


@pytest.fixture
def crawler_logging() -> Iterator[None]:
    """The command sets the "crawler" logger up (its own handler, no propagation): put it back,
    or later tests' caplog sees nothing."""
    logger = logging.getLogger("crawler")
    handlers, level, propagate = logger.handlers[:], logger.level, logger.propagate
    try:
        yield
    finally:
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate


@pytest.mark.usefixtures("crawler_logging")
def test_the_command_exits_2_naming_the_proxy_and_keeps_the_urls_pending(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    config = tmp_path / "c.toml"
    config.write_text(f'[fetch]\nproxy = "http://pu:{PASSWORD}@127.0.0.1:1"\n'
                      "outage_give_up = 0.5\n")  # fmt: skip
    seeds = ["http://a.test/", "http://b.test/"]
    out = tmp_path / "out.jsonl"
    status = main([*seeds, "--config", str(config), "--state", str(tmp_path / "s"), "-q",
                   "-o", str(out)])  # fmt: skip
    err = capsys.readouterr().err
    assert status == 2
    assert "crawl: error: the proxy has not answered for 1 s ([fetch] outage_give_up = 0.5): " \
        "proxy: cannot connect to the proxy 127.0.0.1:1: Connection refused" in err  # fmt: skip
    assert f"the URLs not fetched stay pending in {tmp_path / 's'}: run the same command" in err
    assert PASSWORD not in err and out.read_text() == ""
    db = sqlite3.connect(tmp_path / "s" / "state.sqlite")
    assert db.execute("SELECT COUNT(*), SUM(done) FROM urls").fetchone() == (2, 0)
    db.close()


def test_outage_give_up_is_checked() -> None:
    from crawler.errors import ConfigError

    with pytest.raises(ConfigError, match="outage_give_up: must be >= 0"):
        Config().override("fetch", outage_give_up=-1.0)
