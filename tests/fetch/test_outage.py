"""The crawl-wide connectivity gate (crawler.fetch.outage), on an injected clock: backoff and
jitter, one probe at a time, the give-up, the reset on an answer, the network-signal rule; then the
asynchronous gate itself with its real backoff in simulated time (the `simtime` marker,
tests/conftest.py): the probes' times and the give-up are asserted exactly."""

from __future__ import annotations

import asyncio
import errno
import random
import socket

import aiohttp
import pytest

from crawler.errors import (
    ConnectError,
    DNSError,
    FetchError,
    FetchTimeout,
    NetworkUnavailable,
    ProxyError,
    ProxyUnavailable,
)
from crawler.fetch.outage import POISON, Outage
from crawler.fetch.response import Response
from crawler.fetch.translate import Proxied, translate_error


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FixedRandom(random.Random):
    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def random(self) -> float:
        return self.value


def proxy_down() -> ProxyError:
    return ProxyError("cannot connect to the proxy 127.0.0.1:3128: Connection refused")


def eai_again(host: str) -> FetchError:
    key = aiohttp.client_reqrep.ConnectionKey(host, 80, False, True, None, None, None)
    exc = aiohttp.ClientConnectorDNSError(key, socket.gaierror(socket.EAI_AGAIN, "Temporary"))
    return translate_error(exc)


def nxdomain(host: str) -> FetchError:
    key = aiohttp.client_reqrep.ConnectionKey(host, 80, False, True, None, None, None)
    exc = aiohttp.ClientConnectorDNSError(key, socket.gaierror(socket.EAI_NONAME, "Unknown"))
    return translate_error(exc)


def gate(give_up: float = 300.0, jitter: float = 0.0) -> tuple[Outage, Clock]:
    clock = Clock()
    return Outage(give_up, clock=clock, rng=FixedRandom(jitter)), clock


def paused(outage: Outage) -> bool:  # (not narrowed by mypy like the property)
    return outage.paused


def probing(outage: Outage) -> bool:
    return outage.probing


def response(status: int = 200, url: str = "http://a.test/") -> Response:
    return Response(url=url, status=status, headers=(), body=b"", latency=0.0, elapsed=0.0)


# -- the state machine --------------------------------------------------------------------------


@pytest.mark.parametrize("jitter", [0.0, 0.5, 0.999999])
def test_the_backoff_doubles_from_1_s_to_30_s_within_its_jitter(jitter: float) -> None:
    outage, _ = gate(jitter=jitter)
    for failures, ceiling in [(1, 1), (2, 2), (3, 4), (4, 8), (5, 16), (6, 30), (7, 30), (99, 30)]:
        wait = outage.delay(failures)
        assert ceiling * 0.5 <= wait < ceiling
        assert wait == pytest.approx(ceiling * (0.5 + 0.5 * jitter))


def test_real_jitter_stays_within_half_to_whole_of_the_step() -> None:
    outage = Outage(rng=random.Random(7))
    waits = [outage.delay(3) for _ in range(1000)]
    assert min(waits) >= 2.0 and max(waits) < 4.0
    assert max(waits) - min(waits) > 1.5  # spread out, not a constant


def test_a_proxy_failure_pauses_at_once_and_one_probe_goes_at_a_time() -> None:
    outage, clock = gate(jitter=0.0)
    assert repr(outage).startswith("<Outage open")
    assert outage.signal(proxy_down(), "a.test", proxied=True) is True  # held, not failed
    assert outage.paused and outage.kind == "proxy" and outage.pauses == 1
    assert "paused(proxy" in repr(outage)
    assert outage.probe_at == clock.now + 0.5  # 1 s step, jitter factor 0.5
    assert outage.take_probe() is False  # not before its time
    clock.now += 0.5
    assert outage.take_probe() is True
    assert outage.take_probe() is False  # one probe at a time
    assert "probing=True" in repr(outage)
    # another fetch in flight fails meanwhile: held, the backoff unchanged
    assert outage.signal(proxy_down(), "b.test", proxied=True) is True
    assert outage.failures == 1
    # the probe fails: the next one after the doubled step
    assert outage.signal(proxy_down(), "a.test", proxied=True, probe=True) is True
    outage.end_probe()
    assert outage.failures == 2 and outage.probe_at == clock.now + 1.0
    assert outage.take_probe() is False
    clock.now += 1.0
    assert outage.take_probe() is True


