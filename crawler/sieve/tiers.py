"""The URL-seen test: the Sieve, optionally backed by an exact confirmation tier.

Bloom's own 1970 design: a cheap, compact gate in front of an exact check that runs only on the
gate's positives. With `exact` set, every key the Sieve takes in also has its 64-bit fingerprint
kept in a `SeenStore`; when the Sieve answers "seen", the store confirms it, so no URL is ever
dropped by a false positive (a filter that deletes then records the rescued key too). The
rescued false positives are counted, which gives a live, measured false-positive rate (per key
taken in). Navigation links repeat on every page, so the keys taken in lately are remembered in
a small bounded set and answered "seen" without the Sieve or the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from crawler.sieve.bloom import fingerprint

if TYPE_CHECKING:
    from crawler.sieve.kinds import SeenFilter
    from crawler.sieve.seen import SeenStore

__all__ = ["SeenTiers", "filter_figures"]


class SeenTiers:
    __slots__ = ("_seen", "_seen_max", "confirmed", "exact", "rescued", "sieve", "taken")

    def __init__(
        self, sieve: SeenFilter, exact: SeenStore | None = None, *, recent: int = 65_536
    ) -> None:
        self.sieve = sieve
        self.exact = exact
        self.rescued = 0
        self.confirmed = 0
        self.taken = 0  # keys answered new (rescued ones included)
        self._seen: set[str] = set()  # keys taken in lately (bounded): answered without hashing
        self._seen_max = recent

    def add(self, key: str) -> bool:
        """True if `key` is new (and now recorded), False if it was seen."""
        return self.add_many([key])[0]

    def add_many(self, keys: Sequence[str]) -> list[bool]:
        """`add` for the links of one page: keys taken in recently are answered at once; the
        rest go through one Sieve batch, then confirmations of its positives."""
        seen = self._seen
        fresh = [i for i, key in enumerate(keys) if key not in seen]
        if len(fresh) == len(keys):
            flags = self._add_many(keys)
        else:
            flags = [False] * len(keys)
            for i, new in zip(fresh, self._add_many([keys[i] for i in fresh]), strict=True):
                flags[i] = new
        if len(seen) + len(keys) > self._seen_max:
            seen.clear()
        seen.update(keys)  # every key is seen now, whatever the answer was
        return flags

    def _add_many(self, keys: Sequence[str]) -> list[bool]:
        """The filter's test-and-set (it records the keys it reports absent), then the exact
        tier on its positives. A rescued key is recorded in a filter that deletes, so that
        forgetting it later takes its own entry, not the one of the key it collides with."""
        flags = self.sieve.add_many_if_absent(keys)
        exact = self.exact
        if exact is None:
            self.taken += flags.count(True)
            return flags
        taken: dict[int, None] = {}  # fingerprints of the new keys: stored in one statement
        rescued: list[str] = []
        for i, (key, new) in enumerate(zip(keys, flags, strict=True)):
            fp = fingerprint(key)
            if new:
                taken[fp] = None
                continue
            if fp in taken:  # the same key twice in one batch
                continue
            if fp in exact:
                self.confirmed += 1
                continue
            # The Sieve said "seen" for a key it never took in: a false positive, rescued.
            rescued.append(key)
            taken[fp] = None
            flags[i] = True
        exact.add_many(list(taken))
        if rescued and getattr(self.sieve, "supports_remove", False):  # (a bare Sieve has none)
            self.sieve.add_many(rescued)
        self.rescued += len(rescued)
        self.taken += flags.count(True)
        return flags

    @property
    def measured_false_positive_rate(self) -> float | None:
        """Rescued false positives per key taken in (None without the exact tier)."""
        if self.exact is None:
            return None
        return self.rescued / self.taken if self.taken else 0.0

    def figures(self) -> dict[str, Any]:
        """The seen test's figures for the stats: its filter's, and the exact tier's."""
        return {
            **filter_figures(self.sieve),
            "confirm": "exact" if self.exact is not None else "none",
            "rescued_false_positives": self.rescued,
            "measured_false_positive_rate": self.measured_false_positive_rate,
        }

    def forget(self, key: str) -> bool:
        """Let `key` be taken in again: out of the filter (a kind that can delete, else a
        TypeError), the exact tier and the recent keys. True when the filter had it.

        A filter cannot tell a key it holds from a false positive: removing a key it never took
        in would remove the entry of the key it collides with. With the exact tier, a key it
        never took in is not removed from the filter at all, and one it took in has an entry of
        its own (a rescued false positive too), so no other key goes. Without it, a key the
        filter wrongly reported seen was never taken in nor recorded, and forgetting it removes
        another key's entry (with the filter's false-positive probability): that key is then
        taken in again once (a URL fetched twice, never one lost)."""
        if not self.sieve.supports_remove:
            raise TypeError(f"a {self.sieve.kind!r} filter cannot delete keys")
        self._seen.discard(key)
        if self.exact is not None:
            fp = fingerprint(key)
            if fp not in self.exact:
                return False  # never taken in: nothing to remove
            self.exact.discard(fp)
        return self.sieve.remove(key)

    def __repr__(self) -> str:
        tier = "exact" if self.exact is not None else "bloom only"
        counts = f"rescued={self.rescued} confirmed={self.confirmed}"
        return f"<SeenTiers {tier} {counts} {self.sieve!r}>"


def filter_figures(f: SeenFilter) -> dict[str, Any]:
    """The URL-seen filter's figures, whatever its kind: the keys it took in (`count`), its
    estimate of them (the scalable Sieve's, from its set bits; the count for the others), its
    stages (1 for a kind that never grows), its memory and false-positive bound."""
    stages = getattr(f, "stages", 1)
    approx = getattr(f, "approx_items", len(f))
    figures = {
        "kind": f.kind,
        "count": len(f),
        "approx_items": round(approx),
        "stages": stages if isinstance(stages, int) else len(stages),
        "size_in_bytes": f.size_in_bytes,
        "false_positive_bound": f.false_positive_bound,
    }
    estimate = getattr(f, "false_positive_estimate", None)  # the scalable Sieve's, from its bits
    if estimate is not None:
        figures["false_positive_estimate"] = estimate
    return figures
