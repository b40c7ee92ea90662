"""Backoff follows its cause (crawler.errors classifies, hosts.PolitenessRules applies):
host failures back the host off at once, a URL's own failures never, suspect ones after a streak."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from crawler.errors import (
    Blame,
    BlockedAddress,
    BodyTooLarge,
    ConnectError,
    ConnectionReset,
    DecodingError,
    DNSError,
    FetchError,
    FetchTimeout,
    ProtocolError,
    TooSlow,
    Truncated,
    failure_class,
)
from crawler.frontier.entries import Outcome
from crawler.frontier.hosts import SUSPECT_STREAK, Host, PolitenessRules
from crawler.frontier.queues import HostQueue
from crawler.frontier.settings import Politeness


def rules() -> PolitenessRules:
    return PolitenessRules(
        Politeness(
            delay=0.0,
            per_host_concurrency=1,
            max_delay=30.0,
            adaptive=False,
            backoff_base=1.0,
            backoff_max=300.0,
            max_retry_after=600.0,
            robots_ttl=86400.0,
            robots_attempts=3,
            max_host_failures=0,
        ),
        rng=random.Random(5),
    )


def failure(exc: FetchError, attempt: int = 0) -> Outcome:
    """The outcome the engine reports for a failed fetch
    (crawler.engine.pages.PageHandler.fetch_page)."""
    return Outcome(blame=exc.blame, attempt=attempt)


def backed_off(host: Host, now: float) -> bool:
    return host.backoff_until > now


@pytest.mark.parametrize(
    ("exc", "blame", "retry"),
    [
        (DNSError("x"), Blame.HOST, True),
        (ConnectError("refused"), Blame.HOST, True),
        (ConnectionReset("reset"), Blame.SUSPECT, True),
        (FetchTimeout("t", waiting=True), Blame.SUSPECT, False),
        (FetchTimeout("t", waiting=False), Blame.URL, False),
        (TooSlow("s", waiting=True), Blame.SUSPECT, False),
        (TooSlow("s", waiting=False), Blame.URL, False),
        (Truncated("short"), Blame.URL, True),
        (BodyTooLarge("big"), Blame.URL, False),
        (ProtocolError("bad"), Blame.URL, False),
        (DecodingError("gzip"), Blame.URL, False),
        (BlockedAddress("private"), Blame.URL, False),
    ],
    ids=lambda v: v.kind if isinstance(v, FetchError) else None,
)
def test_each_failure_has_its_blame_and_retry(exc: FetchError, blame: Blame, retry: bool) -> None:
    assert (exc.blame, exc.retry) == (blame, retry)


def test_status_classes() -> None:
    assert failure_class(429) == failure_class(503) == (Blame.HOST, True)
    assert failure_class(500) == failure_class(502) == failure_class(504) == (Blame.SUSPECT, True)
    assert all(failure_class(s) is None for s in (200, 301, 404, 410, 501))


@pytest.mark.parametrize("exc", [DNSError("x"), ConnectError("refused")])
def test_a_host_failure_backs_the_host_off_at_once(exc: FetchError) -> None:
    p, host = rules(), Host("http://a.test:80", HostQueue(), 0.0)
    p.response(host, failure(exc), now=10.0)
    assert backed_off(host, 10.0) and host.ready_at >= 10.5 and p.backoffs == 1


@pytest.mark.parametrize(
    "exc",
    [BodyTooLarge("big"), ProtocolError("bad"), Truncated("short"), TooSlow("s", waiting=False)],
)
def test_a_urls_own_failure_never_backs_the_host_off_and_resets_it(exc: FetchError) -> None:
    p, host = rules(), Host("http://a.test:80", HostQueue(), 0.0)
    p.response(host, failure(ConnectError("refused")), now=0.0)
    assert host.failures == 1
    for n in range(10):  # many in a row: still the URLs' own
        p.response(host, failure(exc), now=100.0 + n)
        assert not backed_off(host, 100.0 + n)
    assert host.failures == 0 and p.backoffs == 1


def test_suspect_failures_of_distinct_urls_in_a_row_back_the_host_off() -> None:
    p, host = rules(), Host("http://a.test:80", HostQueue(), 0.0)
    for n in range(SUSPECT_STREAK - 1):
        p.response(host, failure(ConnectionReset("reset")), now=float(n))
        assert not backed_off(host, float(n))
    p.response(host, failure(TooSlow("s", waiting=True)), now=5.0)
    assert backed_off(host, 5.0) and p.backoffs == 1 and host.failures == 1
    assert host.suspects == 0  # the next streak starts afresh


def test_retries_of_one_url_count_once_in_the_streak() -> None:
    p, host = rules(), Host("http://a.test:80", HostQueue(), 0.0)
    for attempt in range(10):  # one URL that resets, retried: a URL problem
        p.response(host, failure(ConnectionReset("reset"), attempt), now=float(attempt))
    assert host.suspects == 1 and p.backoffs == 0


def test_an_answer_breaks_the_streak() -> None:
    p, host = rules(), Host("http://a.test:80", HostQueue(), 0.0)
    for n in range(3 * SUSPECT_STREAK):
        if n % SUSPECT_STREAK == SUSPECT_STREAK - 1:
            outcome = Outcome(status=200) if n % 2 else failure(BodyTooLarge("big"))
        else:
            outcome = Outcome(status=500)  # a 500 on one page is that page's
        p.response(host, outcome, now=float(n))
    assert p.backoffs == 0


def test_503_honours_retry_after_and_500_does_not_back_off() -> None:
    p, host = rules(), Host("http://a.test:80", HostQueue(), 0.0)
    p.response(host, Outcome(status=500, retry_after="120"), now=0.0)
    assert not backed_off(host, 0.0)
    p.response(host, Outcome(status=503, retry_after="120"), now=1.0)
    assert host.backoff_until == 121.0


def _classes(cls: type[FetchError]) -> list[type[FetchError]]:
    return [c for sub in cls.__subclasses__() for c in (sub, *_classes(sub))]


def _instances(cls: type[FetchError]) -> list[FetchError]:
    if issubclass(cls, FetchTimeout | TooSlow):
        return [cls("x", waiting=True), cls("x", waiting=False)]
    return [cls("x")]


def test_the_docs_table_is_the_code() -> None:
    readme = (Path(__file__).parents[2] / "docs" / "politeness.md").read_text()
    rows = re.findall(r"^ *\| (.+?) \| (`\w+`|status) \| (host|suspect|URL|proxy) \| (yes|no) \|$",
                      readme, re.MULTILINE)  # fmt: skip
    documented: dict[str, set[tuple[str, bool]]] = {}
    for what, kind, blame, retry in rows:
        keys = re.findall(r"\d{3}", what) if kind == "status" else [kind.strip("`")]
        for key in keys:
            documented.setdefault(key, set()).add((blame.lower(), retry == "yes"))
    code: dict[str, set[tuple[str, bool]]] = {}
    for cls in _classes(FetchError):
        if not cls.__name__.startswith("_"):
            # one kind may have several classes (ConnectError, CertificateError)
            code.setdefault(cls.kind, set()).update(
                (e.blame.value, e.retry) for e in _instances(cls)
            )
    for status in range(100, 600):
        if (failure := failure_class(status)) is not None:
            code[str(status)] = {(failure[0].value, failure[1])}
    assert documented == code
