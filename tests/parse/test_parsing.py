"""The parse thread primitive and the GIL switch-interval guard."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Iterator

import pytest

from crawler.parse import defuse, markup
from crawler.parse import thread as parsing
from crawler.parse.markup import NOT_HTML, parse_markup
from crawler.parse.thread import Parser, switch_interval

URL = "http://site.test/page"
BIG = b"<html><head><title>Big</title><meta name=robots content=nofollow></head><body>" + b"".join(
    b"<p><a href='/p%d'>p</a> filler text</p>" % i for i in range(2000)
)


async def test_big_bodies_are_parsed_in_a_parse_thread_with_the_same_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert len(BIG) > parsing.THREAD_PARSE_BYTES
    threads: list[str] = []
    real = markup.LexborHTMLParser

    def spy(data: bytes) -> object:
        threads.append(threading.current_thread().name)
        return real(data)

    parser = Parser(threads=1)
    try:
        expected = parse_markup(BIG, URL, "text/html")
        monkeypatch.setattr(markup, "LexborHTMLParser", spy)
        got = await parser.parse(BIG, URL, "text/html")
        small = await parser.parse(b"<a href=x>", URL, "text/html")
        binary = await parser.parse(b"\x89PNG\r\n\x1a\n" + bytes(parsing.THREAD_PARSE_BYTES), URL)
    finally:
        await parser.close()
    assert got == expected and len(got.hrefs) == 2000
    assert small.hrefs == ("x",)
    assert binary == NOT_HTML  # sniffed on the loop: never sent to the thread
    assert threads[0].startswith("crawl-parse") and threads[1] == threading.current_thread().name
    assert len(threads) == 2


@pytest.mark.parametrize("threads", [0, -1, True, 1.5])
def test_parser_refuses_bad_thread_counts(threads: object) -> None:
    with pytest.raises(ValueError, match="threads"):
        Parser(threads=threads)  # type: ignore[arg-type]


def test_switch_interval_is_lowered_then_restored() -> None:
    before = sys.getswitchinterval()
    with switch_interval(0.0001):
        assert sys.getswitchinterval() == pytest.approx(0.0001)
    assert sys.getswitchinterval() == before


def test_switch_interval_is_never_raised() -> None:
    before = sys.getswitchinterval()
    with switch_interval(before * 10):
        assert sys.getswitchinterval() == before
    assert sys.getswitchinterval() == before


def test_switch_interval_set_by_someone_else_meanwhile_is_kept() -> None:
    before = sys.getswitchinterval()
    try:
        with switch_interval(0.0001):
            sys.setswitchinterval(0.002)
        assert sys.getswitchinterval() == pytest.approx(0.002)
    finally:
        sys.setswitchinterval(before)


def big_page(i: int) -> bytes:
    return BIG.replace(b"<title>Big</title>", b"<title>page %d</title>" % i)


async def test_many_parses_at_once_each_get_their_own_tree() -> None:
    parser = Parser(threads=2)
    try:
        got = await asyncio.gather(
            *(parser.parse(big_page(i), URL, "text/html") for i in range(40))
        )
    finally:
        await parser.close()
    assert [m.title for m in got] == [f"page {i}" for i in range(40)]


async def test_a_cancelled_parse_is_dropped_and_the_rest_complete() -> None:
    parser = Parser(threads=1)
    try:
        tasks = [asyncio.create_task(parser.parse(big_page(i), URL, "text/html")) for i in range(6)]
        await asyncio.sleep(0)  # all six queued
        tasks[3].cancel()
        done = await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        await parser.close()
    assert isinstance(done[3], asyncio.CancelledError)
    assert [m.title for i, m in enumerate(done) if i != 3] == [  # type: ignore[union-attr]
        f"page {i}" for i in (0, 1, 2, 4, 5)
    ]


async def test_an_error_in_the_parse_thread_reaches_the_caller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(data: bytes) -> object:
        raise RuntimeError("lexbor exploded")

    monkeypatch.setattr(markup, "LexborHTMLParser", broken)
    parser = Parser(threads=1)
    try:
        with pytest.raises(RuntimeError, match="lexbor exploded"):
            await parser.parse(BIG, URL, "text/html")
        # the thread survived it
        monkeypatch.undo()
        assert (await parser.parse(BIG, URL, "text/html")).title == "Big"
    finally:
        await parser.close()


async def test_close_stops_the_threads_and_refuses_new_work() -> None:
    parser = Parser(threads=2)
    await parser.parse(BIG, URL, "text/html")
    assert sum(t.name.startswith("crawl-parse") for t in threading.enumerate()) >= 2
    await parser.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("crawl-parse")]
    with pytest.raises(RuntimeError, match="closed"):
        await parser.parse(BIG, URL, "text/html")
    assert (await parser.parse(b"<title>small</title>", URL, "text/html")).title == "small"


Stuck = tuple[threading.Semaphore, threading.Event]


@pytest.fixture
def stuck_lexbor(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stuck]:
    """lexbor, except that a page titled "stuck..." blocks it (as markup built to be quadratic
    would) until the test sets the event; the semaphore counts the blocked parses."""
    entered, release = threading.Semaphore(0), threading.Event()
    real = markup.LexborHTMLParser

    def lexbor(data: bytes) -> object:
        if b"<title>stuck" in data:
            entered.release()
            release.wait(10)
        return real(data)

    monkeypatch.setattr(markup, "LexborHTMLParser", lexbor)
    yield entered, release
    release.set()


async def test_a_stuck_parse_gets_a_spare_thread_and_the_others_keep_flowing(
    stuck_lexbor: Stuck, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    entered, release = stuck_lexbor
    monkeypatch.setattr(parsing, "STUCK_SECONDS", -1.0)  # busy at all counts as stuck
    monkeypatch.setattr(parsing, "SPARE_THREADS", 1)

    def stuck_page(i: int) -> bytes:
        return BIG.replace(b"<title>Big</title>", b"<title>stuck %d</title>" % i)

    def alive() -> int:
        return sum(worker.is_alive() for worker in parser._workers)

    parser = Parser(threads=1)
    try:
        with caplog.at_level("WARNING", logger="crawler.parse.thread"):
            first = asyncio.ensure_future(parser.parse(stuck_page(1), URL, "text/html"))
            assert await asyncio.to_thread(entered.acquire, True, 10)
            # the only thread is stuck: spares parse the next pages
            others = [await parser.parse(big_page(i), URL, "text/html") for i in range(3)]
            assert [m.title for m in others] == ["page 0", "page 1", "page 2"]
            assert not first.done()
            # a spare gets stuck too: no third thread (SPARE_THREADS = 1), the next page waits
            second = asyncio.ensure_future(parser.parse(stuck_page(2), URL, "text/html"))
            assert await asyncio.to_thread(entered.acquire, True, 10)
            waiting = asyncio.ensure_future(parser.parse(big_page(3), URL, "text/html"))
            for _ in range(5):
                await asyncio.sleep(0)
            assert alive() == 2 and not waiting.done()
        assert "stuck on a slow page" in caplog.text
        release.set()
        titles = [(await f).title for f in (first, second, waiting)]
        assert titles == ["stuck 1", "stuck 2", "page 3"]
        # with nothing queued the spare retires: more threads than cores contend for the GIL
        await asyncio.to_thread(
            lambda: [w.join(5) for w in parser._workers if w.name != "crawl-parse-0"]
        )
        assert alive() == 1
    finally:
        release.set()
        await parser.close()


async def test_close_leaves_a_stuck_parse_behind_after_a_while(
    stuck_lexbor: Stuck, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    entered, release = stuck_lexbor
    monkeypatch.setattr(parsing, "CLOSE_WAIT_SECONDS", 0.05)
    monkeypatch.setattr(parsing, "SPARE_THREADS", 0)
    parser = Parser(threads=1)
    stuck_page = BIG.replace(b"<title>Big</title>", b"<title>stuck</title>")
    stuck = asyncio.ensure_future(parser.parse(stuck_page, URL, "text/html"))
    queued = asyncio.ensure_future(parser.parse(big_page(1), URL, "text/html"))
    try:
        assert await asyncio.to_thread(entered.acquire, True, 10)
        stuck.cancel()  # an aborted crawl: its workers are cancelled, then the parser closed
        with caplog.at_level("WARNING", logger="crawler.parse.thread"):
            await asyncio.wait_for(parser.close(), 5)  # does not wait for the stuck page
        assert "still on a slow page" in caplog.text and "1 queued parses cancelled" in caplog.text
        assert queued.cancelled()
    finally:
        release.set()
    with pytest.raises(asyncio.CancelledError):
        await stuck


async def test_a_host_whose_page_parsed_slowly_gets_its_pages_screened(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(markup, "SLOW_PARSE_SECONDS", -1.0)  # every parse counts as slow
    flood = b"<div " + b" ".join(b"a%d" % i for i in range(defuse.MAX_ATTRIBUTES)) + b">"
    links = b"".join(b"<p><a href='/p%d'>p</a></p>" % i for i in range(3000))  # 12,000 tags
    page = b"<html><body>" + flood + links
    parser = Parser(threads=1)
    try:
        with caplog.at_level("WARNING"):
            first = await parser.parse(page, "http://bad.test/1", "text/html")
            assert "escaped 1 tags" not in caplog.text
            second = await parser.parse(page, "http://bad.test/2", "text/html")
            other = await parser.parse(page, "http://good.test/1", "text/html")
    finally:
        await parser.close()
    assert "bad.test served markup built to be slow: its pages are now screened" in caplog.text
    # a host's first page is parsed as it is; the pages after a slow one are screened: the
    # flood tag is dropped and STRICT_MAX_TAGS tags are kept
    assert len(first.hrefs) == 3000
    assert "escaped 1 tags with 64 attributes or more" in caplog.text
    # 10,000 "<" kept: <html>, <body>, 2,499 links of 4 tags each and <p><a of the 2,500th
    assert defuse.STRICT_MAX_TAGS == 10_000 and len(second.hrefs) == 2500
    assert other == first  # another host's pages are not screened for bad.test's markup
