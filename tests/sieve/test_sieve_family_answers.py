"""The family's answers: no false negatives, add_many == one by one, false-positive rates."""

from __future__ import annotations

import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crawler.sieve import FILTER_KINDS, make_filter
from tests.support.sieve import GROWING, add_in_pages, urls

keys = st.lists(st.text(alphabet="ab/:.?=h", max_size=8), max_size=200)
no_stable = [k for k in FILTER_KINDS if k != "stable"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", no_stable)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=keys, capacity=st.integers(1, 60))
def test_no_false_negatives(kind: str, items: list[str], capacity: int) -> None:
    f = make_filter(kind, capacity=capacity, error_rate=0.01)
    for x in items:
        f.add(x)
    assert all(x in f for x in items)
    g = make_filter(kind, capacity=capacity, error_rate=0.01)
    g.add_many(items)
    assert all(x in g for x in items)


@settings(max_examples=25, deadline=None)
@given(items=keys)
def test_stable_has_no_false_negatives_among_its_recent_keys(items: list[str]) -> None:
    f = make_filter("stable", capacity=100_000, error_rate=0.01)  # remembers ~1,000 keys
    f.add_many(items)
    assert all(x in f for x in items[-200:])


@pytest.mark.slow
@pytest.mark.parametrize("kind", FILTER_KINDS)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=keys, capacity=st.integers(1, 40), cut=st.integers(0, 200))
def test_add_many_gives_the_answers_and_state_of_one_by_one(
    kind: str, items: list[str], capacity: int, cut: int
) -> None:
    items = items + items[: cut % (len(items) + 1)] + urls(0, 50)  # duplicates, a big batch
    one = make_filter(kind, capacity=capacity, error_rate=0.05)
    batch = make_filter(kind, capacity=capacity, error_rate=0.05)
    assert batch.add_many(items) == [one.add(x) for x in items]
    assert batch.to_bytes() == one.to_bytes()


@pytest.mark.slow
@pytest.mark.parametrize("kind", FILTER_KINDS)
def test_add_many_matches_one_by_one_over_many_pages(kind: str) -> None:
    items = urls(0, 6000)
    items += items[::7]  # links already seen, as on every page
    one = make_filter(kind, capacity=1500, error_rate=0.01)
    batch = make_filter(kind, capacity=1500, error_rate=0.01)
    assert add_in_pages(batch, items) == [one.add(x) for x in items]
    assert batch.to_bytes() == one.to_bytes() and len(batch) == len(one)


@pytest.mark.slow
@pytest.mark.parametrize("kind", FILTER_KINDS)
@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(items=keys, capacity=st.integers(1, 40), cut=st.integers(0, 200))
def test_add_many_if_absent_gives_the_answers_and_state_of_one_by_one(
    kind: str, items: list[str], capacity: int, cut: int
) -> None:
    items = urls(0, 50) + items + items[: cut % (len(items) + 1)] + urls(0, 50)
    one = make_filter(kind, capacity=capacity, error_rate=0.05)
    batch = make_filter(kind, capacity=capacity, error_rate=0.05)
    assert batch.add_many_if_absent(items) == [one.add_if_absent(x) for x in items]
    assert batch.to_bytes() == one.to_bytes() and len(batch) == len(one)


def _rate(kind: str, n: int, capacity: int, p: float) -> float:
    f = make_filter(kind, capacity=capacity, error_rate=p)
    add_in_pages(f, urls(0, n), 1000)
    probes = urls(10_000_000, 40_000)
    return sum(x in f for x in probes) / len(probes)


@pytest.mark.slow
@pytest.mark.parametrize("kind", FILTER_KINDS)
def test_false_positive_rate_at_capacity(kind: str) -> None:
    capacity = 20_000
    p = 0.01
    rate = _rate(kind, capacity, capacity, p)
    assert rate <= 1.25 * p  # 40,000 probes: ~400 expected at P, a 1.25 P margin is ~5 sigma


@pytest.mark.slow
@pytest.mark.parametrize("kind", GROWING)
def test_growth_keeps_the_bound_at_ten_times_capacity(kind: str) -> None:
    p = 0.02
    f = make_filter(kind, capacity=4000, error_rate=p)
    add_in_pages(f, urls(0, 40_000), 1000)
    assert f.false_positive_bound < p
    probes = urls(10_000_000, 40_000)
    assert sum(x in f for x in probes) / len(probes) <= 1.25 * p


def test_bloom_does_not_grow_and_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    f = make_filter("bloom", capacity=500, error_rate=0.01)
    size = f.size_in_bytes
    with caplog.at_level(logging.WARNING, logger="crawler.sieve"):
        f.add_many(urls(0, 500))
        assert not caplog.records
        f.add_many(urls(500, 1000))
        for x in urls(1500, 200):
            f.add(x)
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == [
        "bloom filter passed its capacity"
    ]
    assert f.size_in_bytes == size and f.false_positive_bound > 0.01
    probes = urls(10_000_000, 20_000)
    assert sum(x in f for x in probes) / len(probes) > 0.1  # 3.4x capacity: it degrades
