"""The stable filter: fixed memory, recent keys remembered, old ones forgotten, rate <= P."""

from __future__ import annotations

import pytest

from crawler.sieve import make_filter
from crawler.sieve.kinds.stable import MAX_DECREMENTS, StableFilter, stable_shape
from tests.support.sieve import add_in_pages, urls


@pytest.mark.slow
@pytest.mark.parametrize("p", [0.01, 0.001])
def test_recent_keys_remembered_old_ones_forgotten_rate_at_p(p: float) -> None:
    capacity = 50_000
    f = make_filter("stable", capacity=capacity, error_rate=p)
    size = f.size_in_bytes
    keys = urls(0, 4 * capacity)  # well past the stable point
    add_in_pages(f, keys)
    assert f.size_in_bytes == size  # never grows
    recent = keys[-capacity // 100 :]
    assert sum(k in f for k in recent) >= 0.99 * len(recent)
    old = keys[:5000]
    assert sum(k in f for k in old) <= 0.05 * len(old)  # forgotten (false positives aside)
    probes = urls(10_000_000, 40_000)
    assert sum(k in f for k in probes) / len(probes) <= 1.25 * p
    assert f.false_positive_bound <= p


def test_the_shape_follows_the_papers_formulas() -> None:
    m, k, d, pd = stable_shape(1000, 0.01, 0.99)
    f = StableFilter(100_000, 0.01)
    assert (f.m, f.k, f.d, f.pd) == (m, k, d, pd) and m % 64 == 0
    assert 1 <= pd <= MAX_DECREMENTS
    assert f.false_positive_bound <= 0.01  # (1 - p0)^K at the stable point
    assert f.recall_at(1000) >= 0.99 > f.recall_at(100_000)
    bigger = StableFilter(100_000, 0.01, recall_window=10_000)  # remember more: more cells
    assert bigger.m > f.m and bigger.recall_at(10_000) >= 0.99


def test_a_repeated_key_is_refreshed() -> None:
    f = make_filter("stable", capacity=10_000, error_rate=0.01)
    first = "https://keep.test/"
    f.add(first)
    seen = 0
    for i in range(0, 20_000, 50):  # 50 < its window of 100 keys; 20,000 forget everything
        f.add_many(urls(i, 50))
        seen += not f.add(first)  # seen (each time with probability >= 99%), set to Max again
    assert seen >= 0.99 * 400 and first in f
