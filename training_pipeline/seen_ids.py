"""What a pass remembers of every trajectory id it has met, kept out of the process's memory.

A day holds hundreds of thousands of trajectories and a pass needs two things per id to the end: where
it was first read (a later record with the id is a duplicate) and which tasks it gave examples to
(elizaOS counts distinct ids per task). As dicts these grew the Dagster step process with every
trajectory for the whole day; here they live in a private temporary SQLite database (the count's, past
a build's first `TasksPerId.IN_MEMORY_IDS`), which keeps a few megabytes of pages in memory and spills
the rest to a file of its own that SQLite deletes when the database is closed (or its process ends).

Ids are kept as 64-bit keyed BLAKE2b digests (the key is random, the process's own): an id that holds
a credential or a name is not written to that file in clear, and equal ids still meet. Two distinct ids
of a day share a digest with a chance of about n²/2⁶⁵ (one in 10⁸ at a million ids).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence

__all__ = ["FirstReads", "TasksPerId"]


class _Digests:
    """A private temporary database and the key its ids are digested with."""

    def __init__(self, schema: str, journal: str) -> None:
        self._key = os.urandom(16)
        # "": SQLite's private temporary database, in memory until it outgrows its cache, then in a
        # file only this connection sees, deleted with it
        self._db = sqlite3.connect("", isolation_level=None, check_same_thread=False)
        self._db.execute(f"PRAGMA journal_mode = {journal}")
        self._db.execute(schema)

    def _id(self, trajectory_id: str) -> int:
        # a signed 64-bit integer: the table's rowid, the fastest key SQLite has
        digest = hashlib.blake2b(trajectory_id.encode("utf-8", "surrogatepass"), digest_size=8, key=self._key)
        return int.from_bytes(digest.digest(), "big", signed=True)

    def close(self) -> None:
        self._db.close()


class FirstReads(_Digests):
    """Each trajectory id stored so far and the origin it was first read at."""

    def __init__(self) -> None:
        # a journal in memory: what `add_new` rolls back
        super().__init__("CREATE TABLE reads (id INTEGER PRIMARY KEY, origin TEXT NOT NULL)", "MEMORY")

    def first_reads_of(self, trajectory_ids: Iterable[str]) -> dict[str, str]:
        """Where each of `trajectory_ids` that was met was first read."""
        found = {}
        for trajectory_id in trajectory_ids:
            row = self._db.execute(
                "SELECT origin FROM reads WHERE id = ?", (self._id(trajectory_id),)
            ).fetchone()
            if row is not None:
                found[trajectory_id] = row[0]
        return found

    def add_new(self, reads: Sequence[tuple[str, str]]) -> bool:
        """Remember (id, origin) pairs whose ids are distinct, if none of them was met before (True);
        otherwise remember none of them (False)."""
        self._db.execute("BEGIN")
        before = self._db.total_changes
        self._db.executemany(
            "INSERT OR IGNORE INTO reads VALUES (?, ?)",
            ((self._id(trajectory_id), origin) for trajectory_id, origin in reads),
        )
        if self._db.total_changes - before == len(reads):
            self._db.execute("COMMIT")
            return True
        self._db.execute("ROLLBACK")
        return False


class TasksPerId:
    """How many distinct trajectory ids gave examples to each task, however often an id comes back;
    each id's tasks are bits of one integer, in a dict up to `IN_MEMORY_IDS` ids and in the temporary
    database beyond. With `distinct`, the caller vouches that no id comes twice (the daily pass
    quarantines a repeated one) and nothing per id is kept."""

    #: ids held in a dict (an entry and the id's string each) before they move to the database, where
    #: each costs more time: a build of fewer trajectories pays nothing for the bound
    IN_MEMORY_IDS = 100_000

    def __init__(self, distinct: bool = False) -> None:
        self._distinct = distinct
        self._counts: Counter[int] = Counter()  # bits -> ids that have them, when distinct
        self._bits: dict[str, int] = {}
        self._table: _TaskBits | None = None

    def add(self, ids_and_bits: Iterable[tuple[str, int]]) -> None:
        if self._distinct:
            self._counts.update(bits for _, bits in ids_and_bits)
        elif self._table is not None:
            self._table.add(ids_and_bits)
        else:
            for trajectory_id, bits in ids_and_bits:
                if bits:
                    self._bits[trajectory_id] = self._bits.get(trajectory_id, 0) | bits
            if len(self._bits) > self.IN_MEMORY_IDS:
                self._table = _TaskBits()
                self._table.add(self._bits.items())
                self._bits = {}

    def count(self, bit: int) -> int:
        """How many ids have `bit` set."""
        if self._table is not None:
            return self._table.count(bit)
        if self._distinct:
            return sum(n for bits, n in self._counts.items() if bits & bit)
        return sum(1 for bits in self._bits.values() if bits & bit)

    def close(self) -> None:
        if self._table is not None:
            self._table.close()


class _TaskBits(_Digests):
    def __init__(self) -> None:
        # nothing is rolled back: no journal
        super().__init__("CREATE TABLE tasks (id INTEGER PRIMARY KEY, bits INTEGER NOT NULL)", "OFF")

    def add(self, ids_and_bits: Iterable[tuple[str, int]]) -> None:
        self._db.execute("BEGIN")
        self._db.executemany(
            "INSERT INTO tasks VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET bits = bits | excluded.bits",
            ((self._id(trajectory_id), bits) for trajectory_id, bits in ids_and_bits if bits),
        )
        self._db.execute("COMMIT")

    def count(self, bit: int) -> int:
        return self._db.execute("SELECT count(*) FROM tasks WHERE bits & ? != 0", (bit,)).fetchone()[0]
