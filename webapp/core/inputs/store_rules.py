"""The transcript store's rules, written once for both of its indexes: SQLite beside the files
of a folder (store_index.py) and PostgreSQL (store_postgres.py).

The index records each transcript's size on disk, who pasted it and when it was last used, and
which were removed and why, with running totals per client and for the store, so that a paste
never adds up the whole store. The rules: a client's share, past which its own least recently
used transcripts make room; the store's cap, past which the least recently used go; a removal
remembered (REMEMBERED_REMOVALS) so that a dead link says why; a body deleted behind the index
marked removed and uncharged when its link is next opened.

The SQL here is what both SQLite (3.24 and later) and PostgreSQL accept (`INSERT … ON CONFLICT`,
BIGINT, DOUBLE PRECISION), with `?` placeholders, which the PostgreSQL index translates. Each
index says how a write transaction is taken (one writer at a time across every process and
host), where a transcript's body lives, and which of its errors are faults of the store.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from .store_faults import StoreUnreachable, StoreUnwritable, log

# Disk is counted in blocks of this size where a file system does not report its blocks, and in
# PostgreSQL, so that one transcript costs the same share in either store.
BLOCK = 4096
# Removals remembered to explain a dead link; past it the oldest are forgotten.
REMEMBERED_REMOVALS = 200_000
# Files found at start that the index does not know are charged to this bucket, which has a
# client's share like any other and counts in the store's cap (client_key() is never empty).
ADOPTED = ""
# Why a link finds nothing: never stored, removed to make room, its body deleted behind the
# index, or the index cannot be read to say.
NEVER, ROOM, DELETED, UNKNOWN = "never", "room", "deleted", "unknown"
T = TypeVar("T")
# A connection of either database: execute(sql, params) gives a cursor with fetchone and rowcount.
Db = Any

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS transcripts (
        name TEXT PRIMARY KEY,
        disk BIGINT NOT NULL,       -- bytes the body takes on disk (its blocks)
        client TEXT NOT NULL,       -- client_key() of who pasted it
        used DOUBLE PRECISION NOT NULL,  -- last stored or read, seconds since the epoch
        removed DOUBLE PRECISION,   -- NULL while stored; when it was removed
        why TEXT                    -- why it was removed: ROOM or DELETED
    )""",
    "CREATE INDEX IF NOT EXISTS stored_by_use ON transcripts (removed, used)",
    "CREATE INDEX IF NOT EXISTS stored_by_client ON transcripts (client, removed, used)",
    # Running totals, so that a paste never adds up the whole store.
    "CREATE TABLE IF NOT EXISTS clients (client TEXT PRIMARY KEY, disk BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS totals (id INTEGER PRIMARY KEY CHECK (id = 0), disk BIGINT NOT NULL)",
    "INSERT INTO totals VALUES (0, 0) ON CONFLICT DO NOTHING",
)


@dataclass(frozen=True)
class Missing:
    """Why a link finds no transcript: `why` is NEVER (nothing was stored under it here), ROOM
    (removed to make room) or DELETED (its body was deleted behind the index), with `removed`
    when; or UNKNOWN when the index cannot be read."""

    removed: float | None
    why: str = NEVER


