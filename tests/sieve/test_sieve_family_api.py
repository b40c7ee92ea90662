"""The family's interface: kinds, construction, validation, the Protocol, the scalable adapter."""

from __future__ import annotations

import pytest

from crawler.sieve import (
    FILTER_KINDS,
    SeenFilter,
    Sieve,
    filter_from_bytes,
    load_filter,
    make_filter,
    save_filter,
)
from tests.support.sieve import DELETING, urls


def test_the_kinds_are_the_issues_names() -> None:
    assert FILTER_KINDS == (
        "scalable", "bloom", "blocked", "multilayer", "counting", "cuckoo", "stable",
    )  # fmt: skip


@pytest.mark.parametrize("kind", FILTER_KINDS)
def test_every_kind_answers_the_interface(kind: str) -> None:
    f = make_filter(kind, capacity=1000, error_rate=0.01)
    assert isinstance(f, SeenFilter)
    assert f.kind == kind
    assert f.supports_remove is (kind in DELETING)
    assert len(f) == 0 and f.size_in_bytes > 0 and 0 < f.false_positive_bound <= 0.01
    key = urls(0, 1)[0]
    assert key not in f
    assert f.add(key) is True
    assert key in f and len(f) == 1
    entries = 2 if kind in DELETING else 1  # a kind that deletes records every add
    assert f.add(key) is False and len(f) == entries
    assert f.add_many([key, "https://x.test/", "https://x.test/"]) == [False, True, False]
    assert f.add_if_absent(key) is False and f.add_if_absent("https://y.test/") is True
    assert f.add_many_if_absent(["https://y.test/", "https://z.test/"]) == [False, True]
    assert len(f) == (7 if kind in DELETING else 4)
    assert isinstance(f.to_bytes(), bytes)


@pytest.mark.parametrize("kind", [k for k in FILTER_KINDS if k not in DELETING])
def test_kinds_that_cannot_delete_refuse_remove(kind: str) -> None:
    f = make_filter(kind, capacity=100, error_rate=0.01)
    f.add("https://a.test/")
    with pytest.raises(TypeError, match=kind):
        f.remove("https://a.test/")
    assert "https://a.test/" in f


@pytest.mark.parametrize(
    ("kind", "kwargs", "message"),
    [
        ("nope", {}, "unknown filter kind 'nope'"),
        ("bloom", {"capacity": 0}, "capacity must be an integer >= 1"),
        ("blocked", {"capacity": 2.5}, "capacity must be an integer >= 1"),
        ("counting", {"error_rate": 1.0}, "error_rate must be in"),
        ("cuckoo", {"error_rate": "0.1"}, "error_rate must be a number"),
        ("multilayer", {"layers": 0}, "layers must be an integer"),
        ("blocked", {"ratio": 1.0}, "ratio must be in"),
        ("counting", {"growth": 0.5}, "growth must be >= 1"),
        ("stable", {"recall": 1.0}, "recall must be"),
        ("stable", {"recall_window": 0}, "recall_window must be"),
        ("bloom", {"ratio": 0.5}, "bloom filter: .*ratio"),
        ("scalable", {"ratio": 2.0}, "ratio must be in"),
    ],
)
def test_constructors_validate(kind: str, kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"capacity": 100, "error_rate": 0.01, **kwargs}
    with pytest.raises(ValueError, match=message):
        make_filter(kind, **args)  # type: ignore[arg-type]


def test_scalable_is_the_sieve_and_saves_the_sieves_file() -> None:
    f = make_filter("scalable", capacity=500, error_rate=0.001)
    s = Sieve(500, 0.001)
    keys = urls(0, 1200)
    assert f.add_many(keys) == s.add_many(keys)
    assert isinstance(f, Sieve)
    assert f.to_bytes() == s.to_bytes()  # version 1, byte for byte
    back = filter_from_bytes(s.to_bytes())
    assert back.kind == "scalable" and back.to_bytes() == s.to_bytes()


@pytest.mark.parametrize("kind", FILTER_KINDS)
def test_save_and_load_a_file(kind: str, tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "seen.sieve"
    f = make_filter(kind, capacity=200, error_rate=0.01)
    f.add_many(urls(0, 300))
    save_filter(f, path)
    g = load_filter(path)
    assert g.kind == kind and g.to_bytes() == f.to_bytes()
