"""The crawl's browser: `Renderer`, one Chromium and a few tabs, started when first needed.

    renderer = Renderer(fetcher.fetch, user_agent=ua)   # RenderUnavailable: nothing to run
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
from crawler.render.page import (
    DEFAULT_SKIP_TYPES,
    PageOptions,
    Rendered,
    Tab,
    open_context,
    render_page,
)

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Playwright

__all__ = ["MEMORY_CHECK_SECONDS", "Renderer"]

log = logging.getLogger(__name__)

MEMORY_CHECK_SECONDS = 1.0
"""How often the browsers' memory is read (a /proc walk, in a thread), whatever their pages do."""


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
        fetch: Callable[[str], Awaitable[Response]],
        *,
        user_agent: str,
        browser: str = "",
        tabs: int = 4,
        settle: float = 0.5,
        timeout: float = 20.0,
        skip_types: tuple[str, ...] = DEFAULT_SKIP_TYPES,
        memory_cap: int = 1536 * 1024 * 1024,
        max_html: int = 10 * 1024 * 1024,
        per_host: Callable[[str], int] = lambda host: 1,
        max_redirects: int = 5,
        cache_bytes: int = 32 * 1024 * 1024,
        recorder: Callable[[Response], None] | None = None,
        clock: Callable[[], float] | None = None,
        credentialed: Callable[[str], bool] = lambda url: False,
        memory_interval: float | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """`fetch`: the crawler's fetcher's GET; `browser`: Chromium's path ("" = the standard
        one); `memory_cap`: bytes of PSS past which the browser is replaced (0 = never), read
        every `memory_interval` seconds (MEMORY_CHECK_SECONDS) by `sleep`'s clock; `clock`:
        the settle's (the loop's by default); `credentialed(url)`: whether `fetch` sends a
        ``[[hosts]]`` rule's credentials there (`crawler.render.network.credentials_of`).
        `RenderUnavailable` if playwright or Chromium is missing. The other arguments: see
        `PageOptions` and `Subresources`."""
        self.path = find_browser(browser)
        self.options = PageOptions(user_agent=user_agent, settle=settle, timeout=timeout,
                                   skip_types=frozenset(skip_types), max_html=max_html)  # fmt: skip
        self.network = Subresources(fetch, per_host=per_host, cache_bytes=cache_bytes,
                                    max_redirects=max_redirects, recorder=recorder,
                                    credentialed=credentialed)  # fmt: skip
        self.memory_cap = memory_cap
        self._clock = clock
        self._tabs = asyncio.Semaphore(tabs)
        self._lock = asyncio.Lock()
        self._playwright: Playwright | None = None
        self._current: _Generation | None = None
        self._old: set[_Generation] = set()
        self.memory_interval = MEMORY_CHECK_SECONDS if memory_interval is None else memory_interval
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
