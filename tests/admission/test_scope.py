from __future__ import annotations

import pytest

from crawler.admission.scope import Scope, UrlTraps
from crawler.urls.host import split_host


@pytest.mark.parametrize(
    ("key", "host"),
    [
        ("http://a.test/", "a.test"),
        ("http://a.test:8080/x?y", "a.test"),
        ("https://[::1]:8443/x", "[::1]"),
        ("https://[::1]/", "[::1]"),
        ("http://a.test", "a.test"),
    ],
)
def test_split_host(key: str, host: str) -> None:
    assert split_host(key) == host


def test_default_scope_is_seed_hosts_exactly() -> None:
    scope = Scope(hosts=["a.test"])
    assert scope.check("http://a.test/x", 1) is None
    assert scope.check("http://a.test:81/x", 1) is None
    assert scope.check("http://sub.a.test/x", 1) == "domain"
    assert scope.check("http://b.test/x", 1) == "domain"


def test_allowed_domains_admit_subdomains() -> None:
    scope = Scope(allowed_domains=["a.test"])
    assert scope.check("http://a.test/", 0) is None
    assert scope.check("http://www.a.test/", 0) is None
    assert scope.check("http://evila.test/", 0) == "domain"


def test_depth_extension_include_exclude() -> None:
    scope = Scope(hosts=["a.test"], max_depth=2, skip_extensions=["png", "PDF"],
                  include=[r"/docs/"], exclude=[r"\?print="])  # fmt: skip
    assert scope.check("http://a.test/docs/x", 2) is None
    assert scope.check("http://a.test/docs/x", 3) == "depth"
    assert scope.check("http://a.test/docs/x.PNG", 1) == "extension"
    assert scope.check("http://a.test/docs/x.pdf?v=1", 1) == "extension"
    assert scope.check("http://a.test/docs/v.png/x", 1) is None
    assert scope.check("http://a.test/blog/x", 1) == "include"
    assert scope.check("http://a.test/docs/x?print=1", 1) == "exclude"


def test_max_pages_per_host() -> None:
    scope = Scope(hosts=["a.test", "b.test"], max_pages_per_host=2)
    for _ in range(2):
        assert scope.check("http://a.test/x", 1) is None
        scope.admitted("http://a.test/x")
    assert scope.check("http://a.test/y", 1) == "host_limit"
    assert scope.check("http://b.test/y", 1) is None


# -- trap guards and URL limits -------------------------------------------------------------


def test_trap_guards_are_on_by_default() -> None:
    scope = Scope(hosts=["a.test"])
    assert (scope.max_url_length, scope.max_path_depth) == (2048, 32)
    assert (scope.max_segment_repeats, scope.max_query_params) == (2, 32)
    assert scope.check("http://a.test/" + "x" * 2034, 1) is None  # 2048 characters
    assert scope.check("http://a.test/" + "x" * 2035, 1) == "url_length"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/a/b/c", None),
        ("/a/a/b", None),  # twice is fine
        ("/a/a/a", "repeated_segment"),  # Heritrix: more than 2 repetitions
        ("/a/b/a/b/a/", "repeated_segment"),  # a relative-link loop, not consecutive
        ("/x/a/y/a/z/a.html", None),  # "a.html" is another segment
        ("/a//b//c//d/", None),  # empty segments are not counted
        ("/A/a/A/", None),  # case matters
        ("/2024/01/01/01/post", "repeated_segment"),
        ("/" + "/".join(str(i) for i in range(32)), None),  # 32 slashes
        ("/" + "/".join(str(i) for i in range(33)), "path_depth"),
        ("/" + "x/" * 32, "path_depth"),  # depth is checked first
    ],
)
def test_path_traps(path: str, reason: str | None) -> None:
    scope = Scope(hosts=["a.test"])
    assert scope.check("http://a.test" + path, 1) == reason
    assert scope.check("http://a.test" + path + "?q=a/a/a/a", 1) == reason  # query not counted


def test_query_params_limit() -> None:
    scope = Scope(hosts=["a.test"], traps=UrlTraps(max_query_params=3))
    assert scope.check("http://a.test/?a=1&b=2&c=3", 1) is None
    assert scope.check("http://a.test/?a=1&b=2&c=3&d=4", 1) == "query_params"
    assert scope.check("http://a.test/a&b&c&d?x", 1) is None  # "&" in the path is not a pair


def test_limits_can_be_switched_off() -> None:
    scope = Scope(
        hosts=["a.test"],
        traps=UrlTraps(
            max_url_length=0, max_path_depth=0, max_segment_repeats=0, max_query_params=0
        ),
    )
    key = "http://a.test" + "/a" * 3000 + "?" + "&".join(["p=1"] * 100)
    assert scope.check(key, 1) is None