def test_an_answer_ends_the_outage_and_resets_the_backoff() -> None:
    outage, clock = gate()
    outage.signal(proxy_down(), "a.test", proxied=True)
    for _ in range(5):
        clock.now = outage.probe_at
        assert outage.take_probe()
        outage.signal(proxy_down(), "a.test", proxied=True, probe=True)
        outage.end_probe()
    assert outage.failures == 6
    outage.answered(proxied=False)  # a NO_PROXY host answering tells nothing of the proxy
    assert paused(outage)
    outage.answered(proxied=True)
    assert not paused(outage) and outage.resumes == 1 and repr(outage).startswith("<Outage open")
    assert outage.stats() == {"pauses": 1, "probes": 5, "paused_seconds": clock.now - 1000.0}
    assert outage.take_probe() is False  # no outage: nothing to probe
    outage.signal(proxy_down(), "a.test", proxied=True)  # a new outage starts afresh
    assert outage.failures == 1 and outage.pauses == 2


def test_a_failure_that_is_not_a_signal_answers_and_a_timeout_does_not() -> None:
    outage, clock = gate()
    outage.signal(proxy_down(), "a.test", proxied=True)
    clock.now = outage.probe_at
    assert outage.take_probe()
    timeout = FetchTimeout("timed out", waiting=True)
    assert outage.signal(timeout, "a.test", proxied=True, probe=True) is False  # its own
    outage.end_probe()
    assert outage.paused and outage.failures == 2  # proves nothing: probed again later
    refused = ConnectError("the proxy answered 502 Bad Gateway to CONNECT a.test:443")
    assert outage.signal(refused, "a.test", proxied=True) is False  # the proxy answered
    assert not outage.paused


def test_the_give_up_ends_the_outage_with_a_fatal_error() -> None:
    outage, clock = gate(give_up=60.0)
    outage.signal(proxy_down(), "a.test", proxied=True)
    clock.now += 59.9
    outage.check()  # not yet
    clock.now += 0.1
    with pytest.raises(ProxyUnavailable) as caught:
        outage.check()
    assert str(caught.value) == (
        "the proxy has not answered for 60 s ([fetch] outage_give_up = 60): "
        "proxy: cannot connect to the proxy 127.0.0.1:3128: Connection refused"
    )
    network, clock = gate(give_up=10.0)
    for host in ("a.test", "b.test"):
        network.signal(eai_again(host), host, proxied=False)
    clock.now += 10.0
    with pytest.raises(NetworkUnavailable) as raised:
        network.check()
    assert not isinstance(raised.value, ProxyUnavailable)
    assert "dns: cannot resolve b.test: temporary failure" in str(raised.value)


def test_a_give_up_of_0_never_gives_up() -> None:
    outage, clock = gate(give_up=0.0)
    outage.signal(proxy_down(), "a.test", proxied=True)
    clock.now += 10**9
    outage.check()
    assert outage.paused


def test_a_407_from_the_proxy_is_fatal_at_once() -> None:
    outage, _ = gate()
    refused = ProxyError("the proxy 127.0.0.1:3128 refused the credentials", status=407)
    with pytest.raises(ProxyUnavailable, match="refused the credentials"):
        outage.signal(refused, "a.test", proxied=True)


def test_a_network_signal_from_one_host_is_its_own_from_two_an_outage() -> None:
    outage, _ = gate()
    assert outage.signal(eai_again("a.test"), "a.test", proxied=False) is False
    assert not paused(outage)  # one host: maybe its DNS server only (SERVFAIL)
    assert outage.signal(eai_again("a.test"), "a.test", proxied=False) is False
    outage.answered(proxied=False)  # another host answered between: the streak is gone
    assert outage.signal(eai_again("b.test"), "b.test", proxied=False) is False
    assert outage.signal(eai_again("c.test"), "c.test", proxied=False) is True
    assert outage.paused and outage.kind == "network"


def test_a_single_host_crawl_pauses_after_a_streak_of_its_own_signals() -> None:
    outage, _ = gate()
    held = [outage.signal(eai_again("a.test"), "a.test", proxied=False) for _ in range(3)]
    assert held == [False, False, True]


def test_names_that_do_not_exist_never_pause_the_crawl() -> None:
    outage, _ = gate()
    for i in range(50):
        error = nxdomain(f"dead{i}.test")
        assert isinstance(error, DNSError) and not error.network
        assert outage.signal(error, f"dead{i}.test", proxied=False) is False
    assert not outage.paused and outage.pauses == 0


