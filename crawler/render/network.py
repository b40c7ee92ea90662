"""What a rendered page's requests get: `Subresources`, the crawler's fetcher behind a cache.

Every request a page makes (script, XHR/fetch, stylesheet, iframe, worker) is answered here,
through the crawl's `crawler.fetch.fetcher.Fetcher`: the SSRF guard, the body cap, the steering
headers, auth, cookies, proxy and the crawler's User-Agent all apply. Only GET is sent: a crawler
reads, it does not post (a ``sendBeacon`` or a form POST is refused). Redirects are followed here
(at most ``max_redirects``, each target fetched through the fetcher again), because Chromium does
not follow a redirect a route answers. A request the fetcher refuses or fails is refused.

Answers are cached for the crawl (GETs that succeeded, bounded in bytes, least recently used
out first) and a URL asked for by several pages at once is fetched once. Requests to one host are
held to its concurrency limit (``per_host_concurrency``, or its ``[[hosts]]`` rule's), not spaced
by its crawl delay: they are part of the page whose fetch politeness already scheduled.
Every response fetched (not those from the cache) goes to the recorder (the WARC writer).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from crawler.errors import FetchError
from crawler.fetch.response import Response
from crawler.fetch.steering import HostRules

__all__ = ["Answer", "Subresources", "answer_of", "credentials_of", "host_of"]

log = logging.getLogger(__name__)

# headers that describe the body as sent, or the connection: the body handed to Chromium is
# decoded and whole (the names kept are lowercased: Playwright looks for a lowercase
# access-control-allow-origin, crawler.render.origin)
_DROPPED = frozenset({"content-encoding", "content-length", "transfer-encoding", "connection",
                      "keep-alive", "trailer", "upgrade"})  # fmt: skip


@dataclass(frozen=True, slots=True)
class Answer:
    """A response as a route fulfills it: status, headers (one value each), decoded body."""

    status: int
    headers: dict[str, str]
    body: bytes = field(repr=False)
    url: str = ""  # the URL that answered (after redirects)


def answer_of(response: Response) -> Answer:
    """The `Answer` a route gives for `response` (several values of a header joined)."""
    headers: dict[str, str] = {}
    for name, value in response.headers:
        lower = name.lower()
        if lower in _DROPPED:
            continue
        if lower in headers:
            joiner = "\n" if lower == "set-cookie" else ", "
            headers[lower] = f"{headers[lower]}{joiner}{value}"
        else:
            headers[lower] = value
    return Answer(response.status, headers, response.body, response.url)


def credentials_of(rules: HostRules) -> Callable[[str], bool]:
    """Whether the fetcher sends the ``[[hosts]]`` `rules`' credentials (auth, headers) to a URL."""

    def credentialed(url: str) -> bool:
        parts = urlsplit(url)
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            return False
        return bool(rules.headers(parts.hostname or "", port, parts.scheme))

    return credentialed


def host_of(url: str) -> str:
    """``scheme://host:port`` of `url`, as the frontier keys a host."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{parts.hostname or ''}:{port}"


class Subresources:
    """The subresources of a crawl's rendered pages, fetched through the crawler's fetcher."""

    __slots__ = ("_bytes", "_cache", "_fetch", "_flight", "_hosts", "_limit", "_recorder",
                 "cache_bytes", "cached", "credentialed", "fetched", "max_redirects",
                 "refused")  # fmt: skip

    def __init__(
        self,
        fetch: Callable[[str], Awaitable[Response]],
        *,
        per_host: Callable[[str], int] = lambda host: 1,
        cache_bytes: int = 32 * 1024 * 1024,
        max_redirects: int = 5,
        recorder: Callable[[Response], None] | None = None,
        credentialed: Callable[[str], bool] = lambda url: False,
    ) -> None:
        """`fetch`: the fetcher's GET; `per_host(host key)`: requests in flight to a host at
        most; `cache_bytes`: the cache's bound (0: no cache); `recorder` sees every response;
        `credentialed(url)`: whether `fetch` sends a ``[[hosts]]`` rule's credentials there
        (`credentials_of`), which another origin's page never reads (`crawler.render.origin`)."""
        self._fetch = fetch
        self.credentialed = credentialed
        self._limit = per_host
        self.cache_bytes = cache_bytes
        self.max_redirects = max_redirects
        self._recorder = recorder
        self._cache: OrderedDict[str, Answer] = OrderedDict()
        self._bytes = 0
        self._flight: dict[str, asyncio.Future[Answer | None]] = {}
        self._hosts: dict[str, tuple[asyncio.Semaphore, list[int]]] = {}
        self.fetched = self.cached = self.refused = 0

    async def get(self, url: str) -> Answer | None:
        """The answer to a GET of `url` (redirects followed), or None when it is refused."""
        hit = self._cache.get(url)
        if hit is not None:
            self._cache.move_to_end(url)
            self.cached += 1
            return hit
        waiting = self._flight.get(url)
        if waiting is not None:
            return await asyncio.shield(waiting)
        future: asyncio.Future[Answer | None] = asyncio.get_running_loop().create_future()
        self._flight[url] = future
        try:
            answer = await self._follow(url)
        except BaseException:
            future.set_result(None)  # the pages waiting for it: refused; this one: the error
            raise
        finally:
            del self._flight[url]
        future.set_result(answer)
        if answer is None:
            self.refused += 1
        elif 200 <= answer.status < 300:
            self._keep(url, answer)
        return answer

    async def _follow(self, url: str) -> Answer | None:
        """Fetch `url`, following redirects; None when a fetch fails or there are too many."""
        target = url
        for _ in range(self.max_redirects + 1):
            try:
                response = await self._one(target)
            except FetchError as exc:
                log.debug("render: %s refused: %s", target, exc.describe())
                return None
            location = response.location
            if location is None:
                return answer_of(response)
            following = urljoin(target, location)
            if urlsplit(following).scheme not in ("http", "https"):
                return None
            target = following
        log.debug("render: %s: more than %d redirects", url, self.max_redirects)
        return None

    async def _one(self, url: str) -> Response:
        host = host_of(url)
        slot = self._hosts.get(host)
        if slot is None:
            slot = self._hosts[host] = (asyncio.Semaphore(max(1, self._limit(host))), [0])
        semaphore, users = slot
        users[0] += 1
        try:
            async with semaphore:
                response = await self._fetch(url)
        finally:
            users[0] -= 1
            if not users[0]:
                del self._hosts[host]
        self.fetched += 1
        if self._recorder is not None:
            self._recorder(response)
        return response

    def _keep(self, url: str, answer: Answer) -> None:
        size = len(answer.body) + 200
        if size > self.cache_bytes // 8:  # one answer holds at most an eighth of the cache
            return
        self._cache[url] = answer
        self._bytes += size
        while self._bytes > self.cache_bytes and self._cache:
            _, old = self._cache.popitem(last=False)
            self._bytes -= len(old.body) + 200

    def __repr__(self) -> str:
        return (f"<Subresources fetched={self.fetched} cached={self.cached} "
                f"refused={self.refused} cache={len(self._cache)}/{self._bytes}B>")  # fmt: skip