def blocks(size: int) -> int:
    """Bytes a body of `size` bytes takes in whole blocks: a 1-byte body takes a block."""
    return -(-size // BLOCK) * BLOCK


class StoreIndex:
    """The rules over one index; a subclass says how to reach it and where bodies live."""

    def __init__(self, max_total_bytes: int, max_client_bytes: int):
        self.max_total_bytes = max_total_bytes
        self.max_client_bytes = max_client_bytes

    # --- What each index provides ------------------------------------------------------------

    def run(self, work: Callable[[Db], T]) -> T:
        """`work` on a connection, each statement on its own."""
        raise NotImplementedError

    def write(self, work: Callable[[Db], T]) -> T:
        """`work` in one write transaction, one writer at a time, rolled back if it fails."""
        raise NotImplementedError

    def fault(self, error: BaseException) -> StoreUnwritable | None:
        """The fault of the store that `error` reports, or None when it is a bug."""
        raise NotImplementedError

    def body_exists(self, db: Db, name: str) -> bool:
        raise NotImplementedError

    def drop_body(self, db: Db, name: str) -> None:
        raise NotImplementedError

    # --- Reading and recording ---------------------------------------------------------------

    def usage(self, client: str | None = None) -> int:
        if client is None:
            return self.run(lambda db: db.execute("SELECT disk FROM totals").fetchone()[0])
        return self.run(lambda db: self.client_bytes(db, client))

    def missing(self, name: str) -> Missing:
        """Why the stored name `name` finds no transcript. A body deleted behind the index is
        found here and recorded as removed, its size uncharged from its client. An index that
        cannot be read says UNKNOWN; one that cannot be reached raises StoreUnreachable."""
        try:
            row = self.run(lambda db: db.execute("SELECT removed, why FROM transcripts WHERE name = ?", (name,)).fetchone())
        except StoreUnreachable:
            raise
        except Exception as error:
            if self.fault(error) is None:
                raise
            return Missing(None, UNKNOWN)
        if row is None:
            return Missing(None, NEVER)
        if row[0] is not None:
            return Missing(row[0], row[1] or ROOM)
        if self.run(lambda db: self.body_exists(db, name)):
            return Missing(None, NEVER)  # a body that no longer reads under today's rules
        return Missing(self.note_deleted(name), DELETED)

    def saved(self, name: str, disk: int, client: str) -> list[str]:
        """Record a stored transcript, then make room; returns the names removed."""
        return self.write(lambda db: self.saved_row(db, name, disk, client, time.time()))

    def note_deleted(self, name: str) -> float:
        """Record that the body of `name` was deleted behind the index, best effort; when."""
        now = time.time()

        def note(db: Db) -> None:
            row = db.execute("SELECT 1 FROM transcripts WHERE name = ? AND removed IS NULL", (name,)).fetchone()
            if row is not None and not self.body_exists(db, name):
                self.remove(db, name, now, DELETED)

        self.best_effort(lambda: self.write(note), f"recording that {name} was deleted")
        return now

    def record_use(self, name: str, now: float) -> None:
        """Mark `name` as used now, for the recency of eviction: best effort."""
        self.best_effort(lambda: self.run(lambda db: self.record_use_in(db, name, now)), f"recording a read of {name}")

    def record_use_in(self, db: Db, name: str, now: float) -> int:
        """Rows marked (0 for a name the index does not hold)."""
        return db.execute("UPDATE transcripts SET used = ? WHERE name = ? AND removed IS NULL", (now, name)).rowcount

    def best_effort(self, attempt: Callable[[], object], what: str) -> None:
        """`attempt`, or a line in the log when the store cannot be written."""
        try:
            attempt()
        except Exception as error:
            if (fault := self.fault(error)) is None:
                raise
            log.info("transcript store: %s skipped: %s", what, fault.reason)

    # --- The rules, inside a write transaction -----------------------------------------------

    @staticmethod
    def client_bytes(db: Db, client: str) -> int:
        row = db.execute("SELECT disk FROM clients WHERE client = ?", (client,)).fetchone()
        return row[0] if row else 0

    @staticmethod
    def add(db: Db, name: str, disk: int, client: str, used: float) -> None:
        db.execute(
            "INSERT INTO transcripts VALUES (?, ?, ?, ?, NULL, NULL) ON CONFLICT (name) DO UPDATE SET "
            "disk = excluded.disk, client = excluded.client, used = excluded.used, removed = NULL, why = NULL",
            (name, disk, client, used),
        )
        db.execute(
            "INSERT INTO clients VALUES (?, ?) ON CONFLICT (client) DO UPDATE SET disk = clients.disk + excluded.disk",
            (client, disk),
        )
        db.execute("UPDATE totals SET disk = disk + ?", (disk,))

    def saved_row(self, db: Db, name: str, disk: int, client: str, now: float) -> list[str]:
        """A transcript stored again is only marked as used; a new or removed one is charged to
        `client`. Then room is made (never by removing `name`); returns the names removed."""
        row = db.execute("SELECT removed FROM transcripts WHERE name = ?", (name,)).fetchone()
        if row is not None and row[0] is None:
            db.execute("UPDATE transcripts SET used = ? WHERE name = ?", (now, name))
        else:
            self.add(db, name, disk, client, now)
        return self.make_room(db, client, now, keep=name)

    def make_room(self, db: Db, client: str, now: float, keep: str = "") -> list[str]:
        """Remove the least recently used (never `keep`) until the client's share and the
        store's cap both hold; returns the names removed."""
        removed: list[str] = []
        while self.client_bytes(db, client) > self.max_client_bytes:
            oldest = db.execute(
                "SELECT name FROM transcripts WHERE client = ? AND removed IS NULL AND name != ? ORDER BY used LIMIT 1",
                (client, keep),
            ).fetchone()
            if oldest is None:
                break
            removed.append(self.remove(db, oldest[0], now))
        while db.execute("SELECT disk FROM totals").fetchone()[0] > self.max_total_bytes:
            oldest = db.execute(
                "SELECT name FROM transcripts WHERE removed IS NULL AND name != ? ORDER BY used LIMIT 1", (keep,)
            ).fetchone()
            if oldest is None:
                break
            removed.append(self.remove(db, oldest[0], now))
        if removed:
            self.forget_old_removals(db)
        return removed

    def remove(self, db: Db, name: str, now: float, why: str = ROOM) -> str:
        disk, client = db.execute("SELECT disk, client FROM transcripts WHERE name = ?", (name,)).fetchone()
        db.execute("UPDATE transcripts SET removed = ?, why = ? WHERE name = ?", (now, why, name))
        db.execute("UPDATE clients SET disk = disk - ? WHERE client = ?", (disk, client))
        db.execute("UPDATE totals SET disk = disk - ?", (disk,))
        self.drop_body(db, name)
        return name

    @staticmethod
    def forget_old_removals(db: Db) -> None:
        db.execute(
            "DELETE FROM transcripts WHERE removed IS NOT NULL AND removed <= "
            "(SELECT removed FROM transcripts WHERE removed IS NOT NULL ORDER BY removed DESC LIMIT 1 OFFSET ?)",
            (REMEMBERED_REMOVALS,),
        )
