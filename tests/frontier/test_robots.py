"""robots.txt policy: RFC 9309 status rules, protego matching, user agents, Crawl-delay."""

from __future__ import annotations

import pytest

from crawler.frontier.robots import ALLOW_ALL, RobotsPolicy, policy_from_response, product_token

UA = "sieve-crawler/0.1 (+https://example.test/bot)"

ROBOTS = b"""\
# comments are fine
User-agent: *
Disallow: /private
Crawl-delay: 7

User-agent: Sieve-Crawler
Disallow: /tmp/
Disallow: /*.php$
Allow: /tmp/public/
Crawl-delay: 2.5

Sitemap: https://a.test/sitemap.xml
Sitemap: https://a.test/news.xml
"""


@pytest.mark.parametrize(
    ("user_agent", "token"),
    [
        (UA, "sieve-crawler"),
        ("Sieve-Crawler", "Sieve-Crawler"),
        ("  mybot_2 extra", "mybot_2"),
        ("Mozilla/5.0 (compatible; Foo/1.0)", "Foo"),  # the convention: tests/test_robots_rfc.py
    ],
)
def test_product_token(user_agent: str, token: str) -> None:
    assert product_token(user_agent) == token


def test_product_token_rejects_empty() -> None:
    with pytest.raises(ValueError, match="product token"):
        product_token("  (no token)")


def test_2xx_parsed_for_our_group_with_longest_match() -> None:
    policy = policy_from_response(200, ROBOTS, UA)
    assert policy.status == 200
    assert policy.temporary is False
    assert policy.crawl_delay == 2.5  # our group's, not the * group's 7
    assert policy.sitemaps == ("https://a.test/sitemap.xml", "https://a.test/news.xml")
    assert policy.allowed("https://a.test/private/x")  # only the * group says /private
    assert not policy.allowed("https://a.test/tmp/x")
    assert policy.allowed("https://a.test/tmp/public/x")  # longer Allow wins
    assert not policy.allowed("https://a.test/index.php")
    assert policy.allowed("https://a.test/index.php?page=2")  # $ anchors the end
    assert policy.allowed("/robots.txt")


def test_other_agents_fall_back_to_the_star_group() -> None:
    policy = policy_from_response(200, ROBOTS, "otherbot/1.0")
    assert policy.crawl_delay == 7.0
    assert not policy.allowed("https://a.test/private/x")
    assert policy.allowed("https://a.test/tmp/x")


def test_request_rate_gives_a_delay_when_no_crawl_delay() -> None:
    body = b"User-agent: *\nRequest-rate: 2/10s\nDisallow: /x\n"
    assert policy_from_response(204, body, UA).crawl_delay == 5.0


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 451, 301, 308])
def test_4xx_and_leftover_redirects_allow_everything(status: int) -> None:
    policy = policy_from_response(status, b"User-agent: *\nDisallow: /", UA)
    assert policy.allowed("https://a.test/anything")
    assert policy.temporary is False
    assert policy.status == status


@pytest.mark.parametrize("status", [None, 429, 500, 502, 503, 504, 599])
def test_5xx_unreachable_and_429_disallow_all_for_now(status: int | None) -> None:
    policy = policy_from_response(status, b"User-agent: *\nAllow: /", UA)
    assert policy.temporary is True
    assert not policy.allowed("https://a.test/")
    assert not policy.allowed("https://a.test/robots.txt")


def test_body_capped_bom_stripped_and_bad_utf8_tolerated() -> None:
    head = b"\xef\xbb\xbfUser-agent: *\nDisallow: /a\n# \xff\xfe\n"
    padding = b"#" * 1000 + b"\n"
    body = head + padding + b"Disallow: /late\n"
    capped = policy_from_response(200, body, UA, max_bytes=len(head) + len(padding) - 1)
    full = policy_from_response(200, body, UA)
    assert not capped.allowed("/a-thing")
    assert capped.allowed("/late")  # past the cap: never read
    assert not full.allowed("/late")


def test_empty_2xx_body_allows_everything() -> None:
    assert policy_from_response(200, b"", UA).allowed("/x")
    assert policy_from_response(200, None, UA).allowed("/x")


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError, match="status"):
        policy_from_response(700, b"", UA)
    with pytest.raises(ValueError, match="max_bytes"):
        policy_from_response(200, b"", UA, max_bytes=0)
    with pytest.raises(ValueError, match="crawl_delay"):
        RobotsPolicy(crawl_delay=-1.0)


def test_policy_is_immutable_with_a_useful_repr() -> None:
    policy = policy_from_response(200, ROBOTS, UA)
    with pytest.raises(AttributeError, match="immutable"):
        policy.crawl_delay = 1.0
    assert "crawl_delay=2.5" in repr(policy)
    assert "sieve-crawler" in repr(policy)
    assert "allow-all" in repr(ALLOW_ALL)
    assert "disallow-all" in repr(policy_from_response(503, None, UA))


@pytest.mark.parametrize(
    ("status", "error", "reason"),
    [
        (503, None, "HTTP 503"),
        (429, None, "HTTP 429"),
        (None, "dns: cannot resolve x.test", "dns: cannot resolve x.test"),
        (None, None, "no response"),
    ],
)
def test_a_temporary_disallow_says_why(status: int | None, error: str | None, reason: str) -> None:
    policy = policy_from_response(status, None, UA, error=error)
    assert policy.temporary and not policy.allowed("/")
    assert policy.reason == reason
    assert policy_from_response(200, b"", UA, error="ignored").reason is None
