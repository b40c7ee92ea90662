"""The shared (Redis) Sieve's stage layout: a stage's shape and its split into segments.

A Redis string holds at most 512 MB; a stage over `SEGMENT_BITS` is split into equal segments,
each one string (``crawler.sieve.redis``, whose keys and Lua read this layout).
"""

from __future__ import annotations

from typing import Any

from crawler.errors import SharedStateError
from crawler.sieve.bloom import grow_threshold, stage_shape

__all__ = ["MAX_SEGMENTS", "SEGMENT_BITS", "Stage"]

SEGMENT_BITS = 64 * 2**20 * 8
"""A stage's bits per Redis string at most (64 MiB): a stage over it is split into segments, so
no capacity meets a Redis string's 512 MB and no first touch allocates more than 64 MiB."""

_MASK64 = 2**64 - 1
_SEG_SHIFT = 40  # a segment is chosen by h2's top 24 bits; its step uses only the low 40
MAX_SEGMENTS = 2**24


class Stage:
    """One stage: `segments` strings of `seg_m` bits each (``m = segments * seg_m``).

    A stage of at most `segment_bits` is one string and its positions are the in-memory Sieve's.
    A larger one is a blocked Bloom filter: a key's segment comes from hash bits its probes do
    not use (h2's top 24), and all its k probes fall in that segment.
    """

    __slots__ = ("capacity", "error_rate", "grow_at", "k", "m", "seg_m", "segments", "set_bits")

    def __init__(
        self, capacity: int, error_rate: float, index: int = 0, segment_bits: int = SEGMENT_BITS
    ) -> None:
        self.capacity, self.error_rate = capacity, error_rate
        m, self.k = stage_shape(capacity, error_rate)
        self.segments = -(-m // segment_bits)
        if self.segments > MAX_SEGMENTS:
            raise SharedStateError(
                f"the shared Sieve's stage {index} (capacity {capacity:,}) needs "
                f"{self.segments:,} segments, over {MAX_SEGMENTS:,}: lower sieve.capacity or "
                "raise sieve.error_rate"
            )
        self.seg_m = m if self.segments == 1 else -(-m // (64 * self.segments)) * 64
        self.m = self.seg_m * self.segments
        self.grow_at = grow_threshold(capacity, self.m, self.k)
        self.set_bits = 0

    def place(self, h1: int, h2: int) -> tuple[int, int, int]:
        """A key's (segment, start, step): its probes are ``(start + j*step) % seg_m``."""
        ms = self.seg_m
        if self.segments == 1:
            return 0, h1 % ms, (h2 | 1) % ms
        u = h2 & _MASK64
        seg = ((u >> _SEG_SHIFT) * self.segments) >> (64 - _SEG_SHIFT)
        return seg, h1 % ms, ((u & (2**_SEG_SHIFT - 1)) | 1) % ms

    def probes(self, h1: int, h2: int, op: str) -> tuple[int, list[Any]]:
        """A key's segment, and the BITFIELD arguments (`op` GET or SET) of its k probes."""
        seg, a, b = self.place(h1, h2)
        ms, args = self.seg_m, list[Any]()
        for x in range(a, a + self.k * b, b):
            args += (op, "u1", x % ms, 1) if op == "SET" else (op, "u1", x % ms)
        return seg, args
