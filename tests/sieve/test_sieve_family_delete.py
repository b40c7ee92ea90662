"""Deletion (counting and cuckoo filters) and the counting filter's saturated counters."""

from __future__ import annotations

import numpy as np
import pytest

from crawler.sieve import make_filter
from crawler.sieve.kinds.common import hash_batch, hash_one
from crawler.sieve.kinds.counting import MAX_COUNT, CountingFilter, CountingStage
from tests.support.sieve import DELETING, add_in_pages, urls


@pytest.mark.parametrize("kind", DELETING)
def test_removed_keys_go_and_the_others_stay(kind: str) -> None:
    f = make_filter(kind, capacity=2000, error_rate=0.001)
    keys = urls(0, 5000)  # three stages
    add_in_pages(f, keys)
    gone, kept = keys[::3], [k for i, k in enumerate(keys) if i % 3]
    assert all(f.remove(k) for k in gone)
    assert all(k in f for k in kept)  # no other key disappeared
    assert sum(k in f for k in gone) <= 0.01 * len(gone)  # false positives only
    assert len(f) == 5000 - len(gone)
    assert sum(f.add(k) for k in gone) >= 0.99 * len(gone)  # may be admitted again


@pytest.mark.parametrize("kind", DELETING)
def test_each_add_is_an_entry_and_each_remove_takes_one_back(kind: str) -> None:
    f = make_filter(kind, capacity=100, error_rate=0.001)
    assert f.add("https://a.test/x") and not f.add("https://a.test/x")
    assert f.remove("https://a.test/x")
    assert "https://a.test/x" in f and len(f) == 1  # added twice, removed once
    assert f.remove("https://a.test/x")
    assert "https://a.test/x" not in f and len(f) == 0
    assert f.remove("https://a.test/x") is False


@pytest.mark.parametrize("kind", DELETING)
def test_add_if_absent_records_nothing_for_a_key_reported(kind: str) -> None:
    f = make_filter(kind, capacity=100, error_rate=0.001)
    assert f.add_if_absent("https://a.test/x") and not f.add_if_absent("https://a.test/x")
    assert len(f) == 1 and f.remove("https://a.test/x")
    assert "https://a.test/x" not in f and len(f) == 0


@pytest.mark.parametrize("kind", DELETING)
def test_removing_a_key_never_inserted_changes_nothing(kind: str) -> None:
    f = make_filter(kind, capacity=3000, error_rate=0.001)
    keys = urls(0, 3000)
    add_in_pages(f, keys)
    before = f.to_bytes()
    strangers = [k for k in urls(1_000_000, 3000) if k not in f]
    assert len(strangers) > 2900
    assert not any(f.remove(k) for k in strangers)
    assert f.to_bytes() == before and all(k in f for k in keys)


@pytest.mark.parametrize("kind", DELETING)
def test_removing_false_positives_costs_at_most_their_collisions(kind: str) -> None:
    """The documented limit: a never-inserted key that IS reported (a false positive) is
    removed like the key it collides with; then that key may disappear, and nothing else."""
    f = make_filter(kind, capacity=2000, error_rate=0.05)
    keys = urls(0, 2000)
    keys = [k for k, new in zip(keys, add_in_pages(f, keys), strict=True) if new]  # inserted
    impostors = [k for k in urls(1_000_000, 20_000) if k in f]
    assert impostors  # at 5% there are some
    removed = [k for k in impostors if f.remove(k)]  # an earlier removal may clear a later one
    assert removed
    lost = sum(k not in f for k in keys)
    # a cuckoo entry is one key's; a counter at 1 is one key's, and an impostor has k of them
    per = 1 if kind == "cuckoo" else max(st.k for st in f._stages)  # type: ignore[attr-defined]
    assert lost <= len(removed) * per


def test_counters_saturate_and_are_never_decremented_once_saturated() -> None:
    f = CountingFilter(1, 0.2)  # a tiny stage: counters fill up fast
    st = f._stages[0]
    assert isinstance(st, CountingStage)
    h = (12345, 678)
    pos = st.positions_one(h)
    for _ in range(40):  # drive the key's counters to the top (as 40 colliding keys would)
        for x in pos:
            if st.counter(x) < MAX_COUNT:
                st.cells[x >> 1] += 1 << ((x & 1) << 2)
    assert all(st.counter(x) == MAX_COUNT for x in pos)
    assert not st.insert(h)  # present: nothing changes
    st.remove(h)
    assert all(st.counter(x) == MAX_COUNT for x in pos)  # saturated: kept
    assert st.contains(h)


def test_batch_increments_saturate_like_one_by_one() -> None:
    one, batch = CountingStage(1, 0.3), CountingStage(1, 0.3)  # 64 counters, k = 2
    for st in (one, batch):
        st.cells[:] = b"\x0e" * len(st.cells)  # even counters at 14, odd ones at 0
    keys = urls(0, 400)
    answers = [one.insert(hash_one(k)) for k in keys]
    new, last = batch.insert_rows(hash_batch(keys), np.arange(len(keys)), None)
    assert last == len(keys) and new.tolist() == answers and any(answers)
    assert batch.cells == one.cells
    assert {one.counter(i) for i in range(0, one.m, 2)} == {14, MAX_COUNT}
