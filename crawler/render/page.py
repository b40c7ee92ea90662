"""Rendering one page in a tab of the crawl's browser: `render_page`, `Tab`, `open_context`.

The browser has one context for the crawl (`open_context`: service workers blocked, downloads
refused, every request no tab answers refused) and a few tabs (`Tab`), each used for page after
page. The page's own document is the response the crawl already fetched (served from it, never
fetched again). Every other request goes through `PageRoutes.handle`: only GET, not of a type
skipped (images, fonts, media by default) nor of one never sent (event streams, pings, CSP
reports, manifests), at most ``MAX_REQUESTS`` a page, answered by
`crawler.render.network.Subresources` (the crawler's fetcher) or refused. A script navigating
the page elsewhere (``location = ...``, a form, a meta refresh, a redirect storm) is refused and
its target kept as a link of the page: the crawl follows it like any other, through scope,
robots.txt and politeness. WebSockets are refused (``route_web_socket``), WebRTC's constructors
taken away before any script runs (`NO_WEBRTC`), popups closed (their
requests refused), and ``alert``/``confirm``/``prompt`` dismissed (Playwright's default without
a dialog handler). The pages of a crawl share the context's cookies and storage, as the tabs of
one browser do (they never leave the browser: its requests carry the fetcher's cookies, not its
own).

Done: the load event, then the network quiet for ``settle`` seconds (`crawler.render.settle`);
then the DOM is read (`READ_DOM`: the serialized document, and the links of open shadow roots,
which the serialization leaves out), and the tab blanked (`Tab.blank`): its scripts stop.
All of it is bounded by ``timeout``: a page that takes
longer raises `PageTimeout`; its tab is closed, and a tab that does not close `BrowserGone` (a
hung browser, which the pool replaces).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urldefrag

from crawler.render.browser import BrowserGone, PageTimeout, RenderError, quietly, translate
from crawler.render.network import Answer, Subresources
from crawler.render.origin import foreign, origin_of, refusal
from crawler.render.settle import Traffic, settled

if TYPE_CHECKING:
    from playwright.async_api import (
        Browser,
        BrowserContext,
        Frame,
        Page,
        Request,
        Route,
        WebSocketRoute,
    )

__all__ = [
    "CLOSE_TIMEOUT",
    "DEFAULT_SKIP_TYPES",
    "MAX_REQUESTS",
    "NEVER_SENT",
    "NO_WEBRTC",
    "PageOptions",
    "Rendered",
    "Tab",
    "open_context",
    "render_page",
]

log = logging.getLogger(__name__)

DEFAULT_SKIP_TYPES = ("image", "font", "media")
NEVER_SENT = frozenset({"eventsource", "websocket", "ping", "cspreport", "csp_report", "manifest",
                        "prefetch", "signedexchange"})  # fmt: skip
MAX_REQUESTS = 500
"""Requests one page may make; the rest are refused (a script requesting in a loop)."""
STAY = Answer(204, {}, b"")
"""A navigation of the page elsewhere, refused so that the page stays as it is (aborted: any
other refusal would put Chromium's error page in its place)."""
NO_WEBRTC = """(() => {
  for (const name of Object.getOwnPropertyNames(globalThis)) {
    if (/^(webkit)?RTC/.test(name)) { try { delete globalThis[name]; } catch (e) {} }
  }
})();"""
"""Run before every document's scripts: WebRTC's constructors gone (``RTCPeerConnection``,
``webkitRTCPeerConnection``, ``RTCDataChannel``...). Defence in depth: the browser is launched
so that WebRTC sends no UDP at all (`crawler.render.browser.WEBRTC_POLICY`)."""
CLOSE_TIMEOUT = 5.0
"""Seconds a page's context has to close; longer, and the browser is taken for hung."""

# The DOM as the crawl reads it: the document serialized (at most `cap` characters) and the
# links inside open shadow roots (absolute, with their rel=nofollow), at most `most` of them.
READ_DOM = """([cap, most]) => {
  const shadow = [];
  const walk = (root, inside) => {
    for (const el of root.querySelectorAll('*')) {
      if (shadow.length >= most) return;
      if (inside && (el.localName === 'a' || el.localName === 'area') && el.hasAttribute('href')) {
        const rel = (el.getAttribute('rel') || '').toLowerCase().split(/\\s+/);
        shadow.push([String(el.href), rel.includes('nofollow')]);
      }
      if (el.shadowRoot) walk(el.shadowRoot, true);
    }
  };
  walk(document, false);
  const dt = document.doctype ? '<!DOCTYPE ' + document.doctype.name + '>\\n' : '';
  const root = document.documentElement;
  const html = dt + (root ? root.outerHTML : '');
  return {html: html.length > cap ? html.slice(0, cap) : html, cut: html.length > cap, shadow};
}"""


@dataclass(frozen=True, slots=True)
class PageOptions:
    """How pages are rendered (``[render]``): see docs/render.md."""

    user_agent: str
    settle: float = 0.5
    timeout: float = 20.0
    skip_types: frozenset[str] = frozenset(DEFAULT_SKIP_TYPES)
    max_html: int = 10 * 1024 * 1024
    max_links: int = 10_000


@dataclass(frozen=True, slots=True)
class Rendered:
    """What rendering a page gave: its DOM serialized (UTF-8), the links of its open shadow
    roots (absolute, nofollow), the navigations its scripts tried (refused: links), and what
    its requests were."""

    url: str
    html: bytes = field(repr=False)
    shadow_links: tuple[tuple[str, bool], ...] = ()
    navigations: tuple[str, ...] = ()
    truncated: bool = False
    requests: int = 0
    refused: int = 0


class PageRoutes:
    """One page's route handler: its document from the crawl's response, the rest through
    `Subresources`, or refused."""

    __slots__ = ("document", "main", "navigations", "network", "options", "served", "traffic",
                 "url")  # fmt: skip

    def __init__(self, url: str, document: Answer, network: Subresources, options: PageOptions,
                 traffic: Traffic) -> None:  # fmt: skip
        self.url = urldefrag(url)[0]
        self.document = document
        self.network = network
        self.options = options
        self.traffic = traffic
        self.served = False
        self.navigations: list[str] = []
        self.main: object = None  # the page's main frame (a popup's navigations are no links)

    async def handle(self, route: Route) -> None:
        self.traffic.started()
        try:
            try:
                answer = await self._answer(route.request)
            except Exception as exc:  # the fetcher's outage gate giving up, a bug: refused
                log.warning("render: %s: %s: refused", route.request.url, exc)
                answer = None
            with quietly():  # the page may be gone meanwhile
                if answer is STAY:  # ERR_ABORTED: no error page, the page stays as it is
                    await route.abort("aborted")
                elif answer is None:
                    self.traffic.refused += 1
                    await route.abort("blockedbyclient")
                else:
                    await route.fulfill(status=answer.status, headers=answer.headers,
                                        body=answer.body)  # fmt: skip
        finally:
            self.traffic.finished()

    async def _answer(self, request: Request) -> Answer | None:
        url = request.url
        if not url.startswith(("http://", "https://")):
            return None
        if request.is_navigation_request() and (frame := _main_frame(request)) is not None:
            if not self.served and urldefrag(url)[0] == self.url:
                self.served = True
                return self.document
            mine = frame is self.main or self.main is None
            if mine and len(self.navigations) < 100 and request.method == "GET":
                self.navigations.append(url)  # a script navigating away: a link, not a fetch
            self.traffic.refused += 1
            return STAY  # (refused, Chromium would show its error page in the page's place)
        if request.method != "GET":
            return None
        kind = request.resource_type
        if kind in NEVER_SENT or kind in self.options.skip_types:
            return None
        if self.traffic.requests > MAX_REQUESTS:
            return None
        requester = self._requester(request)
        if foreign(url, requester, self.network.credentialed):  # not even fetched
            log.debug("render: %s: refused to %s: its [[hosts]] credentials", url, requester)
            return None
        answer = await self.network.get(url)
        if answer is None:
            return None
        why = refusal(url, answer, kind=kind, origin=request.headers.get("origin"),
                      requester=requester, credentialed=self.network.credentialed)  # fmt: skip
        if why is not None:
            log.debug("render: %s: refused to %s: %s", url, requester, why)
            return None
        return answer

    def _requester(self, request: Request) -> str | None:
        """The origin of the document making `request` (None: unknown, a worker's)."""
        try:
            frame = request.frame
        except Exception:  # a worker's or service worker's request has no frame
            return None
        if frame.parent_frame is None:  # the page's own: its navigations elsewhere are refused
            return origin_of(self.url)
        return origin_of(frame.url)


def _main_frame(request: Request) -> Frame | None:
    """The frame of a request made by a page's main frame (None for a subframe's, a worker's)."""
    try:
        frame = request.frame
    except Exception:  # a worker's or service worker's request has no frame
        return None
    return frame if frame.parent_frame is None else None


async def _refuse_socket(ws: WebSocketRoute) -> None:
    with quietly():
        await ws.close(code=1008, reason="refused by the crawler")


async def _refuse(route: Route) -> None:
    with quietly():
        await route.abort("blockedbyclient")


async def open_context(browser: Browser, options: PageOptions) -> BrowserContext:
    """The browser's one context for the crawl's tabs: service workers blocked, downloads
    refused, every request no tab answers refused (a popup's), popups closed at once."""
    with translate("opening a browser context"):
        context = await browser.new_context(
            user_agent=options.user_agent,
            service_workers="block",
            accept_downloads=False,
            java_script_enabled=True,
        )
        context.set_default_timeout(options.timeout * 1000 + 1000)  # ours ends it first
        await context.add_init_script(NO_WEBRTC)
        await context.route("**/*", _refuse)  # a tab's own routes come first
        await context.route_web_socket("**/*", _refuse_socket)
    return context


class Tab:
    """One tab of the pool, used for one page after another (a renderer process kept warm: ~5x
    the pages/s of a fresh context per page); its route handler answers for the page it is
    rendering now. A tab whose page failed is closed, not used again."""

    __slots__ = ("_closing", "page", "routes")

    def __init__(self, page: Page) -> None:
        self.page = page
        self.routes: PageRoutes | None = None
        self._closing: set[asyncio.Future[None]] = set()  # popups being closed

    def _close_popup(self, popup: Page) -> None:
        """window.open: a page of its own, closed at once (its requests are refused)."""
        task = asyncio.ensure_future(popup.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
        task.add_done_callback(lambda done: done.cancelled() or done.exception())

    @classmethod
    async def open(cls, context: BrowserContext) -> Tab:
        with translate("opening a tab"):
            tab = cls(await context.new_page())

            async def handle(route: Route) -> None:  # (Playwright marks it: not a method)
                routes = tab.routes
                if routes is None:  # between two pages: a late request of the last one
                    await _refuse(route)
                else:
                    await routes.handle(route)

            await tab.page.route("**/*", handle)
            await tab.page.route_web_socket("**/*", _refuse_socket)
            tab.page.on("popup", lambda popup: tab._close_popup(popup))
        return tab

    async def close(self) -> None:
        """Close the tab; `BrowserGone` when it does not close in CLOSE_TIMEOUT (hung)."""
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT):
                with contextlib.suppress(RenderError), translate("closing a tab"):
                    await self.page.close(run_before_unload=False)
        except TimeoutError:
            raise BrowserGone(f"closing a tab: the browser did not answer in {CLOSE_TIMEOUT:g} s "
                              "(hung)") from None  # fmt: skip

    async def blank(self) -> bool:
        """Stop the page's scripts (timers, workers, allocations): its document replaced by
        ``about:blank``; False when that fails or takes longer than CLOSE_TIMEOUT."""
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT):
                with translate("blanking a tab"):
                    await self.page.goto("about:blank", wait_until="commit")
        except (RenderError, TimeoutError) as exc:
            log.debug("render: a tab did not blank: %s", exc)
            return False
        return True

    def __repr__(self) -> str:
        return f"<Tab {self.page.url!r} busy={self.routes is not None}>"


