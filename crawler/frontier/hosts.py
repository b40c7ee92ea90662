"""Per-host state and the politeness rules applied to it: delay, backoff, robots.txt lifetime.

Hosts are identified by their politeness key (:func:`host_key`: ``scheme://host:port``). A
:class:`Host` is plain state (queue, slots, ready time, delay, backoff, robots.txt policy); the
:class:`PolitenessRules` update it when a response or a robots.txt answer comes in. The frontier
(``crawler.frontier``) decides when hosts are asked for work.

Delay rule: two consecutive request *starts* to one host are at least ``delay`` seconds apart,
whatever the concurrency (the robots.txt fetch counts as a request). The host's delay is
``max(delay, min(robots Crawl-delay, max_delay))``; with ``adaptive=True`` it follows the host's
response latency (AutoThrottle: the mean of the old delay and latency/per_host_concurrency, clamped
to ``[that floor, max_delay]``; error responses may raise it, never lower it).
Backoff follows the blame of each outcome (``crawler.errors.Blame``; the table is in
docs/politeness.md): a HOST failure (DNS, refused or timed-out connection, 429, 503) pushes the
host's ready time back: Retry-After when given (seconds or HTTP date, capped at
``max_retry_after``), else exponential backoff with jitter (``min(backoff_max, backoff_base *
2**(n-1))`` times a uniform factor in [0.5, 1)). A SUSPECT failure (a reset or a timeout before any
response, 500/502/504) is the URL's own unless ``SUSPECT_STREAK`` distinct URLs of the host fail so
in a row: then it counts as a HOST failure. An answer (any other status, or a failure of the URL's
own: a malformed or oversized response, a trickling body) resets the host's backoff and streak.

Per-host overrides: a :class:`HostRule` replaces the global ``delay`` and/or
``per_host_concurrency`` for one host (the frontier asks for it once, when the host is first seen).
A robots.txt Crawl-delay still raises a rule's delay (``max(rule delay, min(Crawl-delay,
max_delay))``): a rule never goes below what the site asks for.

robots.txt: a policy in force is kept ``robots_ttl`` seconds. An unreachable robots.txt (temporary
policy) is retried with backoff, and not before its 429/503's Retry-After (capped likewise); a
cached policy stays in force meanwhile (RFC 9309 2.4). A host with no policy yet gives up after
``robots_max_attempts`` failures and then refuses its pages (RFC 9309: complete disallow) until
``robots_ttl`` ends. A *refused* connection (nothing listens on the port: ``RobotsPolicy.refused``)
is an answer, not a silence: robots.txt is asked once more after the first backoff step
(``REFUSED_ATTEMPTS``: a server restarting in that time loses nothing), then the host's pages
fail at once as the connection failures they would be (error kind ``connect``, never requested);
robots.txt is asked again, before a page found later, once that backoff step ends (1, 2, 4...
s). Each refused robots.txt counts as a failure of the host for the circuit breaker below.

Circuit breaker: the ``max_host_failures``-th HOST failure in a row (0: never) puts a host
*down*: the frontier refuses its queued and later pages at once (error ``host_down``) instead of
trying each after a backoff (a host gone mid-crawl would otherwise hold the crawl for hours:
100 URLs, ~3 attempts each, ~220 s apart). Like Nutch's ``fetcher.max.exceptions.per.queue``.
"""

from __future__ import annotations

import random
import time
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Final

from crawler.errors import Blame, failure_class
from crawler.fetch.steering import HostRule
from crawler.frontier.robots import REFUSED_ATTEMPTS, RobotsPolicy
from crawler.frontier.settings import Politeness

if TYPE_CHECKING:
    from crawler.frontier.addresses import Address
    from crawler.frontier.entries import Outcome
    from crawler.frontier.queues import HostQueue

__all__ = [
    "Host",
    "PolitenessRules",
    "blame_of",
    "down_reason",
    "host_key",
    "origin",
    "parse_retry_after",
    "robots_url",
]

SUSPECT_STREAK: Final = 3  # distinct URLs of a host failing suspectly in a row: a host failure