def test_what_translate_flags_as_a_network_signal() -> None:
    key = aiohttp.client_reqrep.ConnectionKey("a.test", 80, False, True, None, None, None)
    unreachable = OSError(errno.ENETUNREACH, "Network is unreachable")
    refused = OSError(errno.ECONNREFUSED, "Connection refused")
    assert translate_error(aiohttp.ClientConnectorError(key, unreachable)).network
    assert translate_error(aiohttp.ClientOSError(errno.ENETDOWN, "Network is down")).network
    assert not translate_error(aiohttp.ClientConnectorError(key, refused)).network
    assert eai_again("a.test").network and not nxdomain("a.test").network
    # the proxy's name not resolving is the proxy's failure, told apart by the name
    proxy = Proxied("proxy.test", 3128, connecting=True, tunnel=False)
    pkey = key._replace(host="proxy.test", port=3128)
    dns = aiohttp.ClientConnectorDNSError(pkey, socket.gaierror(socket.EAI_NONAME, "Unknown"))
    error = translate_error(dns, proxy=proxy)
    assert isinstance(error, ProxyError)
    assert str(error) == "cannot resolve the proxy's name proxy.test"
    target = aiohttp.ClientConnectorDNSError(key, socket.gaierror(socket.EAI_NONAME, "Unknown"))
    assert type(translate_error(target, proxy=proxy)) is DNSError  # (a NO_PROXY host's name)


# -- the asynchronous gate ----------------------------------------------------------------------


def simulated_gate(give_up: float = 300.0) -> Outage:
    """The gate with its real backoff (1 s doubling up to 30 s), jitter factor 0.5, on the
    simulated loop's clock: the waits below are exact."""
    return Outage(give_up, clock=asyncio.get_running_loop().time, rng=FixedRandom(0.0))


def now() -> float:
    return asyncio.get_running_loop().time()


@pytest.mark.simtime
async def test_a_held_fetch_is_made_again_once_the_proxy_answers() -> None:
    outage = simulated_gate()
    calls: list[float] = []

    async def attempt() -> Response:
        calls.append(now())
        if len(calls) < 6:
            raise proxy_down()
        return response()

    result = await outage.through(attempt, "a.test", proxied=True)
    assert result.status == 200
    # the probes after half of 1, 2, 4 and 8 s (the jitter factor 0.5), then of 16 s
    assert calls == [0.0, 0.5, 1.5, 3.5, 7.5, 15.5]
    assert not outage.paused and outage.pauses == 1 and outage.resumes == 1
    assert outage.probes == 5
    assert outage.stats() == {"pauses": 1, "probes": 5, "paused_seconds": 15.5}


@pytest.mark.simtime
async def test_only_one_probe_is_in_flight_while_paused() -> None:
    outage = simulated_gate()
    up = False
    flying = peak = 0  # attempts begun during the outage (the probes) in flight
    probes: list[float] = []

    async def attempt() -> Response:
        nonlocal flying, peak
        probe = outage.paused
        flying += probe
        peak = max(peak, flying)
        if probe:
            probes.append(now())
        try:
            await asyncio.sleep(0.1)  # each fetch takes 100 ms
            if not up:
                raise proxy_down()
            return response()
        finally:
            flying -= probe

    tasks = [asyncio.create_task(outage.through(attempt, f"h{i}.test", proxied=True))
             for i in range(20)]  # fmt: skip
    await asyncio.sleep(10.0)
    # all 20 failed at 0.1 s; then one probe at a time, each 100 ms, the backoff doubling
    assert outage.paused and peak == 1
    assert probes == pytest.approx([0.6, 1.7, 3.8, 7.9])
    up = True
    results = await asyncio.gather(*tasks)
    assert [r.status for r in results] == [200] * 20 and not outage.paused
    assert probes == pytest.approx([0.6, 1.7, 3.8, 7.9, 16.0]) and peak == 1
    assert now() == pytest.approx(16.2)  # the held 19 went together once the probe answered


@pytest.mark.simtime
async def test_waiting_fetches_give_up_together_with_the_fatal_error() -> None:
    outage = simulated_gate(give_up=60.0)

    async def attempt() -> Response:
        raise proxy_down()

    tasks = [asyncio.create_task(outage.through(attempt, "a.test", proxied=True)) for _ in range(5)]
    done = await asyncio.gather(*tasks, return_exceptions=True)
    assert all(isinstance(e, ProxyUnavailable) for e in done)
    assert now() == 60.0  # at the give-up, not a probe later
    assert outage.probes == 7  # at 0.5, 1.5, 3.5, 7.5, 15.5, 31.5 and 47.5 s (the next: 62.5)


