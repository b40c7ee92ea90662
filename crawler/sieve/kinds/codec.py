"""Format version 2 of the Sieve file: any kind of the family, with its kind and parameters inside.

Layout (little-endian), after the 16 bytes every version starts with (magic ``SIEVEBF\\0``, version,
reserved, seed; so a reader of version 1 refuses a version-2 file by its version number):

    u8 length + the kind's name (ASCII)
    u32 length + the parameters (UTF-8 JSON object: capacity, error rate, options, stage table)
    u32 number of arrays, then per array: u64 length + its bytes
    blake2b-128 of everything before it

A ``scalable`` filter is saved in version 1 (`crawler.sieve.format`), byte for byte what the Sieve
always wrote, so a saved crawl of the default kind reads back as it always did.
"""

from __future__ import annotations

import hashlib
import json
import struct
from typing import Any

from crawler.sieve.format import SEED, SieveFormatError

__all__ = ["VERSION", "decode", "encode", "peek_version"]

MAGIC = b"SIEVEBF\x00"
VERSION = 2
_HEAD = struct.Struct("<8sHHI")  # magic, version, reserved, seed
_U8 = struct.Struct("<B")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_DIGEST = 16


def encode(kind: str, params: dict[str, Any], arrays: list[bytes]) -> bytes:
    name = kind.encode("ascii")
    meta = json.dumps(params, separators=(",", ":"), sort_keys=True).encode()
    parts = [_HEAD.pack(MAGIC, VERSION, 0, SEED), _U8.pack(len(name)), name]
    parts += [_U32.pack(len(meta)), meta, _U32.pack(len(arrays))]
    for a in arrays:
        parts += [_U64.pack(len(a)), a]
    body = b"".join(parts)
    return body + hashlib.blake2b(body, digest_size=_DIGEST).digest()


def peek_version(data: bytes) -> int:
    """The format version of a Sieve file (any version); SieveFormatError if it is not one."""
    if not data or data[: len(MAGIC)] != MAGIC[: len(data)]:
        raise SieveFormatError("not a Sieve file: bad magic bytes")
    if len(data) < _HEAD.size:
        raise SieveFormatError(f"truncated Sieve data: {len(data)} bytes, header incomplete")
    version: int = _HEAD.unpack_from(data)[1]
    return version


class _Reader:
    def __init__(self, data: bytes, end: int) -> None:
        self.data, self.pos, self.end = data, _HEAD.size, end

    def take(self, n: int, what: str) -> bytes:
        if n > self.end - self.pos:
            raise SieveFormatError(f"truncated Sieve data: {what} cut")
        got = self.data[self.pos : self.pos + n]
        self.pos += n
        return got

    def unpack(self, s: struct.Struct, what: str) -> int:
        value: int = s.unpack(self.take(s.size, what))[0]
        return value


def decode(data: bytes) -> tuple[str, dict[str, Any], list[bytes]]:
    """(kind, parameters, arrays) of a version-2 file; SieveFormatError naming the problem.

    The checksum is verified before anything is interpreted; the caller validates the parameters
    against the kind (and reports a ValueError as a SieveFormatError).
    """
    if peek_version(data) != VERSION:
        raise SieveFormatError(f"not a version-{VERSION} Sieve file")
    if len(data) < _HEAD.size + _DIGEST:
        raise SieveFormatError(f"truncated Sieve data: {len(data)} bytes")
    body, digest = data[:-_DIGEST], data[-_DIGEST:]
    r = _Reader(data, len(body))
    kind = r.take(r.unpack(_U8, "kind"), "kind")
    meta = r.take(r.unpack(_U32, "parameters"), "parameters")
    n = r.unpack(_U32, "array count")
    arrays = [r.take(r.unpack(_U64, "array length"), f"array {i}") for i in range(n)]
    if r.pos != r.end:
        raise SieveFormatError("invalid Sieve data: trailing bytes (or a truncated checksum)")
    if hashlib.blake2b(body, digest_size=_DIGEST).digest() != digest:
        raise SieveFormatError("corrupt Sieve data: checksum mismatch")
    seed = _HEAD.unpack_from(data)[3]
    if seed != SEED:
        raise SieveFormatError(f"Sieve saved with hash seed {seed:#x}, this build uses {SEED:#x}")
    try:
        params = json.loads(meta)
        name = kind.decode("ascii")
    except ValueError as exc:
        raise SieveFormatError(f"invalid Sieve parameters: {exc}") from None
    if not isinstance(params, dict):
        raise SieveFormatError("invalid Sieve parameters: not an object")
    return name, params, arrays
