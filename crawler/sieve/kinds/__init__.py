"""The Sieve family: every URL-seen structure of the design's sources behind one interface.

| kind | module | structure (source) | deletes | grows |
| --- | --- | --- | --- | --- |
| ``scalable`` | `scalable` | today's `Sieve` (Almeida et al. 2007), the default | no | yes |
| ``bloom`` | `classic` | the fixed filter (Bloom 1970); warns once past capacity | no | no |
| ``blocked`` | `blocked` | one 512-bit block a key (Putze, Sanders & Singler 2007) | no | yes |
| ``multilayer`` | `multilayer` | host/path layers + XOR layer (Cen, Xu & Sun 2010) | no | yes |
| ``counting`` | `counting` | 4-bit saturating counters (Fan et al. 1998) | yes | yes |
| ``cuckoo`` | `cuckoo` | partial-key cuckoo hashing (Fan et al. 2014) | yes | yes |
| ``stable`` | `stable` | forgets old keys in fixed memory (Deng & Rafiei 2006) | no | no |

`deleting` holds what the two kinds that delete share: every add an entry, the stage rule.

`make_filter(kind, capacity=..., error_rate=...)` builds one, `filter_from_bytes` restores any
kind from its `to_bytes()` (``scalable``: the Sieve's version-1 file; the others: version 2, see
`codec`). This module imports no numpy: a kind's module (and numpy) loads when it is first made.

Growing kinds follow the Sieve's stages (stage i: C*growth^i keys at P*(1-r)*r^i; the family's
defaults r = 0.5, growth = 2, the sources' "r around one half"; ``scalable`` keeps the Sieve's).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from crawler.sieve.format import SieveFormatError, write_atomic

__all__ = ["FILTER_KINDS", "SeenFilter", "filter_from_bytes", "load_filter", "make_filter"]
__all__ += ["save_filter"]

FILTER_KINDS = ("scalable", "bloom", "blocked", "multilayer", "counting", "cuckoo", "stable")

_CLASSES = {
    "scalable": ("scalable", "ScalableFilter"),
    "bloom": ("classic", "BloomFilter"),
    "blocked": ("blocked", "BlockedFilter"),
    "multilayer": ("multilayer", "MultiLayerFilter"),
    "counting": ("counting", "CountingFilter"),
    "cuckoo": ("cuckoo", "CuckooFilter"),
    "stable": ("stable", "StableFilter"),
}


@runtime_checkable
class SeenFilter(Protocol):
    """The interface every kind answers.

    `add` returns True when the key was new (not reported seen before); `add_many` gives exactly
    the answers of adding the keys one by one, duplicates within the batch included. A kind that
    deletes records every add (an entry `remove` takes back: `crawler.sieve.kinds.deleting`);
    `add_if_absent` / `add_many_if_absent` are the test-and-set, recording nothing for a key
    reported already (the same answers; for a kind that cannot delete, the same as `add`).
    `remove` returns True when the key was reported seen (and one entry is removed), or raises
    TypeError for a kind that cannot delete (`supports_remove` False).
    """

    @property
    def kind(self) -> str: ...

    @property
    def supports_remove(self) -> bool: ...

    def add(self, key: str | bytes, /) -> bool: ...

    def __contains__(self, key: str | bytes, /) -> bool: ...

    def add_many(self, keys: Sequence[str | bytes], /) -> list[bool]: ...

    def add_if_absent(self, key: str | bytes, /) -> bool: ...

    def add_many_if_absent(self, keys: Sequence[str | bytes], /) -> list[bool]: ...

    def remove(self, key: str | bytes, /) -> bool: ...

    def __len__(self) -> int: ...

    @property
    def size_in_bytes(self) -> int: ...

    @property
    def false_positive_bound(self) -> float: ...

    def to_bytes(self) -> bytes: ...


def _class(kind: str) -> Any:
    if kind not in _CLASSES:
        raise ValueError(f"unknown filter kind {kind!r}; known: {', '.join(FILTER_KINDS)}")
    module, name = _CLASSES[kind]
    return getattr(importlib.import_module(f"crawler.sieve.kinds.{module}"), name)


def make_filter(kind: str, *, capacity: int, error_rate: float, **options: Any) -> SeenFilter:
    """A new, empty filter of `kind` for `capacity` keys at false-positive rate `error_rate`.

    Options: ``scalable``: ratio (0.85), growth (2); ``blocked``, ``counting``, ``cuckoo``:
    ratio (0.5), growth (2); ``multilayer``: those and layers (4); ``stable``: recall_window
    (capacity // 100), recall (0.99). A ValueError names the first bad argument.
    """
    cls = _class(kind)
    try:
        f: SeenFilter = cls(capacity, error_rate, **options)
    except TypeError as exc:  # an unknown option
        raise ValueError(f"{kind} filter: {exc}") from None
    return f


def filter_from_bytes(data: bytes | bytearray | memoryview) -> SeenFilter:
    """The filter `to_bytes()` wrote, whatever its kind; SieveFormatError if the data is
    truncated, corrupt, of another program or of an unknown version."""
    from crawler.sieve.kinds import codec

    raw = bytes(data)
    version = codec.peek_version(raw)
    if version == 1:
        f: SeenFilter = _class("scalable").from_bytes(raw)
        return f
    kind, params, arrays = codec.decode(raw)
    if kind not in _CLASSES or kind == "scalable":
        raise SieveFormatError(f"invalid Sieve data: unknown filter kind {kind!r}")
    try:
        f = _class(kind)._from_parts(params, arrays)
    except (ValueError, KeyError, TypeError) as exc:
        raise SieveFormatError(f"invalid {kind} filter parameters: {exc!r}") from None
    return f


def save_filter(f: SeenFilter, path: str | os.PathLike[str]) -> None:
    """Write `f.to_bytes()` atomically (temp file, fsync, rename), as `Sieve.save` does."""
    write_atomic(path, f.to_bytes())


def load_filter(path: str | os.PathLike[str]) -> SeenFilter:
    """Read a file written by `save_filter` (or `Sieve.save`); SieveFormatError names the path."""
    from pathlib import Path

    try:
        return filter_from_bytes(Path(path).read_bytes())
    except SieveFormatError as exc:
        raise SieveFormatError(f"{path}: {exc}") from None
