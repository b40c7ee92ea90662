"""The crawl's browser: `Renderer`, one Chromium and a few tabs, started when first needed.

    renderer = Renderer(Subresources(fetcher.fetch), PageOptions(user_agent=ua))
    rendered = await renderer.render(url, response)     # the response the crawl fetched
    await renderer.close()

At most ``tabs`` pages render at once, each in a tab kept for page after page
(`crawler.render.page.Tab`; a tab whose page failed is closed); a worker past them waits for a
tab, and its page's timeout counts from when it has one. The browser is launched on the first
page (`crawler.render.browser`), and replaced when it crashes or is killed (the page it was
rendering is tried once more on the new one), when it hangs (a page's tab that does not close),
or when its memory (PSS, every process of it, read every ``memory_interval`` seconds whatever its
pages do) grows past ``memory_cap``: then new pages go to a new browser and the old one is closed
once its pages are done, or killed when it is still past the cap at the next reading. A page
read is a page done: its tab is blanked (``about:blank``), its scripts stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from crawler.fetch.response import Response
from crawler.render.browser import (
    BrowserGone,
    BrowserProcess,
    PageTimeout,
    RenderError,
    find_browser,
    launch,
    translate,
)
from crawler.render.network import Subresources, answer_of
from crawler.render.page import PageOptions, Rendered, Tab, open_context, render_page
from crawler.render.settings import MEMORY_CHECK_SECONDS, BrowserSettings

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Playwright

__all__ = ["MEMORY_CHECK_SECONDS", "Renderer"]

log = logging.getLogger(__name__)


class _Generation:
    """One launched browser, its context, its idle tabs and the pages rendering in it."""

    __slots__ = ("browser", "context", "idle", "over", "process", "retiring", "users")

    def __init__(self, browser: Browser, context: BrowserContext, process: BrowserProcess) -> None:
        self.browser = browser
        self.context = context
        self.process = process
        self.idle: list[Tab] = []
        self.users = 0
        self.retiring = False
        self.over = 0  # memory readings in a row past the cap

    async def tab(self) -> Tab:
        return self.idle.pop() if self.idle else await Tab.open(self.context)


class Renderer:
    """A pool of tabs in one Chromium, its pages' requests answered by the crawler's fetcher."""

    __slots__ = ("_clock", "_current", "_lock", "_old", "_playwright", "_sleep", "_tabs",
                 "_watcher", "failures", "launches", "memory_cap", "memory_interval", "network",
                 "options", "pages", "path", "peak_memory", "timeouts")  # fmt: skip

    def __init__(
        self,
        network: Subresources,
        options: PageOptions,
        browser: BrowserSettings = BrowserSettings(),
        *,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """`network`: the pages' requests, answered by the crawler's fetcher; `options`: how
        each page is rendered; `browser`: which Chromium, how many tabs, its memory cap (read
        by `sleep`'s clock); `clock`: the settle's (the loop's by default). `RenderUnavailable`
        if playwright or Chromium is missing."""
        self.path = find_browser(browser.path)
        self.options = options
        self.network = network
        self.memory_cap = browser.memory_cap
        self._clock = clock
        self._tabs = asyncio.Semaphore(browser.tabs)
        self._lock = asyncio.Lock()
        self._playwright: Playwright | None = None
        self._current: _Generation | None = None
        self._old: set[_Generation] = set()
        self.memory_interval = browser.memory_interval
        self._sleep = sleep
        self._watcher: asyncio.Task[None] | None = None
        self.pages = self.failures = self.timeouts = self.launches = 0
        self.peak_memory = 0

    @property
    def process(self) -> BrowserProcess | None:
        """The running browser's processes (None before the first page)."""
        return None if self._current is None else self._current.process

    async def render(self, url: str, response: Response) -> Rendered:
        """Render `url` from its fetched `response`; a `RenderError` when it cannot be."""
        document = answer_of(response)
        async with self._tabs:
            for attempt in range(2):
                generation = await self._browser()
                generation.users += 1
                tab: Tab | None = None
                try:
                    tab = await generation.tab()
                    rendered = await render_page(
                        tab, url, document, self.network, self.options, self._clock
                    )
                    done, tab = tab, None
                    await self._release(generation, done)
                except BrowserGone as exc:
                    log.warning("render: the browser is gone (%s): starting another", exc)
                    await self._drop(generation)
                    if attempt:
                        self.failures += 1
                        raise
                    continue
                except RenderError as exc:
                    self.failures += 1
                    self.timeouts += isinstance(exc, PageTimeout)
                    try:
                        if tab is not None:
                            await tab.close()
                    except BrowserGone as hung:
                        log.warning("render: %s: starting another browser", hung)
                        await self._drop(generation)
                    raise
                finally:
                    generation.users -= 1
                    if generation.retiring and not generation.users:
                        await self._close(generation)
                self.pages += 1
                return rendered
        raise AssertionError("unreachable")  # pragma: no cover

    async def _browser(self) -> _Generation:
        """The running browser, launched first when there is none (or it disconnected)."""
        async with self._lock:
            current = self._current
            if current is not None and current.browser.is_connected():
                return current
            if current is not None:
                await self._drop(current)
            if self._playwright is None:
                from playwright.async_api import async_playwright

                with translate("starting playwright"):
                    self._playwright = await async_playwright().start()
            process = BrowserProcess()
            try:
                browser = await launch(self._playwright, self.path, process)
                try:
                    context = await open_context(browser, self.options)
                except BaseException:
                    process.kill()
                    raise
            except BaseException:
                process.close()
                raise
            self.launches += 1
            self._start_watching()
            log.info("render: Chromium %s started (%s)", browser.version, self.path)
            self._current = _Generation(browser, context, process)
            return self._current

    async def _release(self, generation: _Generation, tab: Tab) -> None:
        """A page read is a page done: its scripts stopped (the tab blanked) and the tab kept
        for the next page; a tab that does not blank is closed (a hung one: the browser too)."""
        if await tab.blank():
            generation.idle.append(tab)
            return
        try:
            await tab.close()
        except BrowserGone as hung:
            log.warning("render: %s: starting another browser", hung)
            await self._drop(generation)

    def _start_watching(self) -> None:
        if self.memory_cap and self._watcher is None:
            self._watcher = asyncio.create_task(self._watch(), name="render-memory")

    async def _watch(self) -> None:
        """Read the browsers' memory every `memory_interval` seconds: a browser past the cap
        is retired (new pages go to a new one, it closes once its pages are done); one still
        past it at the next reading, its pages still running, is killed (they are tried once
        more on the new browser)."""
        while True:
            await self._sleep(self.memory_interval)
            try:
                await self._check_memory()
            except Exception:  # a bug: logged, and the watch goes on
                log.exception("render: reading the browser's memory failed")

    async def _check_memory(self) -> None:
        for generation in [*self._old, *([self._current] if self._current else [])]:
            used = await asyncio.to_thread(generation.process.memory)
            self.peak_memory = max(self.peak_memory, used)
            generation.over = generation.over + 1 if used > self.memory_cap else 0
            if not generation.over or generation.process.pid is None:
                continue
            if not generation.retiring:
                log.warning("render: the browser uses %d MiB (cap %d MiB): starting another",
                            used >> 20, self.memory_cap >> 20)  # fmt: skip
                self._retire(generation)
            elif generation.over > 1:
                log.warning("render: the browser still uses %d MiB: killed", used >> 20)
                generation.process.kill()
            if not generation.users:
                await self._close(generation)

    def _retire(self, generation: _Generation) -> None:
        generation.retiring = True
        if self._current is generation:
            self._current = None
        self._old.add(generation)

    async def _drop(self, generation: _Generation) -> None:
        """A crashed or hung browser: killed, and closed once its last page let go."""
        if generation.retiring:
            return
        self._retire(generation)
        generation.process.kill()
        if not generation.users:
            await self._close(generation)

    async def _close(self, generation: _Generation) -> None:
        self._old.discard(generation)
        try:
            async with asyncio.timeout(10):
                with contextlib.suppress(RenderError), translate("closing Chromium"):
                    await generation.browser.close()
        except TimeoutError:
            generation.process.kill()
        generation.process.close()

    async def close(self) -> None:
        """Close the browser (every one still open) and Playwright."""
        if self._watcher is not None:
            watcher, self._watcher = self._watcher, None
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        for generation in [*self._old, *([self._current] if self._current else [])]:
            generation.retiring = True
            await self._close(generation)
        self._current = None
        if self._playwright is not None:
            playwright, self._playwright = self._playwright, None
            with contextlib.suppress(RenderError), translate("stopping playwright"):
                await playwright.stop()

    def stats(self) -> dict[str, int]:
        """The renders' figures (for the crawl's stats)."""
        return {"rendered": self.pages, "render_failures": self.failures,
                "render_timeouts": self.timeouts, "browser_launches": self.launches,
                "browser_peak_pss": self.peak_memory,
                "subresources_fetched": self.network.fetched,
                "subresources_cached": self.network.cached,
                "subresources_refused": self.network.refused}  # fmt: skip

    def __repr__(self) -> str:
        return (f"<Renderer {self.path} pages={self.pages} failures={self.failures} "
                f"launches={self.launches}>")  # fmt: skip