_DEFAULT_PORTS: Final = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}


def host_key(url: str) -> str:
    """Politeness key of an absolute URL: ``"scheme://host:port"``, lower-case, explicit port."""
    i = url.find("://")
    if i <= 0:
        raise ValueError(f"not an absolute URL: {url!r}")
    scheme = url[:i].lower()
    start = i + 3
    end = len(url)
    for ch in "/?#":
        j = url.find(ch, start, end)
        if j != -1:
            end = j
    netloc = url[start:end]
    at = netloc.rfind("@")
    if at != -1:
        netloc = netloc[at + 1 :]
    if netloc.startswith("["):
        close = netloc.find("]")
        host, port_s = netloc[: close + 1], netloc[close + 1 :]
        if close == -1 or (port_s and port_s[0] != ":"):
            raise ValueError(f"malformed IPv6 host in URL: {url!r}")
        port_s = port_s[1:]
    else:
        host, _, port_s = netloc.partition(":")
    if not host:
        raise ValueError(f"URL has no host: {url!r}")
    if port_s:
        if not port_s.isdigit() or int(port_s) > 65535:
            raise ValueError(f"URL has an invalid port {port_s!r}: {url!r}")
        port = int(port_s)
    elif (default := _DEFAULT_PORTS.get(scheme)) is not None:
        port = default
    else:
        raise ValueError(f"URL has no port and scheme {scheme!r} has no default: {url!r}")
    return f"{scheme}://{host.lower()}:{port}"


def origin(key: str) -> str:
    """The origin of a host key as normalized URLs spell it: ``http://a:80`` -> ``http://a`` (a
    default port is dropped, any other kept)."""
    scheme, _, rest = key.partition("://")
    host, _, port = rest.rpartition(":")
    return f"{scheme}://{host}" if _DEFAULT_PORTS.get(scheme) == int(port) else key


def robots_url(key: str) -> str:
    """The robots.txt URL of a host key: ``http://a:80`` -> ``http://a/robots.txt``."""
    return origin(key) + "/robots.txt"


def blame_of(outcome: Outcome) -> Blame | None:
    """Whom a fetch outcome blames: its own `blame`, else the host for a failure without one,
    else what the status says (`crawler.errors.failure_class`; None: nobody)."""
    blame = outcome.blame
    if blame is None:
        if outcome.failed:
            return Blame.HOST
        if outcome.status is not None:
            failure = failure_class(outcome.status)
            return Blame.URL if failure is None else failure[0]
    return blame


def down_reason(failures: int) -> str:
    """Why a host is down (the circuit breaker, module docstring), after `failures` in a row."""
    return (
        f"{failures} fetches in a row failed (DNS, connection, timeout, 429 or 503): its other "
        "pages are not tried in this crawl"
    )


