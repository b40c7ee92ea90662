"""A host refusing the connection to its robots.txt (issue 34, point 3): nothing listens on the
port, which is an answer, not a silence. robots.txt is asked once more after the first backoff
step (a server restarting loses nothing), then the host's pages fail at once as connection
errors (kind ``connect``); before, robots.txt was asked 6 times over 15-31 s and the pages were
filed as robots refusals. Timeouts, resets and 5xx keep their RFC 9309 rules (6 tries, then a
complete disallow), and the circuit breaker counts the refused tries as the host's failures.
"""

from __future__ import annotations

import asyncio
import errno
import json
import random
import socket
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from crawler.config.load import Config
from crawler.engine.crawler import Crawler
from crawler.errors import ConnectError, FetchError, FetchTimeout
from crawler.fetch.fetcher import Fetcher
from crawler.fetch.translate import translate_error
from crawler.frontier import Frontier
from crawler.frontier.entries import Entry, EntryKind
from crawler.frontier.hosts import Host, PolitenessRules
from crawler.frontier.queues import HostQueue
from crawler.frontier.robots import REFUSED_ATTEMPTS, RobotsPolicy, policy_from_response
from crawler.frontier.settings import Politeness
from tests.support.frontier_sim import crawl, simulate
from tests.support.server import serve

CRAWL = [sys.executable, "-m", "crawler.cli"]


def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released: the OS refuses connections)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def refused(port: int = 9) -> RobotsPolicy:
    reason = f"connect: cannot connect to 127.0.0.1:{port}: Connection refused"
    return policy_from_response(None, None, "sieve", error=reason, refused=True)


def rules(max_host_failures: int = 10) -> PolitenessRules:
    return PolitenessRules(
        Politeness(
            delay=0.0,
            per_host_concurrency=1,
            max_delay=30.0,
            adaptive=False,
            backoff_base=1.0,
            backoff_max=300.0,
            max_retry_after=600.0,
            robots_ttl=86400.0,
            max_host_failures=max_host_failures,
            robots_attempts=6,
        ),
        rng=random.Random(1),
    )


# -- the rule --------------------------------------------------------------------------------


def test_a_refused_connection_is_flagged_and_nothing_else_is() -> None:
    key = aiohttp.client_reqrep.ConnectionKey("127.0.0.1", 9, False, True, None, None, None)
    refusal = aiohttp.ClientConnectorError(key, ConnectionRefusedError(errno.ECONNREFUSED, "x"))
    unreachable = aiohttp.ClientConnectorError(key, OSError(errno.EHOSTUNREACH, "x"))
    assert translate_error(refusal).refused
    assert isinstance(translate_error(refusal), ConnectError)
    assert not translate_error(unreachable).refused
    assert not translate_error(aiohttp.ConnectionTimeoutError("slow")).refused
    assert not FetchTimeout("t").refused
    # the policy keeps the flag only for "no response" (a 503 is the host answering)
    assert refused().refused and refused().temporary
    assert not policy_from_response(503, None, "sieve", refused=True).refused
    assert not policy_from_response(None, None, "sieve", error="timeout: t").refused


def test_a_refused_robots_txt_is_asked_once_more_then_given_up() -> None:
    politeness, host = rules(), Host("http://a.test:80", HostQueue(), 0.0)
    assert REFUSED_ATTEMPTS == 2
    assert not politeness.robots(host, refused(), now=0.0)  # the quick retry
    assert host.policy is None and 0.5 <= host.ready_at <= 1.0  # after backoff_base * 0.5-1
    assert politeness.robots(host, refused(), now=1.0)  # given up: its pages fail
    assert host.policy is not None and host.policy.refused
    assert 1.0 + 1.0 <= host.robots_expires <= 1.0 + 2.0  # asked again after the next step
    assert host.failures == 2 and host.down is None  # counted for the circuit breaker


@pytest.mark.parametrize(
    "policy",
    [
        policy_from_response(None, None, "sieve", error="timeout: waiting for the headers"),
        policy_from_response(None, None, "sieve", error="reset: server disconnected"),
        policy_from_response(503, None, "sieve"),
    ],
    ids=["timeout", "reset", "503"],
)
def test_silences_and_5xx_keep_their_6_tries_and_rfc_9309(policy: RobotsPolicy) -> None:
    politeness, host = rules(), Host("http://a.test:80", HostQueue(), 0.0)
    gave_up = [politeness.robots(host, policy, now=float(i)) for i in range(6)]
    assert gave_up == [False] * 5 + [True]
    assert host.policy is policy and host.robots_expires == 5.0 + 86400.0  # robots_ttl
    assert host.failures == 0  # not the circuit breaker's: as before


def test_refused_robots_txt_counts_toward_the_circuit_breaker() -> None:
    politeness, host = rules(max_host_failures=2), Host("http://a.test:80", HostQueue(), 0.0)
    politeness.robots(host, refused(), now=0.0)
    assert politeness.robots(host, refused(), now=1.0)
    assert host.down is not None and host.down.startswith("2 fetches in a row failed")


