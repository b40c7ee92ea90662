"""The parts of rendering that need no browser: the merge of rendered and static markup, auto
mode's signals, the subresources' fetches (a real fetcher on loopback), the settle, the config."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web

from crawler.config.load import config_from_mapping
from crawler.errors import ConfigError
from crawler.fetch.fetcher import Fetcher
from crawler.fetch.guard import AddressGuard
from crawler.fetch.response import Response
from crawler.fetch.settings import Transport
from crawler.parse.markup import parse_markup
from crawler.render.auto import script_driven
from crawler.render.dom import merged
from crawler.render.network import Subresources
from crawler.render.settle import Traffic, settled
from tests.support.server import serve

URL = "http://a.test/"


def markup(html: str):  # type: ignore[no-untyped-def]
    return parse_markup(html.encode(), URL, "text/html")


def test_merged_keeps_the_rendered_links_then_the_shadow_ones_then_the_static_ones() -> None:
    static = markup('<title>Loading</title><a href="/s" rel=nofollow>s</a><a href="/both">b</a>')
    rendered = markup('<title>App</title><a href="/both">b</a><a href="/r">r</a>'
                      '<meta name=robots content=nofollow>')  # fmt: skip
    out = merged(static, rendered, [("http://a.test/shadow", True), ("/r", False)])
    assert out.hrefs == ("/both", "/r", "http://a.test/shadow", "/s")
    assert out.nofollow == (2, 3)  # the shadow link's rel, the static one's
    assert out.title == "App"
    assert ("robots", "nofollow") in out.metas
    assert merged(static, markup("<p>no title</p>")).title == "Loading"


@pytest.mark.parametrize(
    ("html", "why"),
    [
        ('<div id="root"></div><script src=a.js></script>', "empty app root"),
        ("<div id='__next'>\n</div><script>1</script>", "empty app root"),
        ("<app-root></app-root><script>1</script>", "empty app root"),
        ("<noscript>You need to enable JavaScript to run this app.</noscript><script>1</script>"
         + "<p>" + "text " * 100 + '<a href="/1">1</a>' * 9, "noscript asks for JavaScript"),
        ("<script>1</script><p>Loading...</p>", "few links and little text"),
        ("<p>no script, no links</p>", None),  # nothing would change it
        ("<script>1</script>" + '<a href="/x">x</a>' * 9 + "<p>" + "word " * 100, None),
        ('<div id="root"><p>server-rendered</p></div><script>1</script>'
         + '<a href="/x">x</a>' * 9, None),
        ("<noscript><img src=pixel></noscript><script>1</script>" + '<a href="/x">x</a>' * 9
         + "<p>" + "word " * 100, None),
    ],
)  # fmt: skip
def test_auto_mode_signals(html: str, why: str | None) -> None:
    assert script_driven(html.encode(), markup(html)) == why


async def test_subresources_follow_redirects_cache_and_refuse() -> None:
    hits: list[str] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        hits.append(request.path)
        if request.path == "/moved":
            raise web.HTTPFound("/target")
        if request.path == "/loop":
            raise web.HTTPFound("/loop")
        if request.path == "/missing":
            raise web.HTTPNotFound()
        return web.Response(text=f"body of {request.path}", headers={"X-Test": "1"})

    recorded: list[Response] = []
    async with (
        serve(handler) as port,
        Fetcher(
            Transport(
                user_agent="t/1", resolve={"a.test": "127.0.0.1", "private.test": "127.0.0.2"}
            ),
            guard=AddressGuard(),
        ) as fetcher,
    ):
        assert fetcher.guard is not None
        fetcher.guard.allow_host("a.test")
        net = Subresources(fetcher.fetch, max_redirects=3, recorder=recorded.append)
        base = f"http://a.test:{port}"
        moved = await net.get(f"{base}/moved")
        assert moved is not None and moved.body == b"body of /target" and moved.status == 200
        assert moved.headers["x-test"] == "1" and "content-length" not in moved.headers
        again = await asyncio.gather(*[net.get(f"{base}/moved") for _ in range(5)])
        assert all(a is moved for a in again)  # cached: fetched once
        assert hits.count("/moved") == 1
        assert await net.get(f"{base}/loop") is None  # past max_redirects
        assert hits.count("/loop") == 4
        missing = await net.get(f"{base}/missing")
        assert missing is not None and missing.status == 404  # an answer: not cached
        assert await net.get(f"{base}/missing") is not None and hits.count("/missing") == 2
        assert await net.get(f"http://private.test:{port}/x") is None  # the SSRF guard
        assert net.refused == 2
        assert [r.url for r in recorded].count(f"{base}/target") == 1


async def test_settled_waits_for_the_network_quiet_after_the_load() -> None:
    loop = asyncio.get_running_loop()
    traffic = Traffic(loop.time)
    traffic.started()
    order: list[str] = []

    async def finish() -> None:
        await asyncio.sleep(0.05)
        order.append("finished")
        traffic.finished()

    task = asyncio.create_task(finish())
    await settled(traffic, 0.05, loop.time())
    order.append("settled")
    await task
    assert order == ["finished", "settled"]
    assert traffic.requests == 1 and traffic.in_flight == 0


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"mode": "sometimes"}, "mode: must be 'always' or 'auto'"),
        ({"tabs": 0}, "tabs: must be >= 1"),
        ({"tabs": 65}, "tabs: must be <= 64"),
        ({"timeout": 0}, "timeout: must be > 0"),
        ({"settle": -1}, "settle: must be >= 0"),
        ({"skip_types": ["image", "pictures"]}, "skip_types: unknown ['pictures']"),
    ],
)
def test_render_config_checks(table: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        config_from_mapping({"render": table})


def test_a_hosts_rule_may_say_render() -> None:
    config = config_from_mapping({"hosts": [{"match": "app.example", "render": True}]})
    assert config.hosts[0].render is True
    assert "render=True" in repr(config.hosts[0])


def test_origins_are_serialized_as_a_browser_does() -> None:
    from crawler.render.origin import origin_of

    assert origin_of("http://a.test:80/x?y") == "http://a.test"
    assert origin_of("https://A.test:8443/") == "https://a.test:8443"
    assert origin_of("http://[::1]:9/") == "http://[::1]:9"
    assert origin_of("about:blank") == origin_of("data:,x") == "null"


def test_an_answer_is_refused_as_a_browser_would_refuse_its_read() -> None:
    from crawler.render.network import Answer
    from crawler.render.origin import refusal

    a, b = "http://a.test", "http://b.test"
    star = {"access-control-allow-origin": "*"}

    def why(url: str, final: str, headers: dict[str, str], origin: str | None,
            kind: str = "fetch", secret: str = "") -> str | None:  # fmt: skip
        answer = Answer(200, headers, b"x", final)
        return refusal(url, answer, kind=kind, origin=origin, requester=a,
                       credentialed=lambda u: bool(secret) and secret in u)  # fmt: skip

    assert why(f"{b}/", f"{b}/", {}, a)  # no CORS header: Playwright would add them
    assert why(f"{b}/", f"{b}/", star, a) is None  # the answer's own: Chromium checks them
    assert why(f"{b}/", f"{b}/", star, a, secret="b.test")  # made with b.test's credentials
    assert why(f"{a}/r", f"{b}/", star, None, secret="b.test")  # ... reached by a redirect
    assert why(f"{a}/r", f"{b}/", {}, None)  # a same-origin fetch redirected to another origin
    assert why(f"{a}/r", f"{b}/", {}, None, kind="script") is None  # a script: opaque, loaded
    assert why(f"{a}/", f"{a}/", {}, None, secret="a.test") is None  # its own credentials