def parse_retry_after(value: str, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After value (delta-seconds or HTTP-date), None if unparsable.

    ``now`` is the wall-clock time (``time.time()``) an HTTP-date is measured against. A date in
    the past gives 0.0.
    """
    value = value.strip()
    if not value:
        return None
    if value.isascii() and value.isdigit():  # "²".isdigit(), but float("²") raises
        return float(value)
    try:
        seconds = float(value)  # lenient: "1.5"
    except ValueError:
        pass
    else:
        return seconds if 0.0 <= seconds < float("inf") else None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT
        return None
    wall = time.time() if now is None else now
    return max(0.0, when.timestamp() - wall)


class Host:
    """One politeness key's state: its queue, slots in use, schedule and robots.txt policy.

    ``queue`` is the host's :class:`crawler.frontier.queues.HostQueue` (compact records in
    priority order, see ``crawler.frontier.entries.Packer``). ``in_heap``, ``filed_best`` and
    ``token`` belong to :class:`crawler.frontier.schedule.Schedule` (is the host filed; the priority
    it is filed under in the ready heap, +inf when it is not there; which filing is current).
    ``address`` is the :class:`crawler.frontier.addresses.Address` whose budget it shares (None:
    by host only), kept until ``resolve_at``; ``resolving`` while its name is being resolved
    (not filed meanwhile).
    """

    __slots__ = ("address", "backoff_until", "base_delay", "concurrency", "configured_delay",
                 "delay", "down", "failures", "filed_best", "in_flight", "in_heap", "key",
                 "last_start", "policy", "prefix", "queue", "ready_at", "resolve_at", "resolving",
                 "robots_expires", "robots_failures", "robots_fetching", "suspects",
                 "token")  # fmt: skip

    def __init__(self, key: str, queue: HostQueue, delay: float, concurrency: int = 1) -> None:
        self.key = key
        self.prefix = origin(key)
        self.queue = queue
        self.concurrency = concurrency  # requests in flight at most (global or the host's rule)
        self.in_flight = 0
        self.in_heap = False
        self.filed_best = float("inf")
        self.token = -1
        self.ready_at = float("-inf")  # new hosts go first, FIFO among themselves
        self.last_start: float | None = None
        self.configured_delay = delay  # global or the host's rule: the floor of base_delay
        self.base_delay = delay  # configured_delay raised by a robots.txt Crawl-delay
        self.delay = delay
        self.failures = 0
        self.down: str | None = None  # why its pages are no longer tried (max_host_failures)
        self.suspects = 0  # distinct URLs in a row whose failure is suspect (SUSPECT_STREAK)
        self.backoff_until = float("-inf")
        self.policy: RobotsPolicy | None = None
        self.robots_expires = float("-inf")
        self.robots_fetching = False
        self.robots_failures = 0
        self.address: Address | None = None
        self.resolve_at = float("inf")  # its answer expires (inf: never asked, or a literal)
        self.resolving = False

    @property
    def best(self) -> float:
        """The priority of its best queued entry (-inf when none is)."""
        return self.queue.best

    @property
    def name(self) -> str:
        """The host name of its key (``https://[::1]:8443`` -> ``[::1]``)."""
        return self.key.partition("://")[2].rpartition(":")[0]

    @property
    def queued(self) -> int:
        """Entries in the queue."""
        return len(self.queue)

    def __repr__(self) -> str:
        return (
            f"Host({self.key!r}, queued={self.queued}, in_flight={self.in_flight}, "
            f"ready_at={self.ready_at:.3f}, delay={self.delay}, "
            f"concurrency={self.concurrency}, policy={self.policy!r}, address={self.address!r})"
        )


class PolitenessRules:
    """The rules of the module docstring, applied to :class:`Host` states, with the settings of
    `settings` (checked when made); ``rng`` draws the jitter."""

    __slots__ = ("adaptive", "backoff_base", "backoff_max", "backoffs", "concurrency", "delay",
                 "max_delay", "max_host_failures", "max_retry_after", "rng", "robots_max_attempts",
                 "robots_ttl")  # fmt: skip

    def __init__(self, settings: Politeness, rng: random.Random | None = None) -> None:
        self.delay = float(settings.delay)
        self.concurrency = settings.per_host_concurrency
        self.max_delay = max(float(settings.max_delay), self.delay)
        self.adaptive = settings.adaptive
        self.backoff_base = float(settings.backoff_base)
        self.backoff_max = float(settings.backoff_max)
        self.max_retry_after = float(settings.max_retry_after)
        self.robots_ttl = float(settings.robots_ttl)
        self.robots_max_attempts = settings.robots_attempts
        self.max_host_failures = settings.max_host_failures
        self.rng = rng if rng is not None else random.Random()
        self.backoffs = 0  # times a host was pushed back (429/503, failures, robots 5xx)

    def new_host(self, key: str, queue: HostQueue, rule: HostRule | None = None) -> Host:
        """The state of a host seen for the first time (its queue given, empty), with its rule's
        overrides if any."""
        delay, concurrency = self.delay, self.concurrency
        if rule is not None:
            if rule.delay is not None:
                delay = float(rule.delay)
            if rule.per_host_concurrency is not None:
                concurrency = rule.per_host_concurrency
        return Host(key, queue, delay, concurrency)

    def backoff(self, failures: int) -> float:
        cap = min(self.backoff_max, self.backoff_base * 2.0 ** min(failures - 1, 64))
        return cap * (0.5 + 0.5 * self.rng.random())

    def push_back(self, host: Host, until: float) -> None:
        self.backoffs += 1
        host.ready_at = max(host.ready_at, until)
        host.backoff_until = max(host.backoff_until, until)

    def response(self, host: Host, outcome: Outcome, now: float) -> bool:
        """Apply a fetch outcome: backoff by its blame (module docstring), adaptive delay. True
        when it puts the host down: the max_host_failures-th HOST failure in a row."""
        went_down = False
        status = outcome.status
        blame = blame_of(outcome)
        if blame is Blame.SUSPECT and outcome.attempt == 0:
            host.suspects += 1
            if host.suspects >= SUSPECT_STREAK:
                blame = Blame.HOST
        if blame is Blame.HOST:
            host.failures += 1
            host.suspects = 0
            wait = None
            if outcome.retry_after is not None and status is not None:
                wait = parse_retry_after(outcome.retry_after)
            if wait is None:
                wait = self.backoff(host.failures)
            self.push_back(host, now + min(wait, self.max_retry_after))
            if host.down is None and 0 < self.max_host_failures <= host.failures:
                host.down = down_reason(host.failures)
                went_down = True
        elif blame is Blame.URL:
            host.failures = 0
            host.suspects = 0
        if self.adaptive and outcome.latency is not None:
            target = (host.delay + outcome.latency / host.concurrency) / 2.0  # its rule's
            if status is None or status >= 500 or status == 429:
                target = max(target, host.delay)  # errors never speed us up
            host.delay = min(max(target, host.base_delay), max(self.max_delay, host.base_delay))
            if host.last_start is not None:
                host.ready_at = max(host.ready_at, host.last_start + host.delay)
        return went_down

    def robots(self, host: Host, policy: RobotsPolicy, now: float) -> bool:
        """Apply a robots.txt answer (a temporary policy: unreachable). True when ``policy`` came
        into force, or the host went down (the circuit breaker: refused connections), so the
        host's queue must be swept; a temporary one then means: gave up."""
        host.robots_fetching = False
        if not policy.temporary:
            host.policy = policy
            host.robots_expires = now + self.robots_ttl
            host.robots_failures = 0
            base = host.configured_delay
            if policy.crawl_delay is not None:
                base = max(base, min(policy.crawl_delay, self.max_delay))
            host.base_delay = base
            host.delay = max(host.delay, base) if self.adaptive else base
            if host.last_start is not None:
                host.ready_at = max(host.ready_at, host.last_start + host.delay)
            return True
        host.robots_failures += 1
        wait = self.backoff(host.robots_failures)
        if policy.retry_after is not None:  # a 429/503's Retry-After, capped
            wait = max(wait, min(policy.retry_after, self.max_retry_after))
        retry_at = now + wait
        attempts = self.robots_max_attempts
        if policy.refused:  # an answer: nothing listens there (module docstring)
            attempts = min(attempts, REFUSED_ATTEMPTS)
            host.failures += 1
            if host.down is None and 0 < self.max_host_failures <= host.failures:
                host.down = down_reason(host.failures)
                return True
        if host.policy is not None and not host.policy.temporary:
            host.robots_expires = retry_at  # keep the cached policy (RFC 9309 2.4), retry later
        elif host.robots_failures >= attempts:
            host.policy = policy
            host.robots_expires = retry_at if policy.refused else now + self.robots_ttl
            return True
        else:
            host.policy = None
            host.robots_expires = float("-inf")
            self.push_back(host, retry_at)
        return False

    def __repr__(self) -> str:
        return (
            f"PolitenessRules(delay={self.delay}, max_delay={self.max_delay}, "
            f"adaptive={self.adaptive}, concurrency={self.concurrency}, backoffs={self.backoffs})"
        )
