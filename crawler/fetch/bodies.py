"""Reading a response body within its caps: capped streaming and bounded decoding.

The cap applies to the bytes as sent and to the decoded bytes, checked chunk by chunk, and
gzip/deflate are inflated in bounded steps, so a gzip bomb stops at the cap.
"""

from __future__ import annotations

import zlib

import aiohttp

from crawler.errors import BodyTooLarge, DecodingError

__all__ = ["Decoder", "read_capped"]


class Decoder:
    """Bounded Content-Encoding decoding: never inflates more than asked for at a time.

    A gzip body may be several members one after the other (RFC 1952 2.2; urllib3 and Go read
    them all): each is inflated in turn. What follows the last member is junk, and ends the
    body (`eof`): a tail that does not start like a gzip member, or anything after deflate.

    A `lenient` decoder (a redirect's or an error page's body, whose status is what counts)
    yields nothing once the body cannot be decoded (`failed`) instead of raising.
    """

    __slots__ = ("_done", "_first", "_gzip", "_head", "_wbits", "_z", "failed", "lenient")

    def __init__(self, wbits: int, *, lenient: bool = False) -> None:
        self.lenient = lenient
        self.failed = False
        self._wbits = wbits
        self._z = zlib.decompressobj(wbits)
        self._first = wbits == zlib.MAX_WBITS
        self._gzip = wbits > zlib.MAX_WBITS
        self._done = False
        self._head = b""  # "deflate": the first byte, until a second one tells the wrapper

    @property
    def eof(self) -> bool:
        """True once the compressed stream has ended and junk, not another member, follows."""
        return self._done

    def __repr__(self) -> str:
        state = "failed" if self.failed else "done" if self._done else "open"
        return f"<Decoder wbits={self._wbits} lenient={self.lenient} {state}>"

    @classmethod
    def make(cls, encoding: str, *, lenient: bool = False) -> Decoder | None:
        if encoding in ("", "identity"):
            return None
        if encoding in ("gzip", "x-gzip"):
            return cls(16 + zlib.MAX_WBITS, lenient=lenient)
        if encoding == "deflate":
            return cls(zlib.MAX_WBITS, lenient=lenient)
        if not lenient:
            raise DecodingError(f"unsupported Content-Encoding {encoding!r}")
        decoder = cls(zlib.MAX_WBITS, lenient=True)
        decoder.failed = True
        return decoder

    def feed(self, data: bytes, room: int) -> bytes:
        """Inflate `data`, returning at most `room + 1` bytes (one more means: over the cap).
        Raises zlib.error on bad data, unless `lenient`: then nothing more is returned."""
        if self.failed:
            return b""
        try:
            return self._feed(data, room)
        except zlib.error:
            if not self.lenient:
                raise
            self.failed = True
            return b""

    def _feed(self, data: bytes, room: int) -> bytes:
        out = self._inflate(data, room)
        while self._z.eof and not self._done and len(out) <= room:
            rest = self._z.unused_data  # after the end of a stream: kept by zlib, data and all
            if len(rest) < 2 and _GZIP_MAGIC.startswith(rest):
                break  # nothing yet, or half a magic number: the next chunk tells
            if not (self._gzip and rest.startswith(_GZIP_MAGIC)):
                self._done = True
                break
            self._z = zlib.decompressobj(self._wbits)  # the next gzip member
            out += self._inflate(rest, room - len(out))
        return out

    def _inflate(self, data: bytes, room: int) -> bytes:
        if self._first and len(self._head) + len(data) < 2:
            self._head += data  # the zlib header is 2 bytes: a 1-byte read cannot tell
            return b""
        if self._head:
            data, self._head = self._head + data, b""
        try:
            out = self._z.decompress(data, room + 1)
        except zlib.error:
            if not self._first:
                raise
            # "deflate" sent without its zlib wrapper, as some servers do: retry as raw deflate.
            self._z = zlib.decompressobj(-zlib.MAX_WBITS)
            out = self._z.decompress(data, room + 1)
        self._first = False
        while self._z.unconsumed_tail and len(out) <= room:
            out += self._z.decompress(self._z.unconsumed_tail, room + 1 - len(out))
        return out


_GZIP_MAGIC = b"\x1f\x8b"


async def read_capped(
    resp: aiohttp.ClientResponse,
    cap: int,
    truncate: bool,
    decoder: Decoder | None,
) -> tuple[bytes, bytes, bool]:
    """Read the body as sent and as decoded. Past `cap` bytes (sent or decoded) fail at once,
    or stop if `truncate`. Returns (raw, decoded, cut): raw and decoded are the same object when
    not encoded; `cut` when the cap stopped the reading before the end of the body as sent."""
    raw: list[bytes] = []
    decoded: list[bytes] = []
    raw_total = total = 0
    capped = False
    async for chunk in resp.content.iter_chunked(64 * 1024):
        raw_total += len(chunk)
        if raw_total > cap and not truncate:
            raise BodyTooLarge(f"body exceeds the cap of {cap} bytes")
        raw.append(chunk)
        if decoder is not None:
            try:
                chunk = decoder.feed(chunk, cap - total)
            except zlib.error as exc:
                raise DecodingError(f"cannot decode body: {exc}") from None
        total += len(chunk)
        if total > cap:
            if not truncate:
                raise BodyTooLarge(f"decoded body exceeds the cap of {cap} bytes")
            decoded.append(chunk[: len(chunk) - (total - cap)])
            capped = True
            break
        decoded.append(chunk)
        if truncate and raw_total >= cap:
            capped = True
            break  # the bytes as sent are capped too: they may decode to (almost) nothing
        if decoder is not None and decoder.eof:
            break  # after the end of the gzip members / deflate stream, only junk: stop reading
    body = b"".join(decoded)
    # cut: bytes were left unread, or (not encoded: the body is what is kept as sent) the last
    # read held more than the cap kept, though it may have been the body's end
    cut = capped and (not resp.content.at_eof() or (decoder is None and total > cap))
    return (body, body, cut) if decoder is None else (b"".join(raw), body, cut)
