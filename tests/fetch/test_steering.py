"""Steering rules offline: [[hosts]] and [fetch] headers/cookies/proxy in the config, host
matching, the headers a rule adds, and what is secret."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from crawler.config.load import config_from_mapping, load_config
from crawler.config.sections import HostConfig
from crawler.errors import ConfigError
from crawler.fetch.noproxy import NoProxy
from crawler.fetch.steering import REDACTED, HostMatch, HostRule, HostRules, redact

ROOT = Path(__file__).resolve().parents[2]

RULES = """
[fetch]
headers = { "Accept-Language" = "de", "X-Global-Token" = "global-secret" }
cookies = true
proxy = "http://proxyuser:proxy-secret@127.0.0.1:3128"

[[hosts]]
match = "*.example.org"
delay = 2
per_host_concurrency = 2
headers = { "X-Api-Key" = "key-secret" }
auth = ["alice", "pw-secret"]

[[hosts]]
match = "EXAMPLE.org:8080"
headers = { Authorization = "Bearer token-secret" }
"""
SECRETS = ("global-secret", "proxy-secret", "key-secret", "pw-secret", "token-secret")


def test_hosts_rules_load(tmp_path: Path) -> None:
    config = load_config(_write(tmp_path, RULES))
    assert config.fetch.cookies is True
    assert config.fetch.headers["Accept-Language"] == "de"
    first, second = config.hosts
    assert first == HostConfig(
        match="*.example.org",
        delay=2.0,
        per_host_concurrency=2,
        headers={"X-Api-Key": "key-secret"},
        auth=("alice", "pw-secret"),
    )
    assert second.delay is None and second.per_host_concurrency is None and second.auth is None


def test_repr_of_config_shows_no_secret(tmp_path: Path) -> None:
    config = load_config(_write(tmp_path, RULES))
    text = f"{config!r} {config} {config.fetch!r} {config.hosts!r}"
    assert "*.example.org" in text and "X-Api-Key" in text  # the rule is still recognizable
    for secret in SECRETS:
        assert secret not in text


def test_documented_hosts_example_loads(tmp_path: Path) -> None:
    # config.toml shows a commented [[hosts]] example: uncommented, it must be a valid rule.
    lines = (ROOT / "config.toml").read_text().splitlines()
    start = lines.index("# [[hosts]]")
    example = [line.removeprefix("# ") for line in lines[start:] if line.startswith("# ")]
    config = load_config(_write(tmp_path, "\n".join(example)))
    assert len(config.hosts) == 1 and config.hosts[0].match == "*.example.org"
    assert config.hosts[0].auth == ("user", "password")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[[hosts]]\ndelay = 1\n", "[[hosts]] #1: missing key 'match'"),
        ("[[hosts]]\nmatch = 'a'\n[[hosts]]\nmatch = 'b'\nwait = 1\n", "#2: unknown key 'wait'"),
        ("[[hosts]]\nmatch = 'a'\ndelay = 'slow'\n", "[[hosts]] #1 delay: expected float"),
        ("[[hosts]]\nmatch = 'a'\ndelay = -1\n", "#1 delay: must be >= 0"),
        ("[[hosts]]\nmatch = 'a'\nper_host_concurrency = 0\n", "per_host_concurrency: must be"),
        ("[[hosts]]\nmatch = 'a:99999'\n", "#1 match: 'a:99999' has an invalid port"),
        ("[[hosts]]\nmatch = ''\n", "#1 match: '' has no host"),
        ("[[hosts]]\nmatch = '[::1'\n", "an IPv6 address is written [address]"),
        ("[[hosts]]\nmatch = '[zz]'\n", "an IPv6 address is written [address]"),
        ("[[hosts]]\nmatch = 'example.org/docs'\n", "a host glob holds letters, digits"),
        ("[[hosts]]\nmatch = 'alice@example.org'\n", "a host glob holds letters, digits"),
        ("[[hosts]]\nmatch = 'a .test'\n", "a host glob holds letters, digits"),
        ("[[hosts]]\nmatch = '::1'\n", "a host glob holds letters, digits"),
        ("[[hosts]]\nmatch = 'ftp://example.org'\n", "scheme may only be http:// or https://"),
        ("[[hosts]]\nmatch = 'https://'\n", "has no host"),
        ("[[hosts]]\nmatch = 'b*ücher.test'\n", "(write it in its xn-- form)"),
        ("[[hosts]]\nmatch = 'a'\nauth = ['alice']\n", "auth: must be [user, password]"),
        ("[[hosts]]\nmatch = 'a'\nauth = ['a:b', 'pw-secret']\n", "auth: must be [user, "),
        ("[[hosts]]\nmatch = 'a'\nauth = 'alice:pw-secret'\n", "auth: expected a list of str"),
        (
            "[[hosts]]\nmatch = 'a'\nauth = ['a', 'pw-secret']\nheaders = {Authorization = 'x'}\n",
            "either auth or an Authorization header",
        ),
        ("[[hosts]]\nmatch = 'a'\nheaders = { Host = 'b' }\n", "headers: 'Host' cannot be set"),
        ("[fetch]\nheaders = { 'Content-Length' = '1' }\n", "'Content-Length' cannot be set"),
        ("[fetch]\nheaders = { 'user-agent' = 'x' }\n", "[crawl] user_agent"),
        ("[fetch]\nheaders = { 'X Key' = 'v' }\n", "'X Key' is not a valid header name"),
        ("[fetch]\nheaders = { Authorization = 'Bearer key-secret' }\n", "sent to every host"),
        ("[fetch]\nheaders = { cookie = 'sid=key-secret' }\n", "sent to every host: give it"),
        ("[[hosts]]\nmatch = 'a'\nheaders = { Proxy-Authorization = 'x' }\n", "[fetch] proxy"),
        ("[fetch]\nheaders = { Upgrade = 'h2c' }\n", "'Upgrade' cannot be set"),
        ("[fetch]\nheaders = { TE = 'trailers' }\n", "'TE' cannot be set"),
        ("[fetch]\nheaders = { X-A = 'key-secret', x-a = 'b' }\n", "'x-a' is given twice"),
        ("[fetch]\nheaders = { X = 'key-secret-é' }\n", "the value of 'X' is not ASCII"),
        ('[fetch]\nheaders = { X = "key-secret\\r\\nY: z" }\n', "contains a control character"),
        ("[fetch]\nheaders = { X = 5, Y = 'key-secret' }\n", "expected a table of strings, got"),
        ("[fetch]\ncookies = 'yes'\n", "[fetch] cookies: expected bool"),
        ("[fetch]\nproxy = 'socks5://u:pw-secret@h:1080'\n", "proxy: must be an http://"),
        ("[fetch]\nproxy = 'http://h:3128/path'\n", "proxy: must be scheme://"),
        ("[fetch]\nproxy = 'http://u:pw-secret@h:70000'\n", "[fetch] proxy: not a valid URL"),
        ("[fetch]\nproxy = 'http://'\n", "[fetch] proxy: "),
        ("hosts = { match = 'a' }\n", "hosts must be an array of tables"),
        (
            "[[hosts]]\nmatch = '*.example.org'\n[[hosts]]\nmatch = 'API.example.org:8443'\n",
            "[[hosts]] #2 (match = 'API.example.org:8443') is never used: #1 (match = '*.exam",
        ),
        ("[[hosts]]\nmatch = 'a'\n[[hosts]]\nmatch = 'https://a.'\n", "#2 (match = 'https://a."),
        ("[[hosts]]\nmatch = '*'\n[[hosts]]\nmatch = '[::1]'\n", "#1 (match = '*') matches all"),
    ],
)
def test_bad_steering_config_names_file_and_key(tmp_path: Path, text: str, needle: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert needle in message
    assert str(path) in message
    for secret in SECRETS:  # errors never quote a credential
        assert secret not in message


@pytest.mark.parametrize(
    ("pattern", "host", "port", "expected"),
    [
        ("*.example.org", "a.example.org", 443, True),
        ("*.example.org", "a.b.example.org", 80, True),
        ("*.example.org", "example.org", 80, False),  # documented: the bare domain needs a rule
        ("*.example.org", "badexample.org", 80, False),
        ("*.Example.ORG", "a.example.org", 80, True),  # case-insensitive
        ("example.org.", "example.org", 80, True),  # a trailing dot is the same name
        ("example.org:8080", "example.org", 8080, True),
        ("example.org:8080", "example.org", 80, False),
        ("site-?.test", "site-a.test", 80, True),
        ("127.0.0.*", "127.0.0.1", 80, True),
        ("[::1]", "::1", 80, True),
        ("[::1]:8080", "::1", 80, False),
        ("[::1]:8080", "::1", 8080, True),
        ("[0:0::1]", "::1", 80, True),  # as URLs carry it
        ("bücher.test", "xn--bcher-kva.test", 80, True),  # as URLs carry it
        ("*.BÜCHER.test:8080", "a.xn--bcher-kva.test", 8080, True),
        ("*.xn--bcher-kva.test", "a.xn--bcher-kva.test", 80, True),
    ],
)
def test_host_match(pattern: str, host: str, port: int, expected: bool) -> None:
    assert HostMatch(pattern).matches(host, port) is expected


def test_a_match_naming_a_scheme_matches_that_scheme_only() -> None:
    rules = HostRules(
        [
            HostConfig(match="HTTPS://a.test", headers={"X-Which": "https"}),
            HostConfig(match="http://*.test:8080", headers={"X-Which": "http-8080"}),
        ]
    )
    assert rules.headers("a.test", 443, "https") == {"X-Which": "https"}
    assert rules.headers("a.test", 80, "http") is None  # a downgrade gets nothing
    assert rules.headers("a.test", 8080, "http") == {"X-Which": "http-8080"}
    assert rules.headers("a.test", 8080, "https") == {"X-Which": "https"}
    assert rules.headers("a.test", 443) is None  # scheme unknown: no scheme rule matches
    assert rules.host_rule("http://a.test:80") is None


@pytest.mark.parametrize(
    "matches",
    [
        ["a.test:8080", "a.test"],  # the later one still has the other ports
        ["https://a.test", "a.test"],  # and plain HTTP
        ["*.a.test", "a.test"],
        ["*.test", "*.a.test"],  # a glob after a glob: not decided, allowed
        ["[::1]:80", "[::1]"],
    ],
)
def test_rules_that_each_get_requests_load(tmp_path: Path, matches: list[str]) -> None:
    text = "".join(f"[[hosts]]\nmatch = '{m}'\n" for m in matches)
    assert [r.match for r in load_config(_write(tmp_path, text)).hosts] == matches


def test_first_matching_rule_wins_and_is_cached() -> None:
    rules = HostRules(
        [
            HostConfig(match="a.example.org", headers={"X-Which": "first"}),
            HostConfig(match="*.example.org", headers={"X-Which": "second"}),
        ]
    )
    assert rules.headers("A.example.org.", 80) == {"X-Which": "first"}
    assert rules.headers("b.example.org", 80) == {"X-Which": "second"}
    assert rules.headers("example.org", 80) is None
    assert rules.rule("b.example.org", 80) is rules.rules[1]
    for _ in range(3):
        rules.headers("b.example.org", 80)
    assert rules.find.cache_info().hits >= 3


def test_auth_becomes_a_basic_authorization_header() -> None:
    rules = HostRules([HostConfig(match="*.test", auth=("alice", "pw-secret"))])
    headers = rules.headers("a.test", 80)
    assert headers is not None
    scheme, token = headers["Authorization"].split()
    assert scheme == "Basic"
    assert base64.b64decode(token) == b"alice:pw-secret"


def test_secret_names_and_redaction() -> None:
    rules = HostRules([HostConfig(match="a.test", headers={"X-Api-Key": "key-secret"})])
    assert {"authorization", "proxy-authorization", "cookie", "x-api-key"} <= rules.secret
    sent = [
        ("Host", "a.test"),
        ("x-api-key", "key-secret"),
        ("Cookie", "sid=1"),
        ("Accept", "text/html"),
    ]
    assert redact(sent, rules.secret) == (
        ("Host", "a.test"),
        ("x-api-key", REDACTED),
        ("Cookie", REDACTED),
        ("Accept", "text/html"),
    )


def test_no_proxy_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.setenv("NO_PROXY", "direct.test,.internal.test")
    no_proxy = NoProxy.from_environment()
    assert not no_proxy.bypass("far.test", 80)
    assert no_proxy.bypass("direct.test", 80)
    assert no_proxy.bypass("a.internal.test", 443)
    monkeypatch.setenv("no_proxy", "other.test")  # the lower-case variable first, as curl
    assert NoProxy.from_environment().text == "other.test"


@pytest.mark.parametrize(
    ("no_proxy", "host", "port", "bypass"),
    [
        ("a.test", "a.test", 80, True),
        ("a.test", "x.a.test", 80, True),
        ("a.test", "xa.test", 80, False),
        (".test", "a.test", 80, True),
        ("*.test", "a.test", 80, True),
        ("A.TEST", "a.test", 80, True),
        ("a.test", "a.test.", 80, True),  # a trailing dot is the same host
        ("a.test.", "a.test", 80, True),
        ("a.test:8080", "a.test", 8080, True),  # with a port: that port only
        ("a.test:8080", "a.test", 80, False),
        (" b.test , a.test ", "a.test", 80, True),
        ("b.test a.test", "a.test", 80, True),
        ("*", "anything.example", 1, True),
        ("b.test,*", "anything.example", 1, True),
        ("127.0.0.1", "127.0.0.1", 80, True),
        ("127.0.0.1", "127.0.0.2", 80, False),
        ("127.0.0.0/8", "127.9.9.9", 80, True),  # networks (CIDR)
        ("10.0.0.0/8", "127.0.0.1", 80, False),
        ("10.0.0.0/8", "ten.test", 80, False),  # names are not resolved for this
        ("::1", "::1", 80, True),
        ("[::1]", "::1", 80, True),
        ("[::1]:8080", "::1", 80, False),
        ("fd00::/8", "fd12::1", 80, True),
        ("", "a.test", 80, False),
    ],
)
def test_no_proxy_entries(no_proxy: str, host: str, port: int, bypass: bool) -> None:
    assert NoProxy(no_proxy).bypass(host, port) is bypass


def test_defaults_steer_nothing() -> None:
    config = config_from_mapping({})
    assert config.hosts == ()
    assert config.fetch.headers == {} and config.fetch.proxy == "" and not config.fetch.cookies
    rules = HostRules(config.hosts)
    assert rules.headers("a.test", 80) is None and rules.rule("a.test", 80) is None


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return path


def test_host_rule_for_the_frontier() -> None:
    rules = HostRules(
        [
            HostConfig(match="a.test:8080", delay=2.0),
            HostConfig(match="*.test", per_host_concurrency=3),
            HostConfig(match="[::1]", delay=0.5),
            HostConfig(match="h.example", headers={"X-K": "v"}),  # no politeness override
        ]
    )
    assert rules.host_rule("http://a.test:8080") == HostRule(delay=2.0)
    assert rules.host_rule("https://a.test:443") == HostRule(per_host_concurrency=3)
    assert rules.host_rule("http://[::1]:80") == HostRule(delay=0.5)
    assert rules.host_rule("http://h.example:80") is None
    assert rules.host_rule("http://other.example:80") is None


def test_warc_redacts_credentials_whatever_built_the_response(tmp_path: Path) -> None:
    from warcio.archiveiterator import ArchiveIterator

    from crawler.fetch.response import Response
    from crawler.output.warc import WarcOutput

    sent = (("Authorization", "Basic c2VjcmV0"), ("Cookie", "sid=s1"), ("Accept", "text/html"))
    warc = WarcOutput(tmp_path / "r.warc.gz")
    warc.write(
        Response(
            url="http://a.test/",
            status=200,
            headers=(),
            body=b"",
            latency=0.0,
            elapsed=0.0,
            request_headers=sent,
        )
    )
    warc.close()
    with warc.files[0].open("rb") as fh:
        (request,) = [r for r in ArchiveIterator(fh) if r.rec_type == "request"]
        headers = dict(request.http_headers.headers)
    assert headers["Authorization"] == REDACTED and headers["Cookie"] == REDACTED
    assert headers["Accept"] == "text/html" and headers["Host"] == "a.test"
