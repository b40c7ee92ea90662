"""`SeenStore`: the exact tier behind the Sieve, the 64-bit fingerprints of every key taken in.

`crawler.sieve.SeenTiers` consults it only when the Bloom filter says "seen". It is a set in memory
without a crawl state, the state database's ``seen`` table with one (`CrawlState.seen`). A write
that fails there (a full disk) is a `StateError`, which ends the crawl.
"""

from __future__ import annotations

import sqlite3

from crawler.errors import StateError

__all__ = ["SeenStore"]


class SeenStore:
    """The exact tier behind the Sieve: 64-bit fingerprints of every key taken in.

    In memory (a set) when no state directory is used; in the state database otherwise.
    """

    __slots__ = ("_db", "_mem")

    def __init__(self, db: sqlite3.Connection | None = None) -> None:
        self._db = db
        self._mem: set[int] | None = set() if db is None else None

    def add(self, fp: int) -> None:
        if self._mem is not None:
            self._mem.add(fp)
        else:
            self.add_many([fp])

    def add_many(self, fps: list[int]) -> None:
        if self._mem is not None:
            self._mem.update(fps)
        elif fps:
            assert self._db is not None
            try:
                self._db.executemany("INSERT OR IGNORE INTO seen (fp) VALUES (?)",
                                     [(f,) for f in fps])  # fmt: skip
            except sqlite3.Error as exc:
                raise StateError(f"cannot write the crawl state's seen table: {exc}") from exc

    def discard(self, fp: int) -> None:
        """Forget a fingerprint (`crawler.sieve.SeenTiers.forget`)."""
        if self._mem is not None:
            self._mem.discard(fp)
            return
        assert self._db is not None
        try:
            self._db.execute("DELETE FROM seen WHERE fp = ?", (fp,))
        except sqlite3.Error as exc:
            raise StateError(f"cannot write the crawl state's seen table: {exc}") from exc

    def __contains__(self, fp: int) -> bool:
        if self._mem is not None:
            return fp in self._mem
        assert self._db is not None
        row = self._db.execute("SELECT 1 FROM seen WHERE fp = ?", (fp,)).fetchone()
        return row is not None

    def __repr__(self) -> str:
        where = f"memory, {len(self._mem)} fingerprints" if self._mem is not None else "database"
        return f"<SeenStore {where}>"
