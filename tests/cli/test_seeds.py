"""Seeds: every bad line reported, empty files named, non-URLs get a suggestion; seed outcomes."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawler.cli.seeds import (
    MAX_REPORTED,
    SeedReport,
    collect_seeds,
    failure_reason,
    read_seeds,
    suggest_url,
)
from crawler.errors import SeedError
from crawler.output.results import CrawlResult


def test_every_bad_line_is_reported(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://a.test/\nftp://x/\n# ok\nnot a url\nhttp://b.test/\nmailto:me@x\n")
    with pytest.raises(SeedError) as caught:
        collect_seeds([str(seeds)])
    message = str(caught.value)
    assert message.startswith("3 bad seed lines:")
    for number, line, why in (
        (2, "'ftp://x/'", "the scheme is ftp:, not http(s)"),
        (4, "'not a url'", "no scheme (http:// or https://)"),
        (6, "'mailto:me@x'", "the scheme is mailto:, not http(s)"),
    ):
        assert f"{seeds}:{number}: not a crawlable http(s) URL: {why}: {line}" in message


def test_problems_of_every_argument_are_reported_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("a.txt").write_text("http://a.test/\nbad one\n")
    with pytest.raises(SeedError) as caught:
        collect_seeds(["a.txt", "example.net", "ftp://x/"])
    assert str(caught.value).splitlines() == [
        "a.txt:2: not a crawlable http(s) URL: no scheme (http:// or https://): 'bad one'",
        "example.net: neither a seeds file nor a URL (no such file); "
        "did you mean http://example.net/?",
        "ftp://x/: not a crawlable http(s) URL (a ftp: URL); seeds are http:// or https:// URLs",
    ]


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("mailto:me@x", "mailto:me@x: not a crawlable http(s) URL (a mailto: URL); seeds are "),
        ("FILE:///tmp/x", "FILE:///tmp/x: not a crawlable http(s) URL (a file: URL); seeds are "),
        (
            "http://exa mple.org/",
            "http://exa mple.org/: not a crawlable http(s) URL: a space in the host 'exa mple.org'",
        ),
        ("http://a<b.test/", "http://a<b.test/: not a crawlable http(s) URL: the character '<'"),
        ("http://", "http://: not a crawlable http(s) URL"),
    ],
)
def test_a_bad_url_argument_is_named_as_given(target: str, message: str) -> None:
    # named as the user typed it, not as line 1 of a "command line" file
    with pytest.raises(SeedError) as caught:
        collect_seeds([target])
    assert str(caught.value).startswith(message)
    assert "command line" not in str(caught.value)


def test_an_http_url_browsers_read_is_a_seed_on_the_command_line_as_in_a_file(
    tmp_path: Path,
) -> None:
    # `http:/host/` is http://host/ to a browser and in a seeds file: not "not an http: URL"
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http:/a.test/x\n")
    assert collect_seeds([str(seeds)]) == ["http:/a.test/x"]
    assert collect_seeds(["http:/a.test/x", " https:b.test "]) == ["http:/a.test/x", "https:b.test"]


def test_a_comment_after_a_seed_is_not_part_of_it() -> None:
    # it was fetched as http://a.test/%20%20 (the spaces kept, the comment a fragment)
    lines = ["http://a.test/  # the home page", "http://b.test/x#frag\t# tab", "# whole line"]
    assert read_seeds("f", lines) == ["http://a.test/", "http://b.test/x#frag"]


def test_words_after_a_seed_are_refused_with_the_line_number() -> None:
    # it was the URL http://a.test/path%20extra%20words, silently
    with pytest.raises(SeedError) as caught:
        read_seeds(
            "f", ["http://a.test/", "http://a.test/path extra words", "http://exa mple.org/"]
        )
    assert str(caught.value).splitlines()[1:] == [
        "  f:2: words after the URL ('extra words'): one URL per line, a comment starts with "
        "' #': 'http://a.test/path extra words'",
        "  f:3: not a crawlable http(s) URL: a space in the host 'exa mple.org': "
        "'http://exa mple.org/'",
    ]
    assert read_seeds("f", ["http://a.test/path%20x  # a comment"]) == ["http://a.test/path%20x"]


def test_bad_lines_are_capped() -> None:
    lines = [f"bad line {n}" for n in range(MAX_REPORTED + 7)]
    with pytest.raises(SeedError) as caught:
        read_seeds("f", lines)
    message = str(caught.value)
    assert message.count("not a crawlable") == MAX_REPORTED
    assert f"f:{MAX_REPORTED}:" in message and f"f:{MAX_REPORTED + 1}:" not in message
    assert message.endswith("... and 7 more")


def test_empty_seeds_file_is_named(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing yet\n\n")
    with pytest.raises(SeedError, match=r"no seeds in .*empty\.txt"):
        collect_seeds([str(empty)])
    # beside seeds from elsewhere, an empty file is no error
    assert collect_seeds([str(empty), "http://a.test/"]) == ["http://a.test/"]


@pytest.mark.parametrize(
    ("target", "url"),
    [
        ("example.net", "http://example.net/"),
        ("docs.python.org/3/", "http://docs.python.org/3/"),
        ("localhost:8000", "http://localhost:8000/"),
        ("seeds.txt", None),  # a missing seeds file, not a host
        ("nothing", None),
        ("./dir.d", None),
        # a mistyped "://"
        ("http//host.test/", "http://host.test/"),
        ("https//example.org/a?b", "https://example.org/a?b"),
        ("HTTP;//example.org", "http://example.org/"),
        ("http:example.org/x", "http://example.org/x"),
        ("http//nothing", None),
    ],
)
def test_suggestion_for_an_argument_that_is_neither_file_nor_url(
    target: str, url: str | None
) -> None:
    assert suggest_url(target) == url


def test_host_name_argument_gets_a_suggestion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SeedError) as caught:
        collect_seeds(["example.net"])
    assert str(caught.value) == (
        "example.net: neither a seeds file nor a URL (no such file); "
        "did you mean http://example.net/?"
    )


@pytest.mark.parametrize(
    ("seed", "problem"),
    [
        ("http://host.test:99999/", "port 99999 is out of range (1-65535)"),
        ("http://host.test:0/a", "port 0 is out of range (1-65535)"),
        ("http://user:pw@host.test:70000", "port 70000 is out of range (1-65535)"),
        ("http://[::1]:65536/", "port 65536 is out of range (1-65535)"),
    ],
)
def test_a_port_out_of_range_is_named(seed: str, problem: str) -> None:
    with pytest.raises(SeedError) as caught:
        collect_seeds([seed])
    assert str(caught.value) == f"{seed}: not a crawlable http(s) URL: {problem}"


def test_a_port_in_range_is_a_seed() -> None:
    assert collect_seeds(["http://host.test:65535/"]) == ["http://host.test:65535/"]


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (
            "robots: robots.txt unreachable (connect: cannot connect to 127.0.0.1:9: refused; "
            "RFC 9309: complete disallow)",
            "connect: cannot connect to 127.0.0.1:9: refused (fetching its host's robots.txt)",
        ),
        (
            "robots: robots.txt unreachable (dns: cannot resolve docs.python.org; "
            "RFC 9309: complete disallow)",
            "dns: cannot resolve docs.python.org (fetching its host's robots.txt)",
        ),
        (
            "robots: robots.txt unreachable (HTTP 503; RFC 9309: complete disallow)",
            "its host's robots.txt answered HTTP 503 (RFC 9309: then nothing may be fetched)",
        ),
        ("timeout: read timed out", "timeout: read timed out"),
        ("robots: disallowed by robots.txt", "robots: disallowed by robots.txt"),
    ],
)
def test_failure_reason_is_the_real_one(error: str, reason: str) -> None:
    assert failure_reason(error) == reason


def result(
    url: str, status: int | None, *, depth: int = 0, error: str | None = None
) -> CrawlResult:
    parent = None if depth == 0 else "http://a.test/"
    return CrawlResult(url=url, key=url, status=status, depth=depth, parent=parent,
                       fetched_at="2026-01-01T00:00:00.000Z", error=error)  # fmt: skip


def test_seed_report_counts_seeds_only() -> None:
    report = SeedReport()
    assert not report.nothing_fetched  # no seed tried (a resumed crawl whose seeds are done)
    report.observe(result("http://a.test/x", 200, depth=1))  # not a seed
    report.observe(result("http://a.test/", None, error="dns: cannot resolve a.test"))
    assert report.tried == 1 and report.nothing_fetched
    assert "http://a.test/: dns: cannot resolve a.test" in report.message()
    report.observe(result("http://b.test/", 404))  # any HTTP status is a response
    assert report.tried == 2 and report.answered == 1 and not report.nothing_fetched


def test_seed_report_keeps_the_redirects_out_of_scope_past_many_others() -> None:
    """Seeds redirected to URLs already seen (their target not admitted, in scope) must not
    take the places of the one redirected out of scope, which the command reports."""
    report = SeedReport(lambda seed, location: "other.test" in location)

    def redirect(seed: str, location: str) -> CrawlResult:
        return CrawlResult(url=seed, key=seed, status=301, depth=0, parent=None,
                           fetched_at="2026-01-01T00:00:00.000Z", location=location)  # fmt: skip

    for i in range(MAX_REPORTED + 5):  # each to a page another seed's redirect took first
        report.observe(redirect(f"http://a.test/{i}", "http://a.test/home"))
    report.observe(redirect("http://a.test/moved", "https://other.test/"))
    assert report.redirected == [("http://a.test/moved", "https://other.test/")]
