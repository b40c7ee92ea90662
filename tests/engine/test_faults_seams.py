"""Fault injection at each internal seam of the crawl (issue 34, point 10): a bug of ours must
never look like a slow site. An exception is raised, with monkeypatch, inside the real
components (frontier, robots.txt, admission, parse thread, output, crawl state) of a crawl of
the bundled fixture site; each crawl either goes on (the URL being handled gets its
``internal: ...`` result, the others theirs) or ends at once with the error, and then, with a
crawl state, every unfinished URL is still pending: the resumed crawl finishes the site. Every
crawl runs under a generous watchdog: a hang fails the test, however slow the machine.

Before: a TypeError while the frontier unpacked an entry (raised inside ``set_robots()``'s
hand-out) lost the entry and left every worker waiting forever; an exception after a parse in
the (only, on 2 cores) parse thread killed it, and every later big page waited forever.
"""

from __future__ import annotations

import asyncio
import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import crawler.engine.pages
import crawler.parse.markup
import crawler.parse.thread
from crawler.admission.gate import Admission
from crawler.config.load import Config
from crawler.engine.components import settings
from crawler.engine.crawler import Crawler
from crawler.frontier import Frontier
from crawler.frontier.entries import Packer
from crawler.output.results import CrawlResult
from crawler.parse.thread import Parser
from crawler.state.crawlstate import CrawlState
from crawler.testing.fixture import FixtureSite
from crawler.urls.canonical import canonicalize
from tests.support.server import site_config

WATCHDOG = 120.0  # seconds: catches a hang only (a crawl of the fixture site takes ~1 s)


class Injected(TypeError):
    """The fault: a bug of ours (a TypeError, as in the issue)."""


def once(real: Callable[..., Any], nth: int = 1) -> Callable[..., Any]:
    """`real`, whose `nth` call raises `Injected` (a coroutine function stays one)."""
    calls = [0]

    def hit() -> None:
        calls[0] += 1
        if calls[0] == nth:
            raise Injected(f"injected fault in {real.__qualname__}")

    if asyncio.iscoroutinefunction(real):

        @functools.wraps(real)
        async def afault(*args: Any, **kwargs: Any) -> Any:
            hit()
            return await real(*args, **kwargs)

        return afault

    @functools.wraps(real)
    def fault(*args: Any, **kwargs: Any) -> Any:
        hit()
        return real(*args, **kwargs)

    return fault