def test_a_cached_policy_stays_in_force_when_the_refresh_is_refused() -> None:
    politeness, host = rules(), Host("http://a.test:80", HostQueue(), 0.0)
    allow = policy_from_response(200, b"User-agent: *\nDisallow: /x", "sieve")
    politeness.robots(host, allow, now=0.0)
    for now in (86400.0, 86401.0, 86403.0):
        assert not politeness.robots(host, refused(), now=now)
    assert host.policy is allow  # RFC 9309 2.4: its pages are fetched (and refused on connect)


# -- the frontier ----------------------------------------------------------------------------


def test_the_frontier_fails_the_pages_as_connection_errors_and_asks_again_later() -> None:
    f = Frontier(Politeness(respect_robots=True, backoff_base=1.0), rng=random.Random(2))
    for i in range(3):
        f.put(Entry(url=f"http://dead.test/{i}", key=f"http://dead.test/{i}"))
    log = simulate(lambda: crawl(f, workers=2, fetch=0.001, robots=lambda e: refused()))
    kinds = [e.kind for _, _, e in log]
    assert kinds.count(EntryKind.ROBOTS) == REFUSED_ATTEMPTS
    assert kinds.count(EntryKind.REFUSED) == 3 and EntryKind.PAGE not in kinds
    assert max(start for start, _, _ in log) <= 1.1  # one backoff step, not 15-31 s
    refusal = f.refusal(next(e for _, _, e in log if e.kind is EntryKind.REFUSED))
    assert refusal.startswith("connect: cannot connect to 127.0.0.1:9: Connection refused")
    assert "robots.txt, 2 tries" in refusal


def test_a_page_found_later_asks_robots_txt_again_once_the_step_ended() -> None:
    """A host restarting for longer than the quick retry is not lost for the whole crawl: its
    pages found while the backoff step lasts fail at once, later ones ask robots.txt again."""
    now = [0.0]
    f = Frontier(
        Politeness(respect_robots=True, backoff_base=1.0),
        rng=random.Random(2),
        clock=lambda: now[0],
    )

    def page(name: str) -> Entry:
        return Entry(url=f"http://dead.test/{name}", key=f"http://dead.test/{name}")

    async def take(policy: RobotsPolicy | None = None) -> EntryKind:
        entry = await f.get()
        assert entry is not None
        if entry.kind is EntryKind.ROBOTS:
            f.set_robots(entry.url, policy or refused())
        f.done(entry)
        return entry.kind

    async def main() -> None:
        f.put(page("first"))
        assert await take() is EntryKind.ROBOTS
        now[0] = 1.0  # the quick retry is due (backoff_base * 0.5-1)
        assert await take() is EntryKind.ROBOTS
        assert await take() is EntryKind.REFUSED  # given up: the page fails at once
        f.put(page("soon"))  # within the next step (1-2 s): refused at once
        assert await take() is EntryKind.REFUSED
        now[0] = 3.0
        f.put(page("later"))  # the step ended: queued, robots.txt first
        assert await take(RobotsPolicy()) is EntryKind.ROBOTS  # the server is back
        assert await take() is EntryKind.PAGE

    simulate(main)


# -- the crawl, in process ------------------------------------------------------------------


async def test_one_quick_retry_saves_a_host_that_was_restarting() -> None:
    """robots.txt refused once (the server restarting), then answered: nothing is lost."""

    async def handler(request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        return web.Response(text="<title>up</title>", content_type="text/html")

    real = Fetcher.fetch
    refusals: list[str] = []

    async def restarting(self: Fetcher, url: str, **kwargs: object) -> object:
        if url.endswith("/robots.txt") and not refusals:
            error: FetchError = ConnectError(f"cannot connect to {url}: Connection refused")
            error.refused = True
            refusals.append(url)
            raise error
        return await real(self, url, **kwargs)  # type: ignore[arg-type]

    config = Config().override("politeness", delay=0.0, ip_delay=0.0, backoff_base=0.01)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Fetcher, "fetch", restarting)
        async with serve(handler) as port, Crawler(config) as crawler:
            results = [r async for r in crawler.crawl([f"http://127.0.0.1:{port}/"])]
    assert refusals and [(r.status, r.error) for r in results] == [(200, None)]
    assert crawler.stats.robots_fetches == 2


# -- the command ----------------------------------------------------------------------------


