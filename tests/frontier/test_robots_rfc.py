"""robots.txt against RFC 9309 and what real sites serve (an audit; docs/politeness.md's table).

The group rules (2.2.1): a group applies to us when the product token of its User-agent line
equals ours, case-insensitively (Google's parser reads "Googlebot/2.1" as "Googlebot"); a token
that only starts ours, or only contains it, names another crawler. The fetch rules (2.3.1) and
the crawl (refusals never fetched, robots.txt per scheme, host and port) run against loopback
servers; the fetch faults earlier audits found are in tests/test_faults*.py and
tests/test_hostile.py, the frontier's timing (Crawl-delay, TTL, retries) in tests/test_frontier*.py.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Callable

import pytest
from aiohttp import web
from redis.asyncio import Redis

from crawler.config.load import Config
from crawler.engine.crawler import Crawler
from crawler.errors import ConfigError
from crawler.frontier import EntryKind, Frontier
from crawler.frontier.entries import Entry
from crawler.frontier.hosts import host_key, robots_url
from crawler.frontier.robots import policy_from_response, product_token
from crawler.frontier.settings import Politeness
from crawler.output.results import CrawlResult
from tests.support.frontier_sim import crawl, fill, robots_body, simulate
from tests.support.redis_frontier import Clock, claim_one, frontier
from tests.support.server import serve

UA = "sieve-crawler/0.1 (+https://example.test/bot)"
OTHERS = "User-agent: *\nDisallow: /star\n"


@pytest.mark.parametrize(
    "line",
    [
        "User-agent: sieve-crawler",
        "User-agent: SIEVE-Crawler",
        "User-agent: sieve-crawler/0.1",  # was: not ours, the * group used
        "User-agent: Sieve-Crawler/2.0 (compatible)",  # the same
        "User-agent:sieve-crawler # us",
        "user agent: sieve-crawler",
    ],
)
def test_a_group_naming_our_product_token_is_ours(line: str) -> None:
    policy = policy_from_response(200, f"{line}\nDisallow: /ours\n\n{OTHERS}".encode(), UA)
    assert not policy.allowed("http://a.test/ours")
    assert policy.allowed("http://a.test/star")  # the * group is not used


@pytest.mark.parametrize(
    "line",
    [
        "User-agent: sieve",  # was: ours (protego matches a prefix of our token)
        "User-agent: sieve-",
        "User-agent: s",
        "User-agent: sieve-crawler-news",
        "User-agent: crawler",
        "User-agent: Mozilla/5.0 (compatible; sieve-crawler)",  # its token is Mozilla
        "User-agent: *bot",  # not the * group either (Google: no token at all)
    ],
)
def test_a_group_naming_another_token_is_not_ours(line: str) -> None:
    policy = policy_from_response(200, f"{line}\nDisallow: /other\n\n{OTHERS}".encode(), UA)
    assert policy.allowed("http://a.test/other")
    assert not policy.allowed("http://a.test/star")  # the * group is


@pytest.mark.parametrize(
    "line",
    [
        "User-agent sieve-crawler: yes",  # an unknown field "User-agent sieve-crawler"
        "User-agent sieve-crawler:",
        "User-agentsieve-crawler",
        "Usr-agent: sieve-crawler",
        "User  agent: sieve-crawler",
        "X User-agent: sieve-crawler",
    ],
)
def test_a_line_the_parser_does_not_read_as_user_agent_names_no_group(line: str) -> None:
    # its rules belong to no group (they are ignored): the * group applies, as it would
    # without the line (a renamed line made them our group's: Allow: / let everything through)
    policy = policy_from_response(200, f"{line}\nAllow: /\n\n{OTHERS}".encode(), UA)
    assert not policy.allowed("http://a.test/star")
    # the same with a group of ours before it: its rules stay ours, the line adds none
    body = f"User-agent: sieve-crawler\nDisallow: /ours\n{line}\nAllow: /\n\n{OTHERS}"
    policy = policy_from_response(200, body.encode(), UA)
    assert not policy.allowed("http://a.test/ours") and policy.allowed("http://a.test/star")


@pytest.mark.parametrize(
    ("user_agent", "token"),
    [
        ("Mozilla/5.0 (compatible; acmebot/1.0; +https://acme.example/bot)", "acmebot"),
        ("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "Googlebot"),
        (
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; "
            "+http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36",
            "bingbot",
        ),
        ("Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0", "Mozilla"),
        ("acmebot/1.0 (compatible; Other/2.0)", "acmebot"),
        ("Mozilla/5.0 (compatible; MSIE 9.0; Windows NT 6.1; Trident/5.0)", "Mozilla"),  # a browser
    ],
)
def test_a_browser_style_user_agent_names_its_crawler_after_compatible(
    user_agent: str, token: str
) -> None:
    # RFC 9309 2.2.1: the product token is the crawler's name, a substring of its User-Agent;
    # in the "Mozilla/5.0 (compatible; name/version)" convention it is the name (was: Mozilla,
    # and "User-agent: acmebot / Disallow: /" was not for acmebot)
    assert product_token(user_agent) == token
    body = f"User-agent: {token}\nDisallow: /\n\nUser-agent: *\nAllow: /\n".encode()
    assert not policy_from_response(200, body, user_agent).allowed("http://a.test/x")


@pytest.mark.parametrize(
    "user_agent", ["", "(bad) agent", "/1.0", "bot/1\nX-Evil: 1", "bot\x00", "bötbot/1.0", "a,b/1"]
)
def test_a_user_agent_without_a_product_token_is_a_config_error(user_agent: str) -> None:
    # was: a ValueError traceback from the crawl (exit 1), or a header that cannot be sent; a
    # name with other characters was cut to its first ones ("bötbot": "b", matching "User-agent: b")
    with pytest.raises(ConfigError, match=r"\[crawl\] user_agent: "):
        Config().override("crawl", user_agent=user_agent)
    Config().override("crawl", user_agent="mybot")  # a bare token is enough


def test_our_groups_are_merged_however_they_spell_our_token() -> None:
    body = (
        "User-agent: sieve-crawler\nDisallow: /a\nCrawl-delay: 4\n\n"
        "User-agent: other\nDisallow: /o\n\n"
        "User-agent: Sieve-Crawler/1.0\nDisallow: /b\n\n"
        f"{OTHERS}"
    )
    policy = policy_from_response(200, body.encode(), UA)
    assert [policy.allowed(f"http://a.test/{p}") for p in ("a", "b", "o", "star")] == [
        False,
        False,
        True,
        True,
    ]
    assert policy.crawl_delay == 4.0


def test_old_mac_line_ends_and_a_bom_keep_the_groups_apart() -> None:
    body = "\ufeffUser-agent: other\rDisallow: /o\rUser-agent: Sieve-Crawler/3\rDisallow: /me\r"
    policy = policy_from_response(200, body.encode(), UA)
    assert policy.allowed("http://a.test/o") and not policy.allowed("http://a.test/me")


# -- matching (protego's; kept here against its upgrades) ---------------------------------------


@pytest.mark.parametrize(
    ("rules", "path", "allowed"),
    [
        # RFC 9309 2.2.2: the longest match wins, Allow on a tie; no match: allowed
        ("Disallow: /a\nAllow: /a/b", "/a/b/c", True),
        ("Allow: /page\nDisallow: /*.html", "/page.html", False),
        ("Disallow: /p\nAllow: /p", "/p", True),
        ("Disallow: /x", "/y", True),
        # 2.2.3: * and $; paths are case-sensitive, queries part of the path
        ("Disallow: /fish*.php", "/fishheads/catfish.php?parameters", False),
        ("Disallow: /*.php$", "/a.php?x=1", True),
        ("Disallow: /Fish", "/fish", True),
        ("Disallow: /*?sort=", "/list?sort=asc", False),
        # 2.2.2's table: percent-encoding of octets outside ASCII and of unreserved ones
        ("Disallow: /foo/bar/\u30c4", "/foo/bar/%E3%83%84", False),
        ("Disallow: /foo/bar/%E3%83%84", "/foo/bar/%e3%83%84", False),
        ("Disallow: /foo/bar/%62%61%7A", "/foo/bar/baz", False),
        ("Disallow: /~joe", "/%7Ejoe", False),
        ("Disallow: /a%3cd", "/a%3Cd", False),
        ("Disallow: /a%2Fb", "/a/b", True),  # a reserved octet stays encoded
        ("Disallow: /path/file-with-a-%2A.html", "/path/file-with-a-*.html", False),
        ("Disallow: /path/foo-%24", "/path/foo-$", False),
        # /robots.txt is always allowed
        ("Disallow: /", "/robots.txt", True),
    ],
)
def test_rules_match_as_rfc_9309_says(rules: str, path: str, allowed: bool) -> None:
    policy = policy_from_response(200, f"User-agent: *\n{rules}\n".encode(), UA)
    assert policy.allowed(f"http://a.test{path}") is allowed


def test_rules_outside_a_group_are_ignored_and_sitemaps_read_anywhere() -> None:
    body = (
        b"Sitemap: http://a.test/first.xml\nDisallow: /before\n"
        b"User-agent: *\nDisallow: /x\nSitemap: http://a.test/in-group.xml\n"
    )
    policy = policy_from_response(200, body, UA)
    assert policy.allowed("http://a.test/before") and not policy.allowed("http://a.test/x")
    assert policy.sitemaps == ("http://a.test/first.xml", "http://a.test/in-group.xml")


# -- a disallowed spelling of an allowed page ----------------------------------------------------

SESSION_RULES = b"User-agent: *\nDisallow: /*sid=\nDisallow: /*?utm_\nDisallow: /*jsessionid\n"


@pytest.mark.parametrize(
    ("url", "key", "fetch"),
    [
        ("/forum?f=2", "/forum?f=2", "/forum?f=2"),  # allowed: itself
        ("/forum?f=2&sid=abc", "/forum?f=2", "/forum?f=2"),  # the key drops sid: it took it
        ("/page?utm_source=x&b=1&a=2", "/page?a=2&b=1", "/page?b=1&a=2"),  # its own order
        ("/a;jsessionid=1/b", "/a/b", "/a/b"),
        ("/x?sid=1&private=1", "/x?private=1", None),  # without sid: still disallowed
        ("/x?sid=1", "/x", None),  # (Disallow: /x below)
        # the key only sorts: never a way around a rule (MediaWiki's /index.php?title=Special:)
        (
            "/index.php?title=Special:Search&search=a",
            "/index.php?search=a&title=Special:Search",
            None,
        ),
    ],
)
def test_a_disallowed_url_is_fetched_without_the_parameters_its_key_drops(
    url: str, key: str, fetch: str | None
) -> None:
    rules = SESSION_RULES + b"Disallow: /*private=\nDisallow: /x\nDisallow: /*title=Special:\n"
    policy = policy_from_response(200, rules, UA)
    got = policy.fetchable(f"http://a.test{url}", f"http://a.test{key}")
    assert got == (None if fetch is None else f"http://a.test{fetch}")
    # the key on another host ([urls] strip_www): never
    assert policy.fetchable("http://www.a.test/p?sid=1", "http://a.test/p") is None
    assert policy_from_response(503, None, UA).fetchable("http://a.test/p?sid=1", key) is None


# -- Crawl-delay, in simulated time (tests/test_frontier.py's workers) ---------------------------


@pytest.mark.parametrize(
    ("text", "gap"),
    [
        ("User-agent: sieve-crawler\nCrawl-delay: 3\n", 3.0),
        ("User-agent: sieve-crawler\nCrawl-delay: 0.5\n", 2.0),  # never below [politeness] delay
        ("User-agent: Sieve-Crawler/1.0\nCrawl-delay: 4\n", 4.0),  # was 2.0: not ours
        ("User-agent: sieve\nCrawl-delay: 9\n", 2.0),  # was 9.0: another agent's
        ("User-agent: sieve-crawler\nDisallow: /x\n\nUser-agent: *\nCrawl-delay: 9\n", 2.0),
        ("User-agent: *\nCrawl-delay: 100\n", 30.0),  # capped at max_delay
    ],
)
def test_crawl_delay_of_our_group_only_raises_the_delay(text: str, gap: float) -> None:
    frontier = Frontier(Politeness(delay=2.0, max_delay=30.0))
    fill(frontier, hosts=1, per_host=3)
    log = simulate(lambda: crawl(frontier, fetch=0.0, robots=robots_body(text)))
    assert [(s, e.kind) for s, _, e in log] == [
        (0.0, EntryKind.ROBOTS),  # the robots.txt fetch counts as a request
        *((gap * i, EntryKind.PAGE) for i in (1, 2, 3)),
    ]


# -- the crawl, against a loopback server ------------------------------------------------------

RULES = "User-agent: *\nDisallow: /private/\n"
PAGE = "<a href='/private/x'>p</a> <a href='/public'>q</a>"


class Site:
    """One aiohttp handler for several virtual hosts (all on loopback through `[fetch] resolve`):
    ``hopsN.test``'s robots.txt is N redirects long, its last hop on ``far.test``;
    ``go.test/go`` redirects to ``target.test/private/z``; ``ports.test`` has one robots.txt per
    port; other robots.txt are 404. Every other path is `PAGE`. `hits` counts (host, port, path).
    """

    def __init__(self) -> None:
        self.hits: Counter[tuple[str, int, str]] = Counter()
        self.ports: list[int] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        host, port = request.url.host or "", request.url.port or 0
        path = request.path
        self.hits[(host, port, path)] += 1
        if path.startswith("/hop/"):  # /hop/K/N: hop K of N, the rules once K reaches N
            k, n = map(int, path.split("/")[2:4])
            if k < n:
                nxt = "far.test" if k + 1 == n else host
                raise web.HTTPFound(f"http://{nxt}:{port}/hop/{k + 1}/{n}")
            return web.Response(text=RULES)
        if path == "/robots.txt":
            if host.startswith("hops"):
                raise web.HTTPMovedPermanently(f"/hop/1/{host[4:].split('.')[0]}")
            if host == "target.test":
                return web.Response(text=RULES)
            if host == "ports.test":
                path = "/public" if port == self.ports[0] else "/private/"
                return web.Response(text=f"User-agent: *\nDisallow: {path}\n")
            raise web.HTTPNotFound()
        if path == "/go":
            raise web.HTTPFound(f"http://target.test:{port}/private/z")
        return web.Response(text=PAGE, content_type="text/html")


NAMES = ("hops5.test", "hops6.test", "far.test", "go.test", "target.test", "ports.test")


Results = dict[str, CrawlResult]


async def _crawl(seeds: Callable[[list[int]], list[str]], ports: int = 1) -> tuple[Site, Results]:
    site = Site()
    async with contextlib.AsyncExitStack() as stack:
        for _ in range(ports):
            site.ports.append(await stack.enter_async_context(serve(site.handle)))
        config = Config().override("fetch", resolve=dict.fromkeys(NAMES, "127.0.0.1"), retries=0)
        config = config.override("politeness", delay=0.0, ip_delay=0.0)
        config = config.override("crawl", concurrency=4, max_depth=1)
        config = config.override("scope", allowed_domains=["test"])
        async with asyncio.timeout(20), Crawler(config) as crawler:
            results = {r.url: r async for r in crawler.crawl(seeds(site.ports))}
    return site, results


def _kind(result: CrawlResult) -> int | str | None:
    return result.status if result.error is None else result.error.split(":", 1)[0]


async def test_robots_txt_redirects_are_followed_five_hops_to_another_host() -> None:
    site, results = await _crawl(lambda p: [f"http://hops{n}.test:{p[0]}/" for n in (5, 6)])
    port = site.ports[0]
    # 5 redirects (RFC 9309 2.3.1.2: at least five), the last to another host: its rules count
    assert _kind(results[f"http://hops5.test:{port}/private/x"]) == "robots"
    assert site.hits[("hops5.test", port, "/private/x")] == 0
    assert site.hits[("far.test", port, "/hop/5/5")] == 1
    # 6: not followed, the file "unavailable" (as a 4xx): everything allowed
    assert site.hits[("far.test", port, "/hop/6/6")] == 0
    assert site.hits[("hops6.test", port, "/hop/5/6")] == 1
    assert _kind(results[f"http://hops6.test:{port}/private/x"]) == 200
    assert site.hits[("hops5.test", port, "/robots.txt")] == 1  # once per host


async def test_robots_txt_is_per_scheme_host_and_port() -> None:
    site, results = await _crawl(lambda p: [f"http://ports.test:{n}/" for n in p], ports=2)
    first, second = site.ports
    # each port its own robots.txt, fetched once, its own rules
    assert site.hits[("ports.test", first, "/robots.txt")] == 1
    assert site.hits[("ports.test", second, "/robots.txt")] == 1
    got = {(port, path): _kind(results[f"http://ports.test:{port}{path}"])
           for port in (first, second) for path in ("/public", "/private/x")}  # fmt: skip
    assert got == {(first, "/public"): "robots", (first, "/private/x"): 200,
                   (second, "/public"): 200, (second, "/private/x"): "robots"}  # fmt: skip
    assert site.hits[("ports.test", first, "/public")] == 0
    assert site.hits[("ports.test", second, "/private/x")] == 0
    assert robots_url(host_key("https://ports.test/x")) == "https://ports.test/robots.txt"
    assert host_key("https://ports.test/x") != host_key("http://ports.test:443/x")


async def test_a_page_redirected_to_another_host_meets_that_hosts_robots_txt() -> None:
    site, results = await _crawl(lambda p: [f"http://go.test:{p[0]}/go"])
    port = site.ports[0]
    target = results[f"http://target.test:{port}/private/z"]
    assert target.error == "robots: disallowed by robots.txt"
    assert site.hits[("target.test", port, "/robots.txt")] == 1
    assert site.hits[("target.test", port, "/private/z")] == 0


async def test_a_page_found_first_with_a_disallowed_session_id_is_fetched_without_it() -> None:
    # a forum's robots.txt: Disallow: /*sid=, and its links carry sid= until a cookie is set;
    # the key (sid dropped) was taken by the refused URL, so the page was never fetched (nor
    # any later link to it)
    hits: Counter[str] = Counter()

    async def handle(request: web.Request) -> web.StreamResponse:
        hits[request.path_qs] += 1
        if request.path == "/robots.txt":
            return web.Response(body=SESSION_RULES)
        links = "<a href='/forum?f=2&sid=abc'>f</a> <a href='/page?utm_source=x'>p</a>"
        return web.Response(
            text=links + " <a href='/forum?f=2'>again</a>", content_type="text/html"
        )

    async with serve(handle) as port:
        config = Config().override("fetch", resolve={"a.test": "127.0.0.1"})
        config = config.override("politeness", delay=0.0, ip_delay=0.0)
        seeds = [f"http://a.test:{port}/", f"http://a.test:{port}/x?sid=1"]  # queued before
        async with asyncio.timeout(20), Crawler(config) as crawler:  # robots.txt is known
            results = {r.key: r async for r in crawler.crawl(seeds)}
    assert hits == Counter(["/robots.txt", "/", "/x", "/forum?f=2", "/page"])  # once each
    origin = f"http://a.test:{port}"
    got = {
        key.removeprefix(origin): (r.url.removeprefix(origin), r.status)
        for key, r in results.items()
    }
    assert got == {
        "/": ("/", 200),
        "/x": ("/x", 200),
        "/forum?f=2": ("/forum?f=2", 200),
        "/page": ("/page", 200),
    }
    assert crawler.stats.robots_refused == 0


async def test_the_redis_frontier_hands_out_the_page_without_its_session_id(
    clients: list[Redis], clock: Clock
) -> None:
    f = await frontier(clients[0], clock, respect_robots=True, user_agent=UA)
    await f.set_robots("http://a.test:80", policy_from_response(200, SESSION_RULES, UA),
                       SESSION_RULES)  # fmt: skip
    refused = "http://a.test/x?sid=1&utm_a=1"  # its key drops nothing: refused
    url, key = "http://a.test/forum?f=2&sid=abc", "http://a.test/forum?f=2"
    await f.put_many([Entry(url=refused, key=refused), Entry(url=url, key=key)])
    first, second = (await claim_one(f), await claim_one(f))  # a refusal holds no slot
    assert first is not None and (first.kind, first.url) == (EntryKind.REFUSED, refused)
    assert second is not None and (second.kind, second.url, second.key) == (
        EntryKind.PAGE,
        key,
        key,
    )