@pytest.mark.simtime
async def test_a_cancelled_probe_lets_another_one_go() -> None:
    outage = simulated_gate()
    outage.signal(proxy_down(), "a.test", proxied=True)
    hang = asyncio.Event()

    async def hanging() -> Response:
        await hang.wait()
        return response()

    async def working() -> Response:
        return response()

    stuck = asyncio.create_task(outage.through(hanging, "a.test", proxied=True))
    await asyncio.sleep(1.0)
    assert probing(outage) and outage.probes == 1  # it went at 0.5 s and hangs
    stuck.cancel()
    await asyncio.gather(stuck, return_exceptions=True)
    assert not probing(outage)
    answer = await asyncio.wait_for(outage.through(working, "b.test", proxied=True), 1)
    assert answer.status == 200 and outage.probes == 2
    assert now() == 1.0  # at once: its probe time had come


async def test_a_url_failing_alone_in_several_outages_fails_with_its_error() -> None:
    """The same rule in real time, with millisecond backoffs (its exact figures in simulated
    time: the next test)."""
    outage = Outage(5.0, base=0.001, cap=0.001)

    async def poison() -> Response:  # a proxy dropping CONNECT to this target only
        raise ProxyError("the proxy 127.0.0.1:3128 closed the connection before answering")

    async def fine() -> Response:
        return response()

    async def others() -> None:
        while True:
            await outage.through(fine, "b.test", proxied=True)
            await asyncio.sleep(0.001)

    helper = asyncio.create_task(others())
    try:
        with pytest.raises(ProxyError):
            await asyncio.wait_for(outage.through(poison, "a.test", proxied=True), 2)
    finally:
        helper.cancel()
    assert outage.pauses >= POISON


@pytest.mark.simtime
async def test_a_poison_url_does_not_keep_the_probe_from_the_others() -> None:
    """A fetch whose probe failed waited again ahead of the others and took every next probe:
    no other fetch ended the outage, so the crawl gave up instead of the one URL failing."""
    outage = simulated_gate()

    async def poison() -> Response:
        raise ProxyError("the proxy 127.0.0.1:3128 closed the connection before answering")

    async def fine() -> Response:
        return response()

    async def others() -> None:
        while True:
            await outage.through(fine, "b.test", proxied=True)
            await asyncio.sleep(0.1)

    helper = asyncio.create_task(others())
    try:
        with pytest.raises(ProxyError) as raised:
            await outage.through(poison, "a.test", proxied=True)
    finally:
        helper.cancel()
    assert type(raised.value) is ProxyError  # the URL's own failure, not the crawl's give-up
    # each outage ended by the others' probe; the third is the URL's own failure. The probes go
    # in the order the fetches came to the gate: the URL's own (0.5 s), then the others' (1 s
    # later) at the latest
    assert outage.pauses == POISON and outage.resumes == POISON - 1
    assert now() <= (0.5 + 1.0) * (POISON - 1)


async def test_a_407_to_a_plain_http_request_through_the_proxy_is_fatal() -> None:
    outage = Outage()

    async def attempt() -> Response:
        return response(status=407)

    with pytest.raises(ProxyUnavailable, match="407"):
        await outage.through(attempt, "a.test", proxied=True)
    assert (await outage.through(attempt, "a.test", proxied=False)).status == 407  # the host's

    async def tunnelled() -> Response:  # inside a CONNECT tunnel: the target's answer
        return response(status=407, url="https://a.test/")

    assert (await outage.through(tunnelled, "a.test", proxied=True)).status == 407


def test_a_connect_timeout_is_the_proxys_only_where_its_the_only_connection() -> None:
    timeout = aiohttp.ConnectionTimeoutError("Connection timeout to host http://a.test/")
    plain = Proxied("10.1.2.3", 3128, connecting=True, tunnel=False)
    error = translate_error(timeout, proxy=plain)
    assert isinstance(error, ProxyError)
    assert str(error) == "connecting to the proxy 10.1.2.3:3128 timed out"
    # through CONNECT the timeout may be the target's TLS handshake in the tunnel
    tunnel = plain._replace(tunnel=True)
    assert not isinstance(translate_error(timeout, proxy=tunnel), ProxyError)
    # once the request went out, a reset may be the target's (the proxy relays it)
    sent = plain._replace(connecting=False)
    assert type(translate_error(aiohttp.ServerDisconnectedError(), proxy=sent)).__name__ == (
        "ConnectionReset"
    )
