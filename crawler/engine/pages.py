"""What a crawl worker does with one URL the frontier hands out: `PageHandler`.

A page is fetched (retried or backed off as `crawler.errors` says), recorded, and read: a 304
is unchanged, a redirect's target is admitted, a sitemap's URLs are admitted, an HTML page is
parsed (`crawler.parse.thread`; a PDF is read, with `[parse] pdf`), its links read
(`crawler.parse.links`), checked for duplicate content (`crawler.content`, when on) and
admitted (`crawler.admission.gate`, or `crawler.engine.focus` in a focused crawl). A
robots.txt entry is fetched and its policy handed to the frontier. Each ends in the URL's
`CrawlResult` (`failed_result` for a URL that got no response); the engine
(`crawler.engine.crawler`) emits it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from crawler.admission.gate import Admission
from crawler.config.load import Config
from crawler.engine.focus import Focus
from crawler.engine.recrawl import conditional_headers
from crawler.errors import FetchError, ProtocolError, failure_class
from crawler.fetch.fetcher import Fetcher
from crawler.fetch.response import Response
from crawler.frontier import Entry, Outcome, host_key
from crawler.frontier.base import WorkSource
from crawler.frontier.hosts import parse_retry_after
from crawler.frontier.robots import fetch_robots, policy_from_response, product_token
from crawler.output.results import CrawlResult, CrawlStats
from crawler.parse.links import read_page
from crawler.parse.markup import Main, Markup
from crawler.parse.sniff import is_pdf
from crawler.parse.thread import Parser
from crawler.parse.yields import ExtractFn, Yields
from crawler.state.crawlstate import CrawlState
from crawler.urls.canonical import UrlNormalizer

if TYPE_CHECKING:
    from crawler.content import ContentIndex
    from crawler.content.redis import RedisContentIndex
    from crawler.engine.rendering import Rendering

__all__ = ["ROBOTS_MAX_BYTES", "PageHandler", "PageParts", "failed_result"]

log = logging.getLogger(__name__)

ROBOTS_MAX_BYTES = 500 * 1024


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclasses.dataclass(frozen=True, slots=True)
class PageParts:
    """The crawl's parts a `PageHandler` takes a page through, as the crawl's assembly built
    them (`crawler.engine.assemble`): fetch, parse, normalize and admit its links, report to
    the frontier, count, journal (`state`, None without one), score (`focus`, None unless
    focused) and check its content (`content`, None unless ``[dedup] enabled``)."""

    fetcher: Fetcher
    parser: Parser
    urls: UrlNormalizer
    admission: Admission
    frontier: WorkSource
    stats: CrawlStats
    state: CrawlState | None
    focus: Focus | None
    content: ContentIndex | RedisContentIndex | None


class PageHandler:
    """Fetches and reads the PAGE and ROBOTS entries of one crawl (built once its frontier and
    admission are set up: `Crawler.crawl`)."""

    __slots__ = ("_recorder", "_token", "admission", "config", "content", "fetcher", "focus",
                 "frontier", "parser", "recrawl", "rendering", "state", "stats",
                 "urls", "yields")  # fmt: skip

    def __init__(
        self,
        config: Config,
        parts: PageParts,
        *,
        recrawl: bool,
        recorder: Callable[[Response], None] | None,
        rendering: Rendering | None = None,
        extract: ExtractFn | None = None,
    ) -> None:
        """`parts`: the crawl's parts a page goes through; `recrawl`: pages are fetched with
        their stored validators; `recorder` sees every HTTP response as received (robots.txt
        and redirects included); `rendering`: which pages are rendered in a browser
        (`crawler.engine.rendering`), None for none; `extract`: the extract hook
        (`crawler.parse.yields`)."""
        self.config = config
        self.fetcher = parts.fetcher
        self.parser = parts.parser
        self.urls = parts.urls
        self.admission = parts.admission
        self.frontier = parts.frontier
        self.stats = parts.stats
        self.state = parts.state
        self.recrawl = recrawl
        self._recorder = recorder
        self.focus = parts.focus
        self.content = parts.content
        self.rendering = rendering
        self.yields = Yields.of(config.output.meta, config.extract, extract)
        self._token = product_token(config.crawl.user_agent)

    def __repr__(self) -> str:
        return (
            f"<PageHandler recrawl={self.recrawl} focus={self.focus is not None} "
            f"content={self.content is not None} recorder={self._recorder is not None}>"
        )

    async def fetch_page(self, entry: Entry) -> tuple[Outcome, bool, CrawlResult | None]:
        """Fetch one page; returns (outcome for the frontier, retry?, result or None if retried).
        What is retried and what backs off the host: `crawler.errors` (docs/politeness.md)."""
        retries_left = entry.retries < self.config.fetch.retries
        conditional = conditional_headers(self.state, entry.key) if self.recrawl else None
        try:
            response, conditional = await self._fetch(entry.url, conditional)
        except FetchError as exc:
            outcome = Outcome(blame=exc.blame, attempt=entry.retries)
            if retries_left and exc.retry:
                self.stats.retries += 1
                return outcome, True, None
            return outcome, False, failed_result(entry, exc.describe())
        if self._recorder is not None:
            self._recorder(response)
        outcome = Outcome(
            status=response.status,
            latency=response.latency,
            retry_after=response.header("Retry-After"),
            attempt=entry.retries,
        )
        failure = failure_class(response.status)
        if failure is not None and failure[1] and retries_left:
            self.stats.retries += 1
            return outcome, True, None
        if response.status == 304:  # Not Modified: nothing to read, no links to follow
            if not conditional:  # not an answer to anything asked: nothing to compare with
                error = "protocol: 304 Not Modified to a request without validators"
                return outcome, False, CrawlResult(**_base_result(entry, response), error=error)
            return outcome, False, CrawlResult(**_base_result(entry, response), unchanged=True)
        if response.location is not None:
            return outcome, False, await self._redirect(entry, response, response.location)
        if entry.sitemap and response.status < 300:
            return outcome, False, await self._sitemap(entry, response)
        return outcome, False, await self._page(entry, response)

    async def _fetch(
        self, url: str, conditional: dict[str, str] | None
    ) -> tuple[Response, dict[str, str] | None]:
        """Fetch `url` with a recrawl's `conditional` headers: (response, the headers it
        answers). A conditional request answered by a 412 (a GET's If-None-Match cannot fail,
        RFC 9110 13.1.2) or by a protocol error (a server that sends a body with its 304 breaks
        the connection's framing) is made again without them."""
        if not conditional:
            return await self.fetcher.fetch(url), None
        try:
            response = await self.fetcher.fetch(url, conditional=conditional)
        except ProtocolError as exc:
            log.info("%s: %s answering a conditional request: asked again without it", url, exc)
            return await self.fetcher.fetch(url), None
        if response.status != 412:
            return response, conditional
        if self._recorder is not None:
            self._recorder(response)
        return await self.fetcher.fetch(url), None

    async def _page(self, entry: Entry, response: Response) -> CrawlResult:
        focus = self.focus
        output = self.config.output
        # what is read of the page, static and rendered alike (keywords, not a dict a page)
        anchors = focus is not None
        text = focus is not None and focus.text
        content = self.content is not None
        main: Main = "markdown" if output.markdown else "text" if output.text else None
        yields = self.yields and self.yields.at(response.status, response.headers)
        pdf = None  # [parse] pdf: a PDF is read in a worker process (crawler.parse.pdf)
        if self.config.parse.pdf and is_pdf(response.content_type, response.body):
            markup, pdf = await self.parser.read_pdf(
                response.body, anchors=anchors, text=text, content=content, main=main
            )
        else:
            markup = await self.parser.parse(
                response.body, entry.url, response.content_type,
                anchors=anchors, text=text, content=content, main=main, yields=yields,
            )  # fmt: skip
        rendered = False  # rendered in a browser: its DOM's links and text, with the static ones
        if (
            pdf is None
            and (render := self.rendering)
            and response.status < 300
            and render.wants(entry.url, response.body, markup)
        ):
            markup, rendered = await render.read(
                entry.url,
                response,
                markup,
                anchors=anchors,
                text=text,
                content=content,
                main=main,
                yields=yields,
            )
        sc = self.config.scope
        page = read_page(
            markup,
            entry.url,
            x_robots_tag=response.header("X-Robots-Tag"),
            respect_nofollow=not sc.follow_nofollow,
            max_links=sc.max_links_per_page,
            user_agent_token=self._token,
            refresh=response.header("Refresh"),
        )
        dedup = await self._content(entry, markup) if page.is_html and response.status < 300 else {}
        if not self.config.dedup.follow_duplicates and (
            dedup.get("duplicate_of") or dedup.get("near_duplicate_of")
        ):
            page = dataclasses.replace(page, links=())  # a duplicate's links are not followed
        if focus is not None:
            relevance, new = await focus.read(entry, page, self.admission, response.status)
        else:
            relevance = None
            new = await self.admission.links(entry, page.links, page.base) if page.is_html else 0
        return CrawlResult(
            **_base_result(entry, response),
            rendered=rendered,
            title=page.title,
            links=page.links_found,
            new_links=new,
            canonical=page.canonical,
            relevance=relevance,
            text=markup.main_text,
            markdown=markup.markdown,
            text_truncated=markup.main_truncated,
            pages=None if pdf is None or pdf.doc is None else pdf.doc.pages,
            error=None if pdf is None else pdf.error,
            meta=markup.meta,
            fields=markup.fields,
            fields_error=markup.fields_error,
            **dedup,
        )

    async def _content(self, entry: Entry, markup: Markup) -> dict[str, Any]:
        """Content dedup of a 2xx HTML page (`crawler.content`): its fingerprint and matches
        (error pages are left out: every 404 page of a site would be a duplicate)."""
        content = self.content
        if content is None:
            return {}
        from crawler.content import ContentIndex, fingerprint

        fp = fingerprint(markup.content or "")
        if isinstance(content, ContentIndex):
            match = content.check(entry.url, fp)
        else:  # a crawl shared through Redis: one index for every process
            match = await content.check(entry.url, fp)
        near = match.near_duplicate_of  # a recrawled page changed: near its own old version
        return {
            "content_hash": fp.content_hex,
            "duplicate_of": match.duplicate_of,
            "simhash": fp.simhash_hex,
            "near_duplicate_of": None if near == entry.url else near,
        }

    async def _redirect(self, entry: Entry, response: Response, location: str) -> CrawlResult:
        target, new, error = await self.admission.redirect(entry, location)
        if self.focus is not None and target is not None:
            self.focus.moved(entry.url, target)  # the link's features, learned from the target
        return CrawlResult(
            **_base_result(entry, response),
            location=target or location,
            links=int(error is None),
            new_links=new,
            error=error,
        )

    async def fetch_robots(self, entry: Entry) -> Outcome:
        """Fetch robots.txt (RFC 9309 rules in `crawler.frontier.robots`) and hand the policy on."""
        self.stats.robots_fetches += 1

        last: list[Response] = []  # the final response: its Retry-After, on a 429/503

        async def fetch(url: str) -> Response:
            response = await self.fetcher.fetch(url, max_body=ROBOTS_MAX_BYTES, truncate=True)
            if self._recorder is not None:
                self._recorder(response)
            last[:] = [response]
            return response

        def join(location: str, base: str) -> str | None:
            resolved = self.urls.resolve(location, base)
            return None if resolved is None else resolved[0]

        got = await fetch_robots(fetch, join, entry.url)
        status, body, latency = got.status, got.body, got.latency
        value = last[0].header("Retry-After") if last else None
        wait = None if value is None else parse_retry_after(value)
        policy = policy_from_response(status, body, self.config.crawl.user_agent,
                                      error=got.error, retry_after=wait,
                                      refused=got.refused)  # fmt: skip
        self.frontier.set_robots(host_key(entry.url), policy, body)
        if self.config.scope.use_sitemaps and not policy.temporary:
            for loc in policy.sitemaps:
                await self.admission.sitemap(loc, entry.url, 0)
        return Outcome(status=status, latency=latency, failed=status is None)

    async def _sitemap(self, entry: Entry, response: Response) -> CrawlResult:
        from crawler.parse.sitemaps import SitemapError, parse_sitemap  # defusedxml: when needed

        base = _base_result(entry, response)
        try:
            sitemap = parse_sitemap(response.body, max_bytes=self.config.fetch.max_body)
        except SitemapError as exc:
            return CrawlResult(**base, error=f"sitemap: {exc}")
        if sitemap.is_index:  # its sitemaps one level deeper: max_depth ends an endless chain
            sitemaps = self.admission.sitemap
            new = sum([await sitemaps(loc, entry.url, entry.depth + 1) for loc in sitemap.locs])
        else:  # its pages at depth 1 (a seed's links), however deep the sitemap was nested
            top = dataclasses.replace(entry, depth=0)
            new = await self.admission.links(top, sitemap.locs, entry.url)
        return CrawlResult(**base, links=len(sitemap.locs), new_links=new)


def _base_result(entry: Entry, response: Response) -> dict[str, Any]:
    return {
        "url": entry.url,
        "key": entry.key,
        "status": response.status,
        "depth": entry.depth,
        "parent": entry.parent,
        "fetched_at": _now_iso(),
        "elapsed_ms": round(response.elapsed * 1000, 2),
        "content_type": response.content_type,
        "size": len(response.body),
        "body": response.body,
        "headers": response.headers,
    }


def failed_result(entry: Entry, error: str) -> CrawlResult:
    """The result of a URL that got no response (a refusal, an internal error, a failed fetch)."""
    return CrawlResult(url=entry.url, key=entry.key, status=None, depth=entry.depth,
                       parent=entry.parent, fetched_at=_now_iso(), error=error)  # fmt: skip
