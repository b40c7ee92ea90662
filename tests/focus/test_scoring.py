"""Focused crawling's plumbing: the score hook, page relevance, the fetch budget, the harvest rate.

A small site on loopback: the home page links to ten topic pages and ten others; each page links
back home. The topic scorer here is a stand-in (crawler.focus.relevance's is tested on its own).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from aiohttp import web

from crawler.cli.args import apply_overrides, build_parser
from crawler.cli.progress import progress_line, summary_table
from crawler.config.load import Config, load_config
from crawler.engine import focus as focus_module
from crawler.engine.components import settings
from crawler.engine.crawler import Crawler
from crawler.errors import ConfigError, ScoreError
from crawler.focus.scoring import Link, PageText, ScoreFn
from crawler.frontier import Frontier
from crawler.output.results import CrawlResult
from crawler.state.crawlstate import CrawlState
from tests.support.server import serve

TOPIC = [f"/standby-{i}" for i in range(10)]
OTHER = [f"/misc-{i}" for i in range(10)]


def _html(path: str) -> str:
    if path == "/":
        links = "".join(
            f"<li>About {'replication' if p in TOPIC else 'cooking'}: "
            f'<a href="{p}" rel="section">{p[1:].replace("-", " ")}</a></li>'
            for p in TOPIC + OTHER
        )
        return f"<title>Home</title><h1>Index</h1><ul>{links}</ul>"
    words = "streaming replication standby" if path in TOPIC else "pasta recipes"
    return f"<title>{path}</title><h2>{path}</h2><p>{words}</p><p><a href=/>home</a></p>"


async def _handler(request: web.Request) -> web.Response:
    if request.path == "/robots.txt":
        return web.Response(status=404)
    if request.path not in {"/", *TOPIC, *OTHER}:
        return web.Response(status=404)
    return web.Response(text=_html(request.path), content_type="text/html")


@pytest.fixture
async def origin() -> AsyncIterator[str]:
    async with serve(_handler) as port:
        yield f"http://127.0.0.1:{port}"


def _config(**crawl: object) -> Config:
    config = Config().override("politeness", delay=0.0, ip_delay=0.0)
    return config.override("crawl", **{"concurrency": 4, **crawl})


async def _crawl(
    config: Config, origin: str, score: ScoreFn | None = None, state: CrawlState | None = None
) -> tuple[Crawler, list[CrawlResult]]:
    async with Crawler(config, score=score, state=state) as crawler:
        results = [r async for r in crawler.crawl([origin + "/"])]
    return crawler, results


class StandInScorer:
    """Relevance 1.0 for a page whose text names a keyword, else 0.0; links likewise."""

    threshold = 0.5

    def __init__(self, keywords: Sequence[str]) -> None:
        self.keywords = tuple(keywords)
        self.texts: list[PageText] = []

    def page(self, text: PageText) -> float:
        self.texts.append(text)
        return 1.0 if any(k in text.body for k in self.keywords) else 0.0

    def link(self, link: Link) -> float:
        return 1.0 if any(k in link.context for k in self.keywords) else 0.25


@pytest.fixture
def scorers(monkeypatch: pytest.MonkeyPatch) -> list[StandInScorer]:
    """Makes `[focus] keywords` build a StandInScorer (the scorers built are listed)."""
    built: list[StandInScorer] = []

    def make(config: Config) -> StandInScorer | None:
        if not config.focus.keywords:
            return None
        built.append(StandInScorer(config.focus.keywords))
        return built[-1]

    monkeypatch.setattr(focus_module, "make_scorer", make)
    return built


async def test_score_fn_sees_link_fields(origin: str) -> None:
    seen: list[Link] = []

    def score(link: Link) -> float:
        seen.append(link)
        return 1.0

    _, results = await _crawl(_config(), origin, score)
    assert len(results) == 21  # every page once
    first = {link.url: link for link in seen if link.parent_url == origin + "/"}
    standby = first[origin + "/standby-3"]
    assert standby.key == origin + "/standby-3"
    assert (standby.anchor, standby.rel) == ("standby 3", "section")
    assert standby.context == "About replication: standby 3"
    assert (standby.depth, standby.parent_title, standby.parent_relevance) == (1, "Home", None)
    assert all(r.relevance is None for r in results)  # a score fn alone rates no page
    assert len(seen) == 20  # the link home is not new: scored once per new key only


async def test_priorities_reach_the_frontier_and_the_budget_leaves_the_rest_queued(
    origin: str,
) -> None:
    def score(link: Link) -> float:
        return 2.0 if "replication" in link.context else 0.5

    crawler, results = await _crawl(_config(max_pages=1), origin, score)
    assert [r.url for r in results] == [origin + "/"]  # a fetch budget of one page
    assert crawler.stats.admitted == 21  # admitted freely: the budget counts fetches
    assert isinstance(crawler.frontier, Frontier)
    queued = {entry.key: entry.priority for entry in crawler.frontier.pending()}
    assert queued == {origin + p: 2.0 for p in TOPIC} | {origin + p: 0.5 for p in OTHER}
    assert not crawler.complete  # stopped by the budget with URLs left


async def test_budget_counts_page_results_whatever_the_concurrency(origin: str) -> None:
    crawler, results = await _crawl(_config(max_pages=5, concurrency=8), origin, lambda link: 1.0)
    assert len(results) == 5 and crawler.stats.pages == 5
    assert crawler.stats.admitted == 21


async def test_without_scoring_max_pages_still_caps_admissions(origin: str) -> None:
    crawler, results = await _crawl(_config(max_pages=5), origin)
    assert crawler.stats.admitted == 5 and len(results) == 5
    assert crawler.stats.over_limit > 0
    assert isinstance(crawler.frontier, Frontier) and not list(crawler.frontier.pending())


async def test_skipped_links_are_counted_and_not_fetched(origin: str) -> None:
    def score(link: Link) -> float | None:
        return None if link.url.endswith(("-0", "-1")) else 1.0

    crawler, results = await _crawl(_config(), origin, score)
    fetched = {r.url for r in results}
    assert len(fetched) == 17
    assert not {origin + p for p in ("/standby-0", "/standby-1", "/misc-0", "/misc-1")} & fetched
    assert crawler.stats.scope_refused["score"] == 4
    assert crawler.stats_dict()["scope_refused"]["score"] == 4


async def test_an_async_score_fn_works(origin: str) -> None:
    async def score(link: Link) -> float | None:
        return None if "cooking" in link.context else 1.0

    crawler, results = await _crawl(_config(), origin, score)
    assert sorted(r.url for r in results) == sorted(origin + p for p in ["/", *TOPIC])
    assert crawler.stats.scope_refused["score"] == 10


@pytest.mark.parametrize("is_async", [False, True])
async def test_a_raising_score_fn_ends_the_crawl_with_a_clear_error(
    origin: str, is_async: bool
) -> None:
    def check(link: Link) -> float:
        if link.url.endswith("/misc-4"):
            raise KeyError("no such word")
        return 1.0

    async def async_check(link: Link) -> float:
        return check(link)

    with pytest.raises(ScoreError) as caught:
        await _crawl(_config(), origin, async_check if is_async else check)
    message = str(caught.value)
    assert "KeyError" in message and "no such word" in message
    assert f"{origin}/misc-4" in message and f"found on {origin}/" in message
    assert isinstance(caught.value.__cause__, KeyError)


@pytest.mark.parametrize("bad", ["high", float("nan"), True])
async def test_a_score_that_is_not_a_number_is_an_error(origin: str, bad: object) -> None:
    with pytest.raises(ScoreError, match="expected a finite number"):
        await _crawl(_config(), origin, lambda link: bad)  # type: ignore[arg-type,return-value]


async def test_relevance_is_null_without_focus(origin: str) -> None:
    crawler, results = await _crawl(_config(), origin)
    assert all(json.loads(r.to_json())["relevance"] is None for r in results)
    stats = crawler.stats_dict()
    assert (stats["scored"], stats["harvest_rate"]) == (0, None)
    assert not [c for c in summary_table(stats).columns[0].cells if "harvest" in str(c)]
    assert "harvest" not in progress_line(crawler)


async def test_focus_rates_pages_and_reports_the_harvest_rate(
    origin: str, scorers: list[StandInScorer]
) -> None:
    config = _config().override("focus", keywords=("replication",))
    crawler, results = await _crawl(config, origin)
    (scorer,) = scorers
    relevance = {r.url: r.relevance for r in results}
    # home names the topic ("About replication: ..."), like the ten topic pages
    assert relevance == {origin + "/": 1.0} | {origin + p: 1.0 for p in TOPIC} | {
        origin + p: 0.0 for p in OTHER
    }
    home = next(t for t in scorer.texts if t.url == origin + "/")
    assert (home.title, home.headings) == ("Home", "Index")
    stats = crawler.stats_dict()
    assert (stats["scored"], stats["relevant"], stats["harvest_rate"]) == (
        21,
        11,
        round(11 / 21, 4),
    )
    # with the threshold it counts by (a focused crawl's [focus] threshold)
    assert "harvest rate (relevance >= 0.5)" in {
        str(c) for c in summary_table(stats).columns[0].cells
    }
    assert "harvest 52%" in progress_line(crawler)  # 11 of 21
    assert json.loads(results[0].to_json())["relevance"] == 1.0


async def test_links_see_their_parent_pages_relevance(
    origin: str, scorers: list[StandInScorer]
) -> None:
    seen: list[Link] = []

    def score(link: Link) -> float:
        seen.append(link)
        return 1.0

    config = _config().override("focus", keywords=("pasta",))
    await _crawl(config, origin, score)  # the user's fn ranks links; the scorer rates pages
    assert seen and {link.parent_relevance for link in seen} == {0.0}  # all found on home


async def test_a_resumed_focused_crawl_goes_on_with_a_larger_budget(
    origin: str, scorers: list[StandInScorer], tmp_path: Path
) -> None:
    config = _config(max_pages=3).override("focus", keywords=("replication",))
    state = CrawlState.open(tmp_path / "s", settings(config))
    _, first = await _crawl(config, origin, state=state)
    assert len(first) == 3
    bigger = config.override("crawl", max_pages=8)
    state = CrawlState.open(tmp_path / "s", settings(bigger))  # the budget may change
    assert state.resumed
    _, second = await _crawl(bigger, origin, state=state)
    assert len(second) == 5  # the budget counts every run's pages: 3 + 5
    state = CrawlState.open(tmp_path / "s", settings(bigger))
    _, third = await _crawl(bigger, origin, state=state)
    assert third == []  # spent already
    unlimited = config.override("crawl", max_pages=0)
    state = CrawlState.open(tmp_path / "s", settings(unlimited))
    _, last = await _crawl(unlimited, origin, state=state)
    keys = [r.key for r in first + second + last]
    assert len(keys) == len(set(keys)) == 21  # each page once over the four runs


async def test_a_resumed_crawl_with_only_a_score_function_may_change_its_budget(
    origin: str, tmp_path: Path
) -> None:
    def score(link: Link) -> float:
        return 1.0 if "standby" in link.url else 0.0

    config = _config(max_pages=3)  # no [focus] keywords: only the score function focuses it
    assert "crawl.max_pages" in settings(config)  # the config alone looks unfocused
    assert "crawl.max_pages" not in settings(config, scored=True)
    state = CrawlState.open(tmp_path / "s", settings(config, scored=True))
    _, first = await _crawl(config, origin, score, state=state)
    assert len(first) == 3
    bigger = config.override("crawl", max_pages=8)
    state = CrawlState.open(tmp_path / "s", settings(bigger, scored=True))  # no StateError
    assert state.resumed
    _, second = await _crawl(bigger, origin, score, state=state)
    assert len(second) == 5  # the budget counts both runs' pages
    keys = [r.key for r in first + second]
    assert len(keys) == len(set(keys))
    assert sum("standby" in k for k in keys) == 7  # best first: the topic pages after the home


def test_focus_flag_and_config_section(tmp_path: Path) -> None:
    args = build_parser().parse_args(["--focus", " replication  standby ", "http://t/"])
    config = apply_overrides(Config(), args)
    assert config.focus.keywords == ("replication", "standby")
    assert apply_overrides(Config(), build_parser().parse_args(["http://t/"])).focus.keywords == ()
    path = tmp_path / "c.toml"
    path.write_text('[focus]\nkeywords = ["wal", "standby"]\n')
    assert load_config(path).focus.keywords == ("wal", "standby")
    path.write_text('[focus]\nkeywords = ["wal", " "]\n')
    with pytest.raises(ConfigError, match="keywords"):
        load_config(path)
    assert "crawl.max_pages" in settings(Config())
    assert "crawl.max_pages" not in settings(config)  # a fetch budget: free to change


def test_focus_threshold_default_is_the_scorers() -> None:
    from crawler.engine.components import make_scorer
    from crawler.focus.relevance import DEFAULT_THRESHOLD

    assert Config().focus.threshold == DEFAULT_THRESHOLD
    config = Config().override("focus", keywords=("wal",), threshold=0.25)
    scorer = make_scorer(config)
    assert scorer is not None and scorer.threshold == 0.25
    assert make_scorer(Config()) is None
    with pytest.raises(ConfigError, match=r"\[focus\]"):
        make_scorer(Config().override("focus", keywords=("!!",)))
    with pytest.raises(ConfigError, match="threshold"):
        Config().override("focus", threshold=1.5)


@pytest.mark.slow
def test_crawl_focus_end_to_end(tmp_path: Path) -> None:
    # The built-in topic scorer through the command line, on the bundled fixture site.
    stats = tmp_path / "stats.json"
    proc = subprocess.run(
        [sys.executable, "-m", "crawler.cli", "--demo", "--focus", "calendar", "--stats",
         str(stats)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    html = [r for r in records if (r["content_type"] or "").startswith("text/html")]
    assert html and all(isinstance(r["relevance"], float) for r in html if r["status"] == 200)
    rated = [r for r in records if r["relevance"] is not None]
    assert all(r["status"] < 400 for r in rated)  # error pages are not rated
    assert any(r["relevance"] >= 0.5 for r in rated) and any(r["relevance"] < 0.5 for r in rated)
    data = json.loads(stats.read_text())
    assert data["scored"] == len(rated)
    assert data["relevant"] == sum(r["relevance"] >= 0.5 for r in rated)
    assert "harvest rate" in proc.stderr and "equals the fixture's ground truth" in proc.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "crawler.cli", "--demo", "--focus", "!!"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 2 and "[focus]" in bad.stderr


async def test_after_a_score_error_a_resume_scores_the_page_again(
    origin: str, tmp_path: Path
) -> None:
    def broken(link: Link) -> float:
        raise RuntimeError("model not loaded")

    config = _config()
    state = CrawlState.open(tmp_path / "s", settings(config))
    with pytest.raises(ScoreError, match="model not loaded"):
        await _crawl(config, origin, broken, state=state)
    state = CrawlState.open(tmp_path / "s", settings(config))
    scored: list[str] = []

    async def fixed(link: Link) -> float:
        scored.append(link.url)
        return 1.0

    _, results = await _crawl(config, origin, fixed, state=state)
    # the home page's links were left unseen: fetched again, its links are all scored and fetched
    assert sorted(scored) == sorted(origin + p for p in TOPIC + OTHER)
    assert {r.url for r in results} == {origin + "/"} | {origin + p for p in TOPIC + OTHER}


async def test_a_failing_page_scorer_ends_the_crawl_with_a_clear_error(
    origin: str, scorers: list[StandInScorer], monkeypatch: pytest.MonkeyPatch
) -> None:
    def page(self: StandInScorer, text: PageText) -> float:
        raise ZeroDivisionError("no pages yet")

    monkeypatch.setattr(StandInScorer, "page", page)
    config = _config().override("focus", keywords=("replication",))
    with pytest.raises(ScoreError, match=f"ZeroDivisionError: no pages yet on page {origin}/"):
        await _crawl(config, origin)


async def test_an_async_score_fn_runs_one_pages_links_together(origin: str) -> None:
    # Each call waits until all twenty links of the home page are being scored: sequential
    # awaits would never get there (the bound below is only a guard against hanging).
    waiting = 0
    everyone = asyncio.Event()

    async def score(link: Link) -> float:
        nonlocal waiting
        waiting += 1
        if waiting == 20:
            everyone.set()
        await everyone.wait()
        return 1.0

    _, results = await asyncio.wait_for(_crawl(_config(), origin, score), timeout=60)
    assert len(results) == 21
