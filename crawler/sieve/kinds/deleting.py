"""What the kinds that delete (``counting``, ``cuckoo``) share: every add is an entry.

`add` and `add_many` record one entry of the key each time, whether the filter reports it already
or not (a multiset, as RedisBloom's ``CF.ADD``), and `remove` takes one entry back. So a key added
n times and removed fewer times stays reported, and removing a key that was added never takes
another key's entry, even when the key was a false positive of the filter when it was added (it
was recorded all the same). `add_if_absent` / `add_many_if_absent` are the test-and-set (as
``CF.ADDNX``): nothing is recorded for a key the filter reports, so such a key must not be
removed unless the caller knows it was recorded (the crawl's exact tier does: `SeenTiers`).

The answers are the same for both: True when no stage reported the key before the add.

The stage rule. A key's entries all live in one stage, the oldest stage that reports it:

- an add goes to the oldest stage reporting the key, full or not, else to the newest (a new one
  when the newest is full); `remove` takes from the oldest stage reporting the key;
- an entry added to a stage that already reports the key changes what no stage reports (its
  counters are non-zero already; its fingerprint already sits in its buckets), so a stage older
  than a key's never starts reporting it, and the stage `remove` looks in is the key's own.

`len` and each stage's count are the entries held (adds minus removes): a stage is full at
`capacity` entries, copies included (conservative: a copy adds no false positive).

Removing a key that was never recorded is the hazard every filter that deletes has (``CF.DEL``,
the papers): a filter cannot tell such a key's false positive from a key it holds, so it removes
the entry of the key it collides with, which may then be reported absent. With probability
<= `false_positive_bound` for a key never added; a caller that may remove such keys must check
them against an exact record first (`SeenTiers.forget` does).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from crawler.sieve.kinds.common import BATCH_MIN, Staged

__all__ = ["DeletingStaged"]


class DeletingStaged(Staged):
    """`Staged` whose `add` records every time and whose `remove` takes an entry back."""

    supports_remove: ClassVar[bool] = True

    def add(self, key: str | bytes) -> bool:
        h = self._hash(key)
        for st in self._stages:  # the oldest reporting it holds the key's entries
            if st.contains(h):
                st.record(h)
                self._len += 1
                return False
        if self._full(self._stages[-1]):
            self._open_stage()
        self._stages[-1].record(h)
        self._len += 1
        self._added()
        return True

    def add_many(self, keys: Sequence[str | bytes]) -> list[bool]:
        """`[self.add(k) for k in keys]`: the same answers and the same state, vectorized.

        A stage reports the same keys before and after copies go into it, so the keys an older
        stage reports are recorded there first, then the others go to the newest in order."""
        if len(keys) < BATCH_MIN:
            add = self.add
            return [add(k) for k in keys]
        hb = self._hash_many(keys)
        out = np.zeros(len(keys), dtype=bool)
        pending = np.arange(len(keys))
        for st in self._stages[:-1]:
            hit = st.present(hb, pending)
            if hit.any():
                st.record_rows(hb, pending[hit], None)  # all answered False
                self._len += int(np.count_nonzero(hit))
                pending = pending[~hit]
        while pending.size:
            cur = self._stages[-1]
            if self._full(cur):  # as in `add`: its keys are recorded in it, the rest grow
                hit = cur.present(hb, pending)
                if hit.any():
                    cur.record_rows(hb, pending[hit], None)
                    self._len += int(np.count_nonzero(hit))
                    pending = pending[~hit]
                if pending.size:
                    self._open_stage()
                continue
            room = cur.capacity - cur.count if self.grows else None
            new, last = cur.record_rows(hb, pending, room)
            out[pending[:last]] = new
            self._len += last
            if new.any():
                self._added()
            pending = pending[last:]
        answers: list[bool] = out.tolist()
        return answers

    def remove(self, key: str | bytes) -> bool:
        """Take one entry of the key back from the oldest stage reporting it (the stage rule:
        its own). False (nothing changed) when no stage reports it."""
        h = self._hash(key)
        for st in self._stages:
            if st.contains(h):
                st.remove(h)
                st.count -= 1
                self._len -= 1
                return True
        return False
