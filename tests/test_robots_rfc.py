"""robots.txt against RFC 9309 and what real sites serve (an audit; the README's robots.txt table).

The group rules (2.2.1): a group applies to us when the product token of its User-agent line
equals ours, case-insensitively (Google's parser reads "Googlebot/2.1" as "Googlebot"); a token
that only starts ours, or only contains it, names another crawler. The fetch rules (2.3.1) and
the crawl (refusals never fetched, robots.txt per scheme, host and port) run against loopback
servers; the fetch faults earlier audits found are in tests/test_faults*.py and
tests/test_hostile.py, the frontier's timing (Crawl-delay, TTL, retries) in tests/test_frontier*.py.
"""

from __future__ import annotations

import pytest

from crawler.robots import policy_from_response

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
