from __future__ import annotations

import pytest

from crawler.scope import Scope, split_host


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
