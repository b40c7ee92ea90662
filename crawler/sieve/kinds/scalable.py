"""``scalable``: today's `crawler.sieve.Sieve` (Almeida et al. 2007), the default, in the family.

`ScalableFilter` IS a Sieve (a subclass adding only `kind`, `supports_remove` and `remove`), so it
has the Sieve's hot path unchanged, its numpy batch insert, its stages and its version-1 file.
"""

from __future__ import annotations

from typing import ClassVar

from crawler.sieve.bloom import Sieve

__all__ = ["ScalableFilter"]


class ScalableFilter(Sieve):
    """A `Sieve` answering the family's interface (it cannot delete)."""

    __slots__ = ()
    kind: ClassVar[str] = "scalable"
    supports_remove: ClassVar[bool] = False

    def remove(self, key: str | bytes) -> bool:
        raise TypeError("a 'scalable' filter cannot remove keys (a Bloom filter cannot delete)")
