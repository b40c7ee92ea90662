"""The Sieve's file format: encoding, validating decoding, and atomic saving.

Layout (little-endian): a header (magic, version, reserved, seed, P, r, growth, C, count, number
of stages), one table row per stage (capacity, error rate, k, m, set bits), every stage's bits
(m/8 bytes each, bit i of a stage is bit i%8 of byte i//8), then a blake2b-128 checksum of
everything before it. `crawler.sieve.bloom.Sieve` assembles itself from what `decode` returns; this
module knows the bytes, not the filter.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple, Protocol

from bitarray import bitarray

from crawler.errors import SieveFormatError

__all__ = ["SEED", "Header", "SieveFormatError", "StageRecord", "decode", "encode", "read"]
__all__ += ["write_atomic"]

SEED = 0x5EED_C0DE
"""The MurmurHash3 seed. Part of the file format: changing it invalidates every saved Sieve."""
_MAGIC = b"SIEVEBF\x00"
_VERSION = 1
_HEAD = struct.Struct("<8sHHIdddQQI")  # magic, version, reserved, seed, P, r, growth, C, count, n
_STAGE = struct.Struct("<QdIQQ")  # capacity, error rate, k, m, set bits
_DIGEST = 16  # blake2b-128 of everything before it


class Header(NamedTuple):
    """The Sieve-wide parameters a file records (the seed is always `SEED`)."""

    error_rate: float
    ratio: float
    growth: float
    capacity: int
    item_count: int


class StageRecord(NamedTuple):
    """One stage as decoded: its table row (set bits verified against the bits) and its bits."""

    capacity: int
    error_rate: float
    k: int
    m: int
    set_bits: int
    bits: bitarray


class StageFields(Protocol):
    """What a stage writes: a `crawler.sieve.bloom.BloomStage` (or a `StageRecord`)."""

    @property
    def capacity(self) -> int: ...

    @property
    def error_rate(self) -> float: ...

    @property
    def k(self) -> int: ...

    @property
    def m(self) -> int: ...

    @property
    def set_bits(self) -> int: ...

    @property
    def bits(self) -> bitarray: ...


def encode(header: Header, stages: Sequence[StageFields]) -> bytes:
    """Header, stage table, every stage's bits, blake2b-128 checksum."""
    parts = [
        _HEAD.pack(
            _MAGIC, _VERSION, 0, SEED, header.error_rate, header.ratio, header.growth,
            header.capacity, header.item_count, len(stages),
        )
    ]  # fmt: skip
    parts += [_STAGE.pack(s.capacity, s.error_rate, s.k, s.m, s.set_bits) for s in stages]
    parts += [s.bits.tobytes() for s in stages]
    body = b"".join(parts)
    return body + hashlib.blake2b(body, digest_size=_DIGEST).digest()


def decode(
    data: bytes | bytearray | memoryview, check: Callable[[int, float, float, float], object]
) -> tuple[Header, list[StageRecord]]:
    """Parse and validate `encode` output; raises `SieveFormatError` naming the first problem.

    `check(capacity, error_rate, ratio, growth)` is the Sieve's own parameter validation; the
    `ValueError` it raises is reported as invalid parameters. At least one stage is returned.
    """
    data = bytes(data)
    if data[: len(_MAGIC)] != _MAGIC[: len(data)] or not data:
        raise SieveFormatError("not a Sieve file: bad magic bytes")
    if len(data) < _HEAD.size + _DIGEST:
        raise SieveFormatError(f"truncated Sieve data: {len(data)} bytes, header incomplete")
    _, version, _, seed, p, r, growth, cap, count, n = _HEAD.unpack_from(data)
    if version != _VERSION:
        raise SieveFormatError(f"unsupported Sieve format version {version} (reads {_VERSION})")
    table_end = _HEAD.size + n * _STAGE.size
    if len(data) < table_end + _DIGEST:
        raise SieveFormatError(f"truncated Sieve data: {len(data)} bytes, stage table cut")
    table = [_STAGE.unpack_from(data, _HEAD.size + i * _STAGE.size) for i in range(n)]
    expected = table_end + sum(m // 8 for _, _, _, m, _ in table) + _DIGEST
    if len(data) != expected:
        what = "truncated" if len(data) < expected else "trailing bytes in"
        raise SieveFormatError(f"{what} Sieve data: {len(data)} bytes, expected {expected}")
    body, digest = data[:-_DIGEST], data[-_DIGEST:]
    if hashlib.blake2b(body, digest_size=_DIGEST).digest() != digest:
        raise SieveFormatError("corrupt Sieve data: checksum mismatch")
    if seed != SEED:
        raise SieveFormatError(f"Sieve saved with hash seed {seed:#x}, this build uses {SEED:#x}")
    try:
        check(cap, p, r, growth)
    except ValueError as exc:
        raise SieveFormatError(f"invalid Sieve parameters: {exc}") from None
    if not table:
        raise SieveFormatError("invalid Sieve data: no stages")
    stages, offset = [], table_end
    for i, (s_cap, s_p, k, m, set_bits) in enumerate(table):
        if m == 0 or m % 64 or k < 1:
            raise SieveFormatError(f"invalid Sieve stage {i}: m={m}, k={k}")
        bits = bitarray(endian="little")
        bits.frombytes(data[offset : offset + m // 8])
        offset += m // 8
        if bits.count() != set_bits:
            raise SieveFormatError(f"invalid Sieve stage {i}: set-bit count does not match")
        stages.append(StageRecord(s_cap, s_p, k, m, set_bits, bits))
    return Header(p, r, growth, cap, count), stages


def read(
    path: str | os.PathLike[str], check: Callable[[int, float, float, float], object]
) -> tuple[Header, list[StageRecord]]:
    """`decode` the file at `path`; a `SieveFormatError` names the path."""
    try:
        return decode(Path(path).read_bytes(), check)
    except SieveFormatError as exc:
        raise SieveFormatError(f"{path}: {exc}") from None


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write `data` atomically: temp file in the same directory, fsync, rename, fsync the dir."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
