"""A deterministic fixture site on loopback, for the tests and `crawl --demo`.

Three virtual hosts share one aiohttp server on 127.0.0.1; the crawler reaches them through its
resolver override (`resolve`), never /etc/hosts:

- ``site-a.test``: the main site. One page linked in many spellings, robots.txt with Disallow and
  Crawl-delay, a redirect chain, a redirect loop, a redirect to site-b, 404/500/429 with
  Retry-After, a slow page, JSON, HTML served as application/octet-stream, nofollow links
  (rel, meta robots, X-Robots-Tag), ``<base href>``, an image map, an endless calendar (a crawler
  trap only `max_depth` stops), links out of scope, and a sitemap index (listed in robots.txt)
  pointing to a gzipped sitemap with one page linked from nowhere else.
- ``site-b.test``: a second seed host; its robots.txt is a 404 (allow all).
- ``out.test``: linked but out of scope; a correct crawl never contacts it.
- ``app.test`` (with ``scripted=True``): a script-driven host, its links made by scripts
  (`crawler.testing.scripted`); a third seed.

The site knows its ground truth: `expected(max_depth)` is the exact set of canonical URLs a
correct crawl with the default scope produces results for, and `refused()` the ones robots.txt
refuses. Every request is logged (`requests`) with the server's clock, so tests can measure
per-host intervals server-side.
"""

from __future__ import annotations

import asyncio
import gzip
import html
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

from aiohttp import web

from crawler.testing import scripted

__all__ = ["FixtureSite", "LoggedRequest"]

A, B, OUT = "site-a.test", "site-b.test", "out.test"
HOSTS = (A, B, OUT)
CALENDAR_START = 2026
SITEMAP_PAGES = ("/from-sitemap", "/about", "/private/secret")


@dataclass(frozen=True, slots=True)
class LoggedRequest:
    host: str
    path: str
    time: float
    user_agent: str
    status: int = 0
    body: bytes = b""


def _page(title: str, links: list[str], *, head: str = "", extra: str = "") -> web.Response:
    items = "\n".join(f'<li><a href="{html.escape(h, quote=True)}">{html.escape(h)}</a></li>'
                      for h in links)  # fmt: skip
    body = (
        f"<!DOCTYPE html>\n<html><head><meta charset=utf-8><title>{html.escape(title)}</title>"
        f"{head}</head>\n<body><h1>{html.escape(title)}</h1>\n<ul>\n{items}\n</ul>\n{extra}"
        "</body></html>\n"
    )
    return web.Response(text=body, content_type="text/html")


