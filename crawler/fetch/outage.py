"""The crawl-wide connectivity gate: a proxy that is down, or the crawler's own network going
down, pauses the crawl instead of failing every host.

Without it, every fetch through a dead proxy failed as the *target's* failure: each host was
backed off, then circuit-broken (``host_down``), and the whole crawl was lost to one proxy
restart. `Outage` sits between the fetcher and the network (`crawler.fetch.fetcher.Fetcher.fetch`):

- *Outage signals*: a `ProxyError` (the proxy refused, did not resolve, closed before answering)
  pauses at once. A sign of the crawler's own network being down (``FetchError.network``:
  "Network is unreachable", a DNS resolver that cannot be reached, EAI_AGAIN) pauses only when it
  came from ``HOSTS`` (2) distinct hosts, or ``STREAK`` (3) times in a row from one host, with no
  answer in between: one host whose DNS server fails (SERVFAIL is EAI_AGAIN too) stays that
  host's failure while the others answer; a single-host crawl still pauses (and gives up). A
  name that does not exist (NXDOMAIN) is never a signal: seed lists are full of dead domains.
- *Paused*: every fetch waits (the URLs stay with their workers and in the frontier, nothing is
  held against the hosts or the URLs' retries, politeness is unchanged). One fetch at a time is
  let through as a *probe*, after an exponential backoff (``base`` 1 s doubling up to ``cap``
  30 s, times a jitter factor in [0.5, 1)). An *answer* (any response, or any failure but a
  timeout, a blocked address or another signal) resumes the crawl; through a proxy, only an
  answer that came through it. A fetch that failed so is made again once the gate opens.
- *Give up*: after ``give_up`` seconds of continuous outage (``[fetch] outage_give_up``, 0:
  never) every waiting fetch raises `ProxyUnavailable` / `NetworkUnavailable`, which ends the
  crawl (`crawler.engine.crawler`); with a crawl state the unfinished URLs stay pending. A 407 from
  the proxy (bad credentials) raises `ProxyUnavailable` at once: no retry would fix it.
- A URL whose fetch fails with a signal in ``POISON`` (3) distinct outages, each ended by other
  fetches getting through, fails with its error (a proxy dropping CONNECT to one target only).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final

from crawler.errors import (
    BlockedAddress,
    FetchError,
    FetchTimeout,
    NetworkUnavailable,
    ProxyError,
    ProxyUnavailable,
    TooSlow,
)

if TYPE_CHECKING:
    from crawler.fetch.response import Response

__all__ = ["Outage"]

log = logging.getLogger(__name__)

HOSTS: Final = 2  # distinct hosts giving a network signal, no answer between: an outage
STREAK: Final = 3  # or signals in a row from one host (a single-host crawl)
POISON: Final = 3  # outages one fetch failed in before its failure is its own
_NEUTRAL = (FetchTimeout, TooSlow, BlockedAddress)  # prove nothing about the network


class Outage:
    """The gate of the module docstring; `clock` (``time.monotonic``, the event loop's clock)
    measures the backoff and the give-up, `rng` draws the jitter."""

    __slots__ = ("_clock", "_line", "_rng", "_signals", "_tickets", "_wake", "base", "cap", "cause",
                 "failures",
                 "give_up", "kind", "paused_for", "pauses", "probe_at", "probes", "probing",
                 "resumes", "since")  # fmt: skip

    def __init__(
        self,
        give_up: float = 300.0,
        *,
        base: float = 1.0,
        cap: float = 30.0,
        clock: Callable[[], float] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if not 0.0 <= give_up < float("inf"):
            raise ValueError(f"give_up must be a finite number of seconds >= 0, got {give_up!r}")
        if not 0.0 < base <= cap < float("inf"):
            raise ValueError(f"need 0 < base <= cap (seconds), got base={base!r} cap={cap!r}")
        self.give_up = float(give_up)
        self.base = float(base)
        self.cap = float(cap)
        self._clock = clock or time.monotonic
        self._rng = rng or random.Random()
        self._wake = asyncio.Event()  # set (and replaced) when the state changes
        self._line: deque[int] = deque()  # the waiting fetches' tickets, longest waiting first
        self._tickets = itertools.count()
        self._signals: dict[str, int] = {}  # network signals since the last answer, by host
        self.since: float | None = None  # when the outage began; None: no outage
        self.kind = ""  # "proxy" or "network"
        self.cause = ""  # the last signal's error, as a result's error field spells it
        self.failures = 0  # failed attempts in this outage (the backoff's exponent)
        self.probe_at = float("-inf")  # no probe before
        self.probing = False  # a probe is in flight
        self.pauses = 0
        self.resumes = 0
        self.probes = 0
        self.paused_for = 0.0  # seconds paused by the outages that ended

    @property
    def paused(self) -> bool:
        return self.since is not None

    def delay(self, failures: int) -> float:
        """The wait before the next probe after `failures` failed attempts: jittered backoff."""
        ceiling = min(self.cap, self.base * 2.0 ** min(failures - 1, 64))
        return ceiling * (0.5 + 0.5 * self._rng.random())

    # -- the state machine (synchronous, on the injected clock) -----------------------------

    def signal(self, error: FetchError, host: str, *, proxied: bool, probe: bool = False) -> bool:
        """A fetch of `host` (`proxied`: through the proxy; `probe`: the probe) failed with
        `error`: True when it is held (an outage: the fetch is made again once the gate opens),
        False when it is the URL's failure as usual. Raises `ProxyUnavailable` for a 407."""
        now = self._clock()
        if isinstance(error, ProxyError):
            if error.status == 407:
                raise ProxyUnavailable(str(error)) from None
            kind = "proxy"
        elif error.network:
            kind = "network"
            if self.since is None:
                count = self._signals[host] = self._signals.get(host, 0) + 1
                if len(self._signals) < HOSTS and count < STREAK:
                    return False  # one host so far: its own failure (module docstring)
        else:
            if not isinstance(error, _NEUTRAL):
                self.answered(proxied=proxied)
            elif probe:
                self._probe_failed(now)
            return False
        self.cause = error.describe()
        if self.since is None:
            self.since, self.kind, self.failures = now, kind, 1
            self.probe_at = now + self.delay(1)
            self.pauses += 1
            log.warning("fetching paused: %s; the %s is probed until it answers (giving up after "
                        "%s)", self.cause, _what(kind), _seconds(self.give_up))  # fmt: skip
        elif probe:
            self.kind = kind
            self._probe_failed(now)
        return True

    def answered(self, *, proxied: bool) -> None:
        """A fetch got an answer (`proxied`: through the proxy): an outage is over."""
        if self.since is None:
            if self._signals:
                self._signals.clear()
            return
        if self.kind == "proxy" and not proxied:
            return  # a NO_PROXY host answering tells nothing about the proxy
        lasted = self._clock() - self.since
        log.warning("fetching again: the %s answered after %.1f s", _what(self.kind), lasted)
        self.paused_for += lasted
        self.since, self.failures, self.probe_at = None, 0, float("-inf")
        self._signals.clear()
        self.resumes += 1
        self._notify()

    def take_probe(self, ticket: int | None = None) -> bool:
        """During an outage: True (and the probe is taken) when a probe may go now; with a
        `ticket` (a fetch waiting at the gate), only to the fetch that has waited longest."""
        if self.since is None or self.probing or self._clock() < self.probe_at:
            return False
        if ticket is not None and self._line and self._line[0] != ticket:
            return False
        self.probing = True
        self.probes += 1
        return True

    def end_probe(self) -> None:
        self.probing = False
        self._notify()

    def check(self) -> None:
        """Raise the give-up error once the outage has lasted `give_up` seconds."""
        if self.since is None or not self.give_up:
            return
        lasted = self._clock() - self.since
        if lasted >= self.give_up:
            cls = ProxyUnavailable if self.kind == "proxy" else NetworkUnavailable
            raise cls(f"the {_what(self.kind)} has not answered for {lasted:.0f} s ([fetch] "
                      f"outage_give_up = {self.give_up:g}): {self.cause}")  # fmt: skip

    def _probe_failed(self, now: float) -> None:
        self.failures += 1
        self.probe_at = now + self.delay(self.failures)

    def _notify(self) -> None:
        self._wake.set()
        self._wake = asyncio.Event()

    # -- the gate (asynchronous) -------------------------------------------------------------

    async def admit(self) -> bool:
        """Wait while the crawl is paused; True when this fetch goes as the probe.

        The probe goes to the fetch that has waited longest: a fetch whose probe failed waits
        again behind the others, so one URL that fails alone (a target the proxy will not reach)
        cannot take every probe and keep the fetches that would end the outage waiting."""
        if self.since is None:
            return False
        ticket = next(self._tickets)
        self._line.append(ticket)
        try:
            since: float | None = self.since
            while since is not None:
                self.check()
                if self.take_probe(ticket):
                    return True
                now = self._clock()
                first = self._line[0] == ticket
                until = float("inf") if self.probing or not first else self.probe_at
                if self.give_up:
                    until = min(until, since + self.give_up)
                wake = self._wake
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), None if until == float("inf") else
                                           max(0.0, until - now))  # fmt: skip
                since = self.since
            return False
        finally:
            first = self._line[0] == ticket
            self._line.remove(ticket)
            if first:  # the next in line times the probe now
                self._notify()

    async def through(
        self, attempt: Callable[[], Awaitable[Response]], host: str, *, proxied: bool
    ) -> Response:
        """Run `attempt` (one fetch of `host`; `proxied`: through the proxy) through the gate:
        again after the outage when it failed with an outage signal."""
        outages, last = 0, -1
        while True:
            probe = await self.admit()
            try:
                response = await attempt()
            except FetchError as error:
                if not self.signal(error, host, proxied=proxied, probe=probe):
                    raise
                if last != self.resumes:  # a new outage for this fetch
                    outages, last = outages + 1, self.resumes
                    if outages >= POISON:
                        raise
                continue
            finally:
                if probe:
                    self.end_probe()
            if proxied and response.status == 407 and response.url.startswith("http:"):
                # the proxy's own answer (through CONNECT, an https target's 407 is the target's)
                raise ProxyUnavailable(f"the proxy refused the credentials of [fetch] proxy: "
                                       f"407 {response.reason} to {response.url}")  # fmt: skip
            self.answered(proxied=proxied)
            return response

    def stats(self) -> dict[str, float]:
        """The figures of ``--stats`` (``outages``): pauses, probes, seconds paused in all."""
        now = 0.0 if self.since is None else self._clock() - self.since
        return {"pauses": self.pauses, "probes": self.probes,
                "paused_seconds": round(self.paused_for + now, 3)}  # fmt: skip

    def __repr__(self) -> str:
        if self.since is None:
            state = "open"
        else:
            lasted = self._clock() - self.since
            state = (f"paused({self.kind}, {lasted:.1f} s, failures={self.failures}, "
                     f"probe_at={self.probe_at:.1f}, probing={self.probing})")  # fmt: skip
        return (f"<Outage {state} give_up={self.give_up:g} pauses={self.pauses} "
                f"resumes={self.resumes} probes={self.probes}>")  # fmt: skip


def _what(kind: str) -> str:
    return "proxy" if kind == "proxy" else "network"


def _seconds(give_up: float) -> str:
    return f"{give_up:g} s" if give_up else "never"
