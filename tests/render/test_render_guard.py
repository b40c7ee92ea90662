"""A rendered page's scripts reach nothing the crawler's fetcher would not: checked server-side.

The page (on a seed host, so its own address is allowed) tries a private address (127.0.0.2,
which no seed resolves to) every way a page can: an image, an iframe, fetch, a worker's fetch, a
name resolving there, prefetch and speculation rules, preconnect; and its own server by the
ways a crawler never uses (a beacon, a WebSocket, an event stream, a form POST). A TCP listener on
127.0.0.2 counts every connection it accepts (a preconnect included): none; the page's server
sees only GETs the fetcher sent, with the crawler's User-Agent.

WebRTC has a network of its own (UDP): a page whose peer connections have STUN and TURN servers
and remote ICE candidates at 127.0.0.2 and [::1] sends no datagram to a UDP listener there.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from crawler.engine.crawler import Crawler
from tests.support.render import crawl_all, requires_browser
from tests.support.server import serve, site_config

pytestmark = requires_browser

UA = "renderbot/1.0 (+https://example.invalid/bot)"
PRIVATE = "127.0.0.2"


def page(site_port: int, private_port: int) -> str:
    p = f"http://{PRIVATE}:{private_port}"
    named = f"http://private.test:{private_port}"
    own = f"http://page.test:{site_port}"
    rules = json.dumps(
        {
            "prefetch": [{"source": "list", "urls": [f"{p}/spec-prefetch"]}],
            "prerender": [{"source": "list", "urls": [f"{p}/spec-prerender"]}],
        }
    )
    worker = f"fetch('{p}/worker-fetch').catch(() => 0)"
    return f"""<!DOCTYPE html><html><head><title>Reaching out</title>
<link rel="preconnect" href="{p}"><link rel="dns-prefetch" href="{named}">
<link rel="prefetch" href="{p}/link-prefetch"><link rel="stylesheet" href="{p}/style.css">
<script type="speculationrules">{rules}</script></head>
<body><img src="{p}/img.png"><iframe src="{p}/iframe"></iframe>
<a href="/allowed-link">a link</a>
<form id="f" method="post" action="{own}/form"><input name="q" value="1"></form>
<script>
  fetch('{p}/fetch').catch(() => 0);
  fetch('{named}/named').catch(() => 0);
  fetch('{own}/allowed').then(r => r.text()).then(t => {{
    const a = document.createElement('a'); a.href = t; document.body.appendChild(a);
    location.href = '/navigated-to';  // refused: a link the crawl follows
    setTimeout(() => document.getElementById('f').submit(), 100);  // a POST: refused
  }});
  navigator.sendBeacon('{own}/beacon', 'x');
  navigator.sendBeacon('{p}/beacon', 'x');
  try {{ new WebSocket('ws://page.test:{site_port}/ws'); }} catch (e) {{}}
  try {{ new WebSocket('ws://{PRIVATE}:{private_port}/ws'); }} catch (e) {{}}
  try {{ new EventSource('{own}/events'); }} catch (e) {{}}
  new Worker(URL.createObjectURL(new Blob([`{worker}`], {{type: 'text/javascript'}})));