async def render_page(
    tab: Tab,
    url: str,
    document: Answer,
    network: Subresources,
    options: PageOptions,
    clock: Callable[[], float] | None = None,
) -> Rendered:
    """Render `url`, whose response `document` the crawl fetched, in `tab`; `PageTimeout` past
    ``options.timeout``, `BrowserGone` if the browser died, `PageFailed` if it refused the
    page (the tab is then not to be used again). `clock`: the settle's (the loop's)."""
    clock = clock or asyncio.get_running_loop().time
    routes = PageRoutes(url, document, network, options, Traffic(clock))
    routes.main = tab.page.main_frame
    tab.routes = routes
    try:
        async with asyncio.timeout(options.timeout):
            with translate(f"rendering {url}"):
                return await _render(tab.page, url, routes, options, clock)
    except TimeoutError:
        raise PageTimeout(f"rendering {url}: not done in {options.timeout:g} s") from None
    finally:
        tab.routes = None


async def _render(page: Page, url: str, routes: PageRoutes, options: PageOptions,
                  clock: Callable[[], float]) -> Rendered:  # fmt: skip
    await page.goto(url, wait_until="commit")
    # the load event, read in the page: a navigation its scripts start (refused) would leave
    # Playwright's own wait for it waiting for ever
    await page.wait_for_function("document.readyState === 'complete'", polling=50)
    await settled(routes.traffic, options.settle, clock())
    dom = await page.evaluate(READ_DOM, [options.max_html, options.max_links])
    shadow = tuple((str(href), bool(nofollow)) for href, nofollow in dom["shadow"])
    traffic = routes.traffic
    return Rendered(url, str(dom["html"]).encode("utf-8", "replace"), shadow,
                    tuple(routes.navigations), bool(dom["cut"]), traffic.requests,
                    traffic.refused)  # fmt: skip