class FixtureSite:
    """The fixture site. `async with FixtureSite() as site:` serves it on a free loopback port."""

    def __init__(
        self, *, crawl_delay: float = 0.1, slow: float = 0.3, retry_after: int = 1,
        scripted: bool = False,
    ) -> None:  # fmt: skip
        """`scripted`: serve the script-driven host ``app.test`` too, and seed it."""
        self.scripted = scripted
        self.crawl_delay = crawl_delay
        self.slow = slow
        self.retry_after = retry_after
        self.requests: list[LoggedRequest] = []
        self.port = 0
        self._runner: web.AppRunner | None = None
        self._busy_hits = 0

    # -- addresses -------------------------------------------------------------------------

    def origin(self, host: str = A) -> str:
        return f"http://{host}:{self.port}"

    def url(self, host: str, path: str) -> str:
        return self.origin(host) + path

    @property
    def seeds(self) -> list[str]:
        return [self.url(A, "/"), self.url(B, "/"), *self._app(["/"])]

    @property
    def resolve(self) -> dict[str, str]:
        return {host: "127.0.0.1" for host in (*HOSTS, *([scripted.APP] if self.scripted else []))}

    def _app(self, paths: list[str]) -> list[str]:
        """URLs of ``app.test`` (none unless `scripted`)."""
        return [self.url(scripted.APP, p) for p in paths] if self.scripted else []

    # -- ground truth ----------------------------------------------------------------------

    def pages(self) -> dict[str, int]:
        """Every URL a correct crawl fetches (canonical form) with the depth it is found at,
        except calendar months, which `expected` adds up to the depth limit."""
        a = {
            "/": 0, "/page?a=1&b=2": 1, "/~user/": 1, "/about": 1, "/docs/": 1,
            "/docs/v2/intro.html": 2, "/docs/v1/old.html": 2, "/redirect/1": 1, "/redirect/2": 1,
            "/landing": 1, "/loop/a": 1, "/loop/b": 1, "/to-b": 1, "/missing": 1, "/broken": 1,
            "/busy": 1, "/slow": 1, "/data.json": 1, "/lying": 1, "/sniffed": 2, "/xrobots": 1,
            "/meta-nofollow": 1, "/area-target": 1,
        }  # fmt: skip
        b = {"/": 0, "/b-page": 1, "/from-a": 1}
        out = {self.url(A, p): d for p, d in a.items()}
        out.update({self.url(B, p): d for p, d in b.items()})
        return out

    def expected(
        self, max_depth: int = 16, *, sitemaps: bool = False, rendered: bool = False
    ) -> set[str]:
        """Canonical URLs a correct default-scope crawl with this depth limit has results for
        (with `sitemaps`: a crawl with `use_sitemaps` on; `rendered`: one rendering pages)."""
        urls = {u for u, d in self.pages().items() if not max_depth or d <= max_depth}
        app = scripted.RENDERED_PAGES if rendered else scripted.STATIC_PAGES
        urls.update(self._app([p for p, d in app.items() if not max_depth or d <= max_depth]))
        if sitemaps:
            paths = ("/sitemap.xml", "/sitemap-pages.xml.gz", "/from-sitemap")
            urls |= {self.url(A, p) for p in paths}
        months = max_depth if max_depth else 24
        urls.update(self.url(A, _month_path(i)) for i in range(1, months + 1))
        return urls

    def refused(self, *, rendered: bool = False) -> set[str]:
        """URLs the crawl must report as refused by robots.txt (and never fetch)."""
        return {
            self.url(A, "/private/secret"),
            *self._app(list(scripted.REFUSED) if rendered else []),
        }

    def never(self) -> set[str]:
        """URLs served here that a correct crawl must never request."""
        paths = ["/nofollow-target", "/private/secret", "/hidden-x", "/hidden-m", "/image.png"]
        return {self.url(A, p) for p in paths} | {self.url(OUT, "/")}

    # -- server ----------------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        app = web.Application(middlewares=[self._log_middleware])
        app.router.add_route("GET", "/{tail:.*}", self._dispatch)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    async def close(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def __aenter__(self) -> FixtureSite:
        await self.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @web.middleware
    async def _log_middleware(
        self, request: web.Request, handler: Callable[[web.Request], object]
    ) -> web.StreamResponse:
        host = request.host.rsplit(":", 1)[0].lower().rstrip(".")
        started = asyncio.get_running_loop().time()

        def log(status: int, body: object) -> None:
            agent = request.headers.get("User-Agent", "")
            sent = body if isinstance(body, bytes) else b""
            self.requests.append(
                LoggedRequest(host, request.raw_path, started, agent, status, sent)
            )

        try:
            response = await handler(request)  # type: ignore[misc]
        except web.HTTPException as exc:
            log(exc.status, exc.body)
            raise
        assert isinstance(response, web.StreamResponse)
        log(response.status, response.body if isinstance(response, web.Response) else b"")
        return response

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        host = request.host.rsplit(":", 1)[0].lower().rstrip(".")
        path = request.path
        if host == A:
            return await self._site_a(request, path)
        if host == B:
            return self._site_b(path)
        if host == scripted.APP and self.scripted:
            return scripted.scripted_app(path)
        return _page("Out of scope", ["/"])

    def _site_b(self, path: str) -> web.StreamResponse:
        if path == "/":
            return _page("Site B", ["/b-page", self.url(A, "/"), "from-a#x"])
        if path == "/b-page":
            return _page("B page", ["/", "./"])
        if path == "/from-a":
            return _page("Arrived from A", ["/"])
        raise web.HTTPNotFound()

    async def _site_a(self, request: web.Request, path: str) -> web.StreamResponse:
        redirects = {
            "/redirect/1": (301, "/redirect/2"),
            "/redirect/2": (302, "/landing"),
            "/loop/a": (302, "/loop/b"),
            "/loop/b": (302, "/loop/a"),
            "/to-b": (302, self.url(B, "/from-a")),
        }
        if path in redirects:
            status, location = redirects[path]
            return web.Response(status=status, headers={"Location": location})
        if path == "/robots.txt":
            text = f"User-agent: *\nDisallow: /private/\nCrawl-delay: {self.crawl_delay}\n"
            text += f"Sitemap: {self.url(A, '/sitemap.xml')}\n"
            return web.Response(text=text, content_type="text/plain")
        if path == "/":
            return self._index()
        if path.startswith("/calendar/"):
            return self._calendar(path)
        simple = {
            "/page": ("The page", ["/"]),
            "/~user/": ("User page", ["/"]),
            "/about": ("About", ["/", "/about#team", "mailto:team@site-a.test"]),
            "/docs/v2/intro.html": ("Intro", ["../v1/old.html"]),
            "/docs/v1/old.html": ("Old docs", []),
            "/landing": ("Landing", ["/"]),
            "/area-target": ("Area target", []),
            "/sniffed": ("Sniffed", []),
            "/nofollow-target": ("Must not be fetched", []),
            "/private/secret": ("Must not be fetched", []),
            "/hidden-x": ("Must not be fetched", []),
            "/hidden-m": ("Must not be fetched", []),
        }
        if path in simple:
            title, links = simple[path]
            return _page(title, links)
        return await self._special(request, path)

    async def _special(self, request: web.Request, path: str) -> web.StreamResponse:
        if path == "/docs/":
            return _page("Docs", ["intro.html", "../v1/old.html"], head='<base href="/docs/v2/">')
        if path == "/missing":
            raise web.HTTPNotFound()
        if path == "/broken":
            raise web.HTTPInternalServerError()
        if path == "/busy":
            self._busy_hits += 1
            if self._busy_hits == 1:
                return web.Response(status=429, headers={"Retry-After": str(self.retry_after)})
            return _page("Busy, now served", [])
        if path == "/slow":
            await asyncio.sleep(self.slow)
            return _page("Slow", [])
        if path == "/data.json":
            return web.json_response({"href": "/not-a-link", "links": ["/also-not"]})
        if path == "/lying":
            body = b"<!DOCTYPE html><html><head><title>Lying</title></head><body>"
            body += b'<a href="/sniffed">sniffed</a></body></html>'
            return web.Response(body=body, content_type="application/octet-stream")
        if path == "/xrobots":
            response = _page("X-Robots-Tag nofollow", ["/hidden-x"])
            response.headers["X-Robots-Tag"] = "nofollow"
            return response
        if path == "/meta-nofollow":
            return _page("Meta nofollow", ["/hidden-m"],
                         head='<meta name="robots" content="nofollow">')  # fmt: skip
        if path == "/sitemap.xml":
            index = (
                '<?xml version="1.0" encoding="UTF-8"?>\n'
                '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                "<sitemap><loc>/sitemap-pages.xml.gz</loc></sitemap></sitemapindex>"
            )
            return web.Response(text=index, content_type="application/xml")
        if path == "/sitemap-pages.xml.gz":
            locs = "".join(f"<url><loc>{self.url(A, p)}</loc></url>" for p in SITEMAP_PAGES)
            urlset = (
                '<?xml version="1.0" encoding="UTF-8"?>\n'
                f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{locs}</urlset>'
            )
            return web.Response(
                body=gzip.compress(urlset.encode()), content_type="application/gzip"
            )
        if path == "/from-sitemap":
            return _page("Only in the sitemap", ["/"])
        if path == "/image.png":
            return web.Response(body=b"\x89PNG\r\n\x1a\n", content_type="image/png")
        raise web.HTTPNotFound()

    def _index(self) -> web.Response:
        p = self.port
        spellings = [
            "/page?a=1&b=2",
            "/page?b=2&a=1",
            "page?a=1&b=2#top",
            f"HTTP://SITE-A.TEST:{p}/page?a=1&b=2",
            f"//site-a.test:{p}/page?b=2&a=1",
            f"http://site-a.test.:{p}/page?a=1&b=2",
            "/x/../page?a=1&b=2",
            "/./page?a=1&b=2&utm_source=news",
            "/page;jsessionid=ABC123?a=1&b=2",
            "/page?a=1&PHPSESSID=xyz&b=2",
            "\t/page?a=1&b=2\n",
            "/%7Euser/",
            "/~user/",
            "/%7euser/#me",
        ]
        others = [
            "/about", "/docs/", "/private/secret", "/redirect/1", "/loop/a", "/to-b", "/missing",
            "/broken", "/busy", "/slow", "/data.json", "/lying", "/calendar/2026/01", "/xrobots",
            "/meta-nofollow", "/image.png", f"http://out.test:{p}/", "https://example.com/",
            "mailto:someone@site-a.test", "javascript:void(0)", "tel:+100", "#", "",
        ]  # fmt: skip
        extra = (
            '<a rel="nofollow" href="/nofollow-target">nofollow</a>\n'
            '<map name="m"><area href="/area-target" alt="area"></map>\n'
        )
        return _page("Site A", spellings + others, extra=extra)

    def _calendar(self, path: str) -> web.StreamResponse:
        parts = path.strip("/").split("/")
        try:
            year, month = int(parts[1]), int(parts[2])
        except (IndexError, ValueError):
            raise web.HTTPNotFound() from None
        nxt = (year, month + 1) if month < 12 else (year + 1, 1)
        return _page(f"Calendar {year}-{month:02d}", [f"/calendar/{nxt[0]}/{nxt[1]:02d}"])


def _month_path(i: int) -> str:
    """Path of the i-th calendar page (1 = the first, linked from the index)."""
    year, month = CALENDAR_START + (i - 1) // 12, (i - 1) % 12 + 1
    return f"/calendar/{year}/{month:02d}"