</script></body></html>"""


@pytest.fixture
async def private() -> AsyncIterator[tuple[int, list[bytes]]]:
    """A TCP listener on 127.0.0.2 that records what each connection sends first."""
    seen: list[bytes] = []

    async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(b"connect")
        with contextlib.suppress(TimeoutError):
            seen.append(await asyncio.wait_for(reader.read(200), 2))
        writer.close()

    server = await asyncio.start_server(accepted, PRIVATE, 0)
    async with server:
        yield server.sockets[0].getsockname()[1], seen


@pytest.mark.slow
async def test_a_pages_scripts_reach_no_address_and_send_nothing_but_the_fetchers_gets(
    private: tuple[int, list[bytes]],
) -> None:
    private_port, connections = private
    hits: list[tuple[str, str, str]] = []
    ports: list[int] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        hits.append((request.method, request.path, request.headers.get("User-Agent", "")))
        if request.path == "/":
            return web.Response(text=page(ports[0], private_port), content_type="text/html")
        if request.path == "/allowed":
            return web.Response(text="/made-from-fetched-text")
        return web.Response(text="<title>x</title>", content_type="text/html")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    ports.append(int(runner.addresses[0][1]))
    try:
        config = site_config_for(ports[0], private_port)
        for skip in (("image", "font", "media"), ()):  # the default, then every type sent
            async with Crawler(config.override("render", skip_types=skip)) as crawler:
                results = await crawl_all(crawler, [f"http://page.test:{ports[0]}/"])
            assert results[f"http://page.test:{ports[0]}/"].rendered
            assert f"http://page.test:{ports[0]}/made-from-fetched-text" in results
            assert f"http://page.test:{ports[0]}/navigated-to" in results
            assert crawler.fetcher.guard is not None and crawler.fetcher.guard.blocked > 0
        await asyncio.sleep(1.0)  # anything late would have arrived by now
    finally:
        await runner.cleanup()
    assert connections == [], "the private address was reached"
    assert {method for method, _, _ in hits} == {"GET"}  # no beacon, no form POST
    paths = {path for _, path, _ in hits}
    assert "/allowed" in paths  # the fetch the guard allows went through the fetcher
    assert not paths & {"/ws", "/events", "/beacon", "/form"}
    assert {agent for _, _, agent in hits} == {UA}  # every request is the fetcher's


def site_config_for(port: int, private_port: int):  # type: ignore[no-untyped-def]
    from crawler.config.load import Config

    config = Config().override("fetch", resolve={"page.test": "127.0.0.1",
                                                  "private.test": PRIVATE})  # fmt: skip
    config = config.override("politeness", delay=0.0, ip_delay=0.0, respect_robots=False)
    config = config.override("crawl", user_agent=UA, max_depth=1)
    return config.override("render", enabled=True, timeout=30.0)


_ = site_config  # (the fixture site's config is not used here: a page of its own)


def webrtc_page(port: int, hosts: list[str]) -> str:
    """A page opening peer connections whose STUN and TURN servers and remote ICE candidates
    are `hosts` at `port`; it keeps its network busy for a second so that ICE has time."""
    servers = []
    candidates = []
    for i, host in enumerate(hosts):
        at = f"[{host}]" if ":" in host else host
        servers += [{"urls": f"stun:{at}:{port}"},
                    {"urls": f"turn:{at}:{port}?transport=udp", "username": "u",
                     "credential": "p"}]  # fmt: skip
        candidates.append(f"candidate:{i + 1} 1 udp 2122260223 {host} {port} typ host")
    return f"""<!DOCTYPE html><html><head><title>WebRTC</title></head><body><script>
const servers = {json.dumps(servers)}, candidates = {json.dumps(candidates)};
const tries = [];
for (const make of [() => window.RTCPeerConnection, () => window.webkitRTCPeerConnection]) {{
  try {{ const PC = make(); if (PC) tries.push(PC); }} catch (e) {{}}
}}
async function peer(PC) {{
  const a = new PC({{iceServers: servers, iceTransportPolicy: 'all'}});
  const b = new PC();
  a.createDataChannel('x');
  await a.setLocalDescription(await a.createOffer());
  await b.setRemoteDescription(a.localDescription);
  await b.setLocalDescription(await b.createAnswer());
  await a.setRemoteDescription(b.localDescription);
  for (const candidate of candidates)
    await a.addIceCandidate({{candidate, sdpMid: '0', sdpMLineIndex: 0}}).catch(() => 0);
}}
for (const PC of tries) peer(PC).catch(() => 0);
const a = document.createElement('a');  // whether the page still has WebRTC, as a link
a.href = '/rtc-' + typeof window.RTCPeerConnection; document.body.appendChild(a);
fetch('/slow').catch(() => 0);  // a second of network: ICE runs meanwhile
</script></body></html>"""


class Datagrams(asyncio.DatagramProtocol):
    def __init__(self, seen: list[tuple[str, bytes]]) -> None:
        self.seen = seen

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        self.seen.append((str(addr[0]), data[:20]))


async def test_a_pages_webrtc_sends_no_datagram_to_a_private_address() -> None:
    """STUN and TURN servers and remote ICE candidates at 127.0.0.2 and [::1]: no datagram."""
    loop = asyncio.get_running_loop()
    seen: list[tuple[str, bytes]] = []
    transport, _ = await loop.create_datagram_endpoint(lambda: Datagrams(seen), (PRIVATE, 0))
    port = int(transport.get_extra_info("sockname")[1])
    transports = [transport]
    hosts = [PRIVATE]
    with contextlib.suppress(OSError):  # [::1] on the same port, where there is IPv6
        six, _ = await loop.create_datagram_endpoint(lambda: Datagrams(seen), ("::1", port))
        transports.append(six)
        hosts.append("::1")

    async def handler(request: web.Request) -> web.StreamResponse:
        if request.path == "/slow":
            await asyncio.sleep(1.0)
            return web.Response(text="ok")
        return web.Response(text=webrtc_page(port, hosts), content_type="text/html")

    try:
        async with serve(handler) as site_port:
            config = site_config_for(site_port, port)
            async with Crawler(config) as crawler:
                results = await crawl_all(crawler, [f"http://page.test:{site_port}/"])
                assert results[f"http://page.test:{site_port}/"].rendered
                assert f"http://page.test:{site_port}/rtc-undefined" in results  # taken away
                await asyncio.sleep(2.0)  # the browser still open: what ICE sends late
    finally:
        for each in transports:
            each.close()
    assert seen == [], f"{len(seen)} datagrams reached a private address: {seen[:5]}"