@pytest.mark.slow
def test_the_command_reports_a_dead_port_as_a_connection_failure(tmp_path: Path) -> None:
    """`crawl http://127.0.0.1:PORT/` with nothing listening: exit 3, the refusal named on
    stderr, no robots refusal and no log-formatted warning; 2 tries of robots.txt, not 6."""
    port = closed_port()
    out, stats = tmp_path / "out.jsonl", tmp_path / "stats.json"
    done = subprocess.run(
        [*CRAWL, f"http://127.0.0.1:{port}/", "--delay", "0", "-o", str(out), "--stats",
         str(stats)],
        capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[2],
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert f"connect: cannot connect to 127.0.0.1:{port}: Connection refused" in done.stderr
    assert "robots.txt unreachable" not in done.stderr and "WARNING" not in done.stderr
    [line] = out.read_text().splitlines()
    assert json.loads(line)["error"].startswith("connect: ")
    figures = json.loads(stats.read_text())
    assert figures["errors"] == {"connect": 1}
    assert figures["robots_refused"] == 0
    assert figures["robots_fetches"] == REFUSED_ATTEMPTS  # the work is bounded, not the time


@pytest.mark.slow
def test_the_command_keeps_5xx_robots_txt_a_robots_refusal(tmp_path: Path) -> None:
    """RFC 9309 for a server that answers: a 503 robots.txt is still a complete disallow
    (backoff_base 0.01 via a config file: the 6 tries take a fraction of a second)."""
    script = (
        "import asyncio, sys\n"
        "from aiohttp import web\n"
        "async def h(r):\n"
        "    return web.Response(status=503)\n"
        "async def main():\n"
        "    app = web.Application(); app.router.add_get('/{t:.*}', h)\n"
        "    runner = web.AppRunner(app); await runner.setup()\n"
        "    site = web.TCPSite(runner, '127.0.0.1', 0); await site.start()\n"
        "    print(runner.addresses[0][1], flush=True); await asyncio.sleep(600)\n"
        "asyncio.run(main())\n"
    )
    server = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        config = tmp_path / "c.toml"
        config.write_text("[politeness]\ndelay = 0.0\nip_delay = 0.0\nbackoff_base = 0.01\n")
        out = tmp_path / "out.jsonl"
        done = subprocess.run(
            [*CRAWL, f"http://127.0.0.1:{port}/", "--config", str(config), "-o", str(out)],
            capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[2],
        )  # fmt: skip
    finally:
        server.kill()
        server.wait()
    assert done.returncode == 3, done.stderr
    [line] = out.read_text().splitlines()
    assert json.loads(line)["error"].startswith("robots: robots.txt unreachable (HTTP 503")


async def test_nothing_is_left_waiting_on_a_refused_host() -> None:
    """Two dead ports and a watchdog: the crawl ends by itself (bounded work)."""
    seeds = [f"http://127.0.0.1:{closed_port()}/", f"http://127.0.0.1:{closed_port()}/"]
    config = Config().override("politeness", delay=0.0, ip_delay=0.0, backoff_base=0.01)

    async def run() -> list[str | None]:
        async with Crawler(config) as crawler:
            return [r.error async for r in crawler.crawl(seeds)]

    errors = await asyncio.wait_for(run(), timeout=60)
    assert len(errors) == 2 and all(e is not None and e.startswith("connect: ") for e in errors)


# -- a name that does not exist is an answer too ------------------------------------------------


def _dns_failure(code: int) -> FetchError:
    key = aiohttp.client_reqrep.ConnectionKey("typo.test", 80, False, True, None, None, None)
    return translate_error(aiohttp.ClientConnectorDNSError(key, socket.gaierror(code, "x")))


def test_a_name_that_does_not_exist_is_flagged_and_a_silent_resolver_is_not() -> None:
    assert _dns_failure(socket.EAI_NONAME).refused  # NXDOMAIN: the name does not exist
    assert not _dns_failure(socket.EAI_AGAIN).refused  # no answer (or SERVFAIL): a silence
    assert _dns_failure(socket.EAI_AGAIN).network  # ... which crawler.fetch.outage watches


async def test_a_host_name_that_does_not_exist_fails_its_pages_after_two_tries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A typo in a seed's host name: reported as `dns: ...` after 2 tries of robots.txt (it was
    6, ~21 s, filed under robots). No DNS query leaves the machine: the resolver is replaced."""
    asked: list[str] = []

    async def no_such_name(self: object, host: str, *args: object, **kw: object) -> object:
        asked.append(host)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(aiohttp.ThreadedResolver, "resolve", no_such_name)
    config = Config().override("politeness", delay=0.0, ip_delay=0.0, backoff_base=0.01)
    async with asyncio.timeout(60), Crawler(config) as crawler:
        results = [r async for r in crawler.crawl(["http://typo.test/", "http://typo.test/a"])]
    assert sorted(r.url for r in results) == ["http://typo.test/", "http://typo.test/a"]
    for result in results:
        assert result.error == ("dns: cannot resolve typo.test (fetching its host's robots.txt, "
                                "2 tries; not requested)")  # fmt: skip
    stats = crawler.stats_dict()
    assert stats["errors"] == {"dns": 2} and stats["robots_refused"] == 0
    assert stats["robots_fetches"] == REFUSED_ATTEMPTS == len(asked)  # the work, not the time