def test_check_order_puts_cheap_and_strong_reasons_first() -> None:
    scope = Scope(
        hosts=["a.test"], max_depth=2, max_pages_per_host=1, traps=UrlTraps(max_url_length=30)
    )
    long_trap = "/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a"
    assert scope.check("http://b.test" + long_trap, 9) == "domain"
    assert scope.check("http://a.test" + long_trap, 9) == "depth"
    assert scope.check("http://a.test" + long_trap, 1) == "url_length"
    scope.admitted("http://a.test/")
    assert scope.check("http://a.test/a/a/a", 1) == "repeated_segment"
    assert scope.check("http://a.test/b", 1) == "host_limit"


def test_key_without_path_and_ipv6_host() -> None:
    scope = Scope(hosts=["a.test", "[::1]"], skip_extensions=["test"])
    assert scope.check("http://a.test", 1) is None
    assert scope.check("http://[::1]:8080/a/a/a", 1) == "repeated_segment"


@pytest.mark.parametrize(
    "kwargs",
    [{"max_url_length": -1}, {"max_path_depth": 1.5}, {"max_segment_repeats": True},
     {"max_query_params": "3"}, {"max_depth": -2}],
)  # fmt: skip
def test_bad_limits_are_rejected(kwargs: dict[str, object]) -> None:
    name = next(iter(kwargs))
    traps = {} if name == "max_depth" else {"traps": UrlTraps(**kwargs)}  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=name):
        Scope(hosts=["a.test"], **(kwargs if name == "max_depth" else traps))  # type: ignore[arg-type]


def test_every_reason_is_listed() -> None:
    from crawler.admission.scope import REASONS

    scope = Scope(
        hosts=["a.test"],
        max_depth=1,
        skip_extensions=["png"],
        exclude=["ex"],
        include=["^http://a.test/(?!no)"],
        max_pages_per_host=1,
        traps=UrlTraps(max_url_length=200, max_query_params=2),
    )
    keys = {
        "domain": ("http://b.test/", 1),
        "depth": ("http://a.test/", 2),
        "url_length": ("http://a.test/" + "x" * 300, 1),
        "query_params": ("http://a.test/?a&b&c", 1),
        "path_depth": ("http://a.test" + "/x" * 40, 1),
        "repeated_segment": ("http://a.test/x/x/x", 1),
        "extension": ("http://a.test/x.png", 1),
        "exclude": ("http://a.test/ex", 1),
        "include": ("http://a.test/no", 1),
    }
    for reason, (key, depth) in keys.items():
        assert scope.check(key, depth) == reason, key
    scope.admitted("http://a.test/")
    assert scope.check("http://a.test/y", 1) == "host_limit"
    assert tuple([*keys, "host_limit"]) == REASONS


def test_cached_verdicts_equal_fresh_ones_across_depths_and_host_limits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import crawler.admission.scope as scope_module

    monkeypatch.setattr(scope_module, "VERDICT_CACHE", 8)  # generations swap every 4 keys
    kwargs: dict[str, object] = {
        "hosts": ["a.test"], "max_depth": 2, "max_pages_per_host": 3,
        "skip_extensions": ["png"], "exclude": [r"/private/"],
    }  # fmt: skip
    cached = Scope(**kwargs)  # type: ignore[arg-type]
    keys = [
        "http://a.test/x", "http://b.test/x", "http://a.test/p.png", "http://a.test/private/1",
        "http://a.test/" + "a/" * 40, "http://a.test/y", "http://a.test/z?" + "&".join("q" * 40),
    ]  # fmt: skip
    for round_ in range(3):
        for depth in (0, 1, 2, 3):
            for key in keys:
                fresh = Scope(**kwargs)  # type: ignore[arg-type]
                for _ in range(round_):  # the same admitted counts as the cached scope's
                    fresh.admitted("http://a.test/")
                assert cached.check(key, depth) == fresh.check(key, depth), (key, depth, round_)
        cached.admitted("http://a.test/")
    # 3 admitted now: the cached "in scope" verdict of a.test/x gives way to the page limit
    assert cached.check("http://a.test/x", 1) == "host_limit"


def test_adding_a_host_revises_cached_domain_verdicts() -> None:
    scope = Scope(hosts=["a.test"])
    assert scope.check("http://b.test/", 0) == "domain"
    scope.add_host("b.test")
    assert scope.check("http://b.test/", 0) is None