def always(real: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(real)
    def fault(*args: Any, **kwargs: Any) -> Any:
        raise Injected(f"injected fault in {real.__qualname__}")

    return fault


async def crawl(
    config: Config,
    seeds: list[str],
    state: CrawlState | None = None,
    consume: Callable[[CrawlResult], None] | None = None,
) -> tuple[Crawler, list[CrawlResult], BaseException | None]:
    """Run a crawl under the watchdog: (crawler, results taken, the error it ended with)."""
    results: list[CrawlResult] = []
    error: list[BaseException] = []

    async def run() -> Crawler:
        async with Crawler(config, state=state) as crawler:
            try:
                async for result in crawler.crawl(seeds):
                    if consume is not None:
                        consume(result)
                    results.append(result)
            except Exception as exc:
                error.append(exc)
        return crawler

    crawler = await asyncio.wait_for(run(), WATCHDOG)  # a TimeoutError: it hung
    return crawler, results, error[0] if error else None


def truth(site: FixtureSite) -> set[str]:
    return site.expected() | site.refused()


def pages_of(results: list[CrawlResult]) -> set[str]:
    return {r.key for r in results if not r.url.endswith("/robots.txt")}


def internal(results: list[CrawlResult]) -> list[CrawlResult]:
    return [r for r in results if (r.error or "").startswith("internal: Injected: injected")]


async def resumed_to_the_end(
    site: FixtureSite, config: Config, directory: Path, before: list[CrawlResult]
) -> None:
    """Nothing was lost: every URL not done is pending, and the resumed crawl finishes."""
    state = CrawlState.open(directory, settings(config))
    admitted, done = state.counts()
    pending = {entry.key for entry in state.pending()}
    assert len(pending) == admitted - done > 0
    crawled, rest, error = await crawl(config, site.seeds, state)
    assert error is None and crawled.complete
    assert pending <= pages_of(rest)
    assert pages_of(before) | pages_of(rest) == truth(site), "an admitted URL was lost"


# -- seams whose fault ends the crawl at once (exit 1 for the command) ------------------------


def busy(site: FixtureSite) -> Config:
    """The issue's setting: 32 workers, 32 requests in flight per host."""
    config = site_config(site, concurrency=32)
    return config.override("politeness", per_host_concurrency=32)


def unpack_fault(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(Packer, "unpack", staticmethod(once(Packer.unpack)))


def done_fault(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(Frontier, "done", once(Frontier.done, nth=4))


def completed_fault(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(CrawlState, "completed", once(CrawlState.completed, nth=5))


ENDING = {
    "frontier-unpack": unpack_fault,  # the issue: raised inside set_robots()'s hand-out
    "frontier-done": done_fault,
    "state-completed": completed_fault,
}


@pytest.mark.slow
@pytest.mark.parametrize("seam", list(ENDING))
async def test_a_fault_in_the_frontier_or_the_state_ends_the_crawl_at_once(
    site: FixtureSite, tmp_path: Path, seam: str
) -> None:
    config = busy(site)
    state = CrawlState.open(tmp_path / "s", settings(config))
    with pytest.MonkeyPatch.context() as mp:
        ENDING[seam](mp)
        crawled, results, error = await crawl(config, site.seeds, state)
    assert error is not None, "the crawl went on as if nothing happened"
    chain = [error, error.__cause__, getattr(error.__cause__, "__cause__", None)]
    assert any(isinstance(e, Injected) for e in chain), repr(error)
    assert not crawled.complete and len(results) < len(truth(site))
    await resumed_to_the_end(site, config, tmp_path / "s", results)


async def test_the_issue_case_without_a_state_names_the_frontier(site: FixtureSite) -> None:
    with pytest.MonkeyPatch.context() as mp:
        unpack_fault(mp)
        crawled, results, error = await crawl(busy(site), site.seeds)
    assert isinstance(error, RuntimeError)
    assert "internal error in the frontier while handing out: Injected" in str(error)
    assert not crawled.complete and not results


@pytest.mark.slow
async def test_an_output_that_raises_ends_the_crawl_and_keeps_the_result_pending(
    site: FixtureSite, tmp_path: Path
) -> None:
    """The consumer (the `crawl` command's output) raising: the crawl ends with its error, the
    result it did not take stays pending."""
    config = busy(site)
    taken: list[CrawlResult] = []

    def output(result: CrawlResult) -> None:
        if len(taken) == 5:
            raise Injected("injected fault in the output")
        taken.append(result)

    state = CrawlState.open(tmp_path / "s", settings(config))
    crawled, results, error = await crawl(config, site.seeds, state, consume=output)
    assert isinstance(error, Injected) and len(results) == 5 and not crawled.complete
    await resumed_to_the_end(site, config, tmp_path / "s", results)


# -- seams whose fault costs one URL: its error recorded, the crawl goes on ------------------


def robots_set_fault(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(Frontier, "set_robots", once(Frontier.set_robots))


def robots_policy_fault(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(
        crawler.engine.pages,
        "policy_from_response",
        once(crawler.engine.pages.policy_from_response),
    )


def parse_thread_fault(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(crawler.parse.thread, "THREAD_PARSE_BYTES", 0)  # every page through the thread
    mp.setattr(crawler.parse.thread, "parse_tree", once(crawler.parse.thread.parse_tree, nth=2))


def parse_loop_fault(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(crawler.parse.thread, "parse_markup", once(crawler.parse.thread.parse_markup, nth=2))


def admission_fault(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(Admission, "links", once(Admission.links, nth=3))


def admitted_fault(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(CrawlState, "admitted", once(CrawlState.admitted, nth=4))


GOING_ON = {
    "robots-set": (robots_set_fault, True),  # (fault, every page still crawled?)
    "robots-policy": (robots_policy_fault, True),
    "parse-thread": (parse_thread_fault, False),
    "parse-loop": (parse_loop_fault, False),
    "admission": (admission_fault, False),
    "state-admitted": (admitted_fault, False),
}


@pytest.mark.slow
@pytest.mark.parametrize("seam", list(GOING_ON))
async def test_a_fault_handling_one_url_is_its_result_and_the_crawl_goes_on(
    site: FixtureSite, tmp_path: Path, seam: str
) -> None:
    config = busy(site)
    state = CrawlState.open(tmp_path / "s", settings(config))
    fault, whole = GOING_ON[seam]
    with pytest.MonkeyPatch.context() as mp:
        fault(mp)
        crawled, results, error = await crawl(config, site.seeds, state)
    assert error is None and crawled.complete
    assert len(internal(results)) == 1, [r.error for r in results if r.error]
    keys = pages_of(results)
    assert len(results) <= len(truth(site)) + 1  # bounded: nothing handed out twice
    if whole:  # robots.txt asked again after its backoff: the site is crawled whole
        assert keys == truth(site)
    else:  # the page whose handling failed lost its links, no other
        assert 0 < len(keys) <= len(truth(site)) and keys <= truth(site)
    reopened = CrawlState.open(tmp_path / "s", settings(config))
    admitted, done = reopened.counts()
    reopened.abandon()
    assert admitted <= done  # finished: nothing left pending


@pytest.mark.slow
async def test_a_fault_after_a_parse_does_not_kill_the_parse_thread(site: FixtureSite) -> None:
    """Screening a slow page's host raised in the parse thread: it killed the thread (the only
    one on 2 cores), and every later page sent to it waited forever."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(crawler.parse.thread, "THREAD_PARSE_BYTES", 0)
        mp.setattr(crawler.parse.markup, "SLOW_PARSE_SECONDS", -1.0)  # every parse "slow"
        mp.setattr(Parser, "_suspect", always(Parser._suspect))
        crawled, results, error = await crawl(busy(site), site.seeds)
    assert error is None and crawled.complete
    assert pages_of(results) == truth(site) and not internal(results)


# -- the command: one line, the traceback for a report, and the way to resume -----------------

_FAULTY_CRAWL = """
import sys
from crawler.frontier.entries import Packer
real, calls = Packer.unpack, [0]
def unpack(*args, **kwargs):
    calls[0] += 1
    if calls[0] == 3:
        raise TypeError("injected fault in Packer.unpack")
    return real(*args, **kwargs)
Packer.unpack = staticmethod(unpack)
from crawler.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def command_args(site: FixtureSite, tmp_path: Path) -> list[str]:
    """`crawl`'s arguments for the fixture site, with a state and an output in `tmp_path`."""
    resolve = ", ".join(f'"{h}" = "127.0.0.1"' for h in site.resolve)
    (tmp_path / "c.toml").write_text(
        f"[politeness]\ndelay = 0.0\nip_delay = 0.0\n[fetch]\nresolve = {{ {resolve} }}\n"
    )
    return [*site.seeds, "--config", str(tmp_path / "c.toml"), "--state", str(tmp_path / "st"),
            "-o", str(tmp_path / "out.jsonl")]  # fmt: skip


async def faulty_command(code: str, args: list[str]) -> tuple[int | None, str]:
    """The command run by `code` (a fault injected, then `main`) on `args`: its exit status and
    its stderr."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, *args,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await asyncio.wait_for(proc.communicate(), WATCHDOG)
    return proc.returncode, err.decode()


@pytest.mark.slow
async def test_the_command_says_an_internal_error_exits_1_and_how_to_resume(
    site: FixtureSite, tmp_path: Path
) -> None:
    args = command_args(site, tmp_path)
    returncode, text = await faulty_command(_FAULTY_CRAWL, args)
    assert returncode == 1, text
    assert "Traceback" in text and "injected fault in Packer.unpack" in text  # for a report
    lines = text.rstrip().splitlines()
    assert lines[-3].startswith("crawl: internal error: ")
    assert lines[-2] == (
        "crawl: this is a bug of the crawler: please report it with the traceback above"
    )
    assert lines[-1].startswith(f"crawl: the URLs not fetched stay pending in {tmp_path / 'st'}")
    assert "resume with: " in lines[-1]
    # the resume (without the fault) finishes the site
    resumed = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "crawler.cli", *args, "-q",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await asyncio.wait_for(resumed.communicate(), WATCHDOG)
    assert resumed.returncode == 0, err.decode()
    urls = [json.loads(line)["url"] for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert {canonicalize(u) for u in urls} == site.expected() | site.refused()


_CRAWL_OUT_OF_MEMORY = """
import sys
from crawler.engine.pages import PageHandler
real, calls = PageHandler.fetch_page, [0]
async def fetch_page(self, entry):
    calls[0] += 1
    if calls[0] == 2:
        raise MemoryError()
    return await real(self, entry)
PageHandler.fetch_page = fetch_page
from crawler.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
async def test_running_out_of_memory_ends_the_crawl_with_what_to_lower_and_how_to_resume(
    site: FixtureSite, tmp_path: Path
) -> None:
    """A MemoryError while handling a page was that page's ``internal: MemoryError`` result (a
    bad page, to the reader), and one in the first pages read as "no seed could be fetched"."""
    returncode, text = await faulty_command(_CRAWL_OUT_OF_MEMORY, command_args(site, tmp_path))
    assert returncode == 1, text
    assert "Traceback" not in text and "no seed could be fetched" not in text
    lines = text.rstrip().splitlines()
    assert lines[-2].startswith("crawl: error: out of memory: lower [crawl] concurrency")
    assert lines[-1].startswith(f"crawl: the URLs not fetched stay pending in {tmp_path / 'st'}")
    written = (tmp_path / "out.jsonl").read_text()
    assert "MemoryError" not in written  # no URL blamed for it
