"""The index of the transcript store (`index.sqlite3` beside the files; SQLite's own locking
makes it safe across processes): each transcript's size on disk, who pasted it and when it was
last used, and which were removed and why; with running totals per client and for the store.

It keeps itself whole: at start (and into a rebuilt index) it removes the partial files no
paste is writing, adopts the files it does not know and marks removed the rows whose file is
gone. An index found corrupt, at start or while running ("file is not a database", "database
disk image is malformed"), is copied aside with a timestamp, logged, emptied and rebuilt from
the files, by one process at a time (a file lock); the others then read the rebuilt one. What
it records of a read is best effort: a read never fails because its use could not be written.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from .store_faults import is_corrupt, log, needs_repair, repair_lock, set_aside, transaction, unwritable

TRANSCRIPT_ID = re.compile(r"^t-[0-9a-f]{16}$")
SUFFIX = ".json"
INDEX = "index.sqlite3"
BLOCK = 4096  # where a file system does not report its blocks
# Removals remembered to explain a dead link; past it the oldest are forgotten.
REMEMBERED_REMOVALS = 200_000
# Files found at start that the index does not know are charged to this bucket, which has a
# client's share like any other and counts in the store's cap (client_key() is never empty).
ADOPTED = ""
# A partial file whose writer is still alive is left alone this long (a store shared by servers
# on other machines, whose writers this one cannot see).
PARTIAL_GRACE = 600.0
# Why a link finds nothing: never stored, removed to make room, its file deleted behind the
# index, or the index cannot be read to say.
NEVER, ROOM, DELETED, UNKNOWN = "never", "room", "deleted", "unknown"
T = TypeVar("T")

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS transcripts (
        name TEXT PRIMARY KEY,
        disk INTEGER NOT NULL,      -- bytes the file takes on disk (its blocks)
        client TEXT NOT NULL,       -- client_key() of who pasted it
        used REAL NOT NULL,         -- last stored or read, seconds since the epoch
        removed REAL,               -- NULL while stored; when it was removed
        why TEXT                    -- why it was removed: ROOM or DELETED
    )""",
    "CREATE INDEX IF NOT EXISTS stored_by_use ON transcripts (removed, used)",
    "CREATE INDEX IF NOT EXISTS stored_by_client ON transcripts (client, removed, used)",
    # Running totals, so that a paste never adds up the whole store.
    "CREATE TABLE IF NOT EXISTS clients (client TEXT PRIMARY KEY, disk INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS totals (id INTEGER PRIMARY KEY CHECK (id = 0), disk INTEGER NOT NULL)",
    "INSERT OR IGNORE INTO totals VALUES (0, 0)",
)


@dataclass(frozen=True)
class Missing:
    """Why a link finds no transcript: `why` is NEVER (nothing was stored under it here), ROOM
    (removed to make room) or DELETED (its file was deleted behind the index), with `removed`
    when; or UNKNOWN when the index cannot be read."""

    removed: float | None
    why: str = NEVER


def disk_bytes(path: Path) -> int:
    status = path.stat()
    blocks = getattr(status, "st_blocks", None)
    if blocks is None:
        return -(-status.st_size // BLOCK) * BLOCK
    return max(blocks * 512, BLOCK if status.st_size else 0)


def abandoned(partial: Path, now: float) -> bool:
    """Whether no paste is writing this partial file any more: the process named in it (the
    writer's pid) is gone from this machine, or it is older than PARTIAL_GRACE."""
    try:
        age = now - partial.stat().st_mtime
    except FileNotFoundError:
        return False  # renamed into place meanwhile
    try:
        os.kill(int(partial.name.split(".")[2]), 0)
    except (IndexError, ValueError, ProcessLookupError):
        return True
    except PermissionError:
        pass  # alive, someone else's
    return age > PARTIAL_GRACE


class TranscriptIndex:
    """The index of one store folder, shared by every thread of a process (each with its own
    connection) and by every process that points at the folder."""

    def __init__(self, directory: Path, max_total_bytes: int, max_client_bytes: int):
        self.directory = directory
        self.max_total_bytes = max_total_bytes
        self.max_client_bytes = max_client_bytes
        self._local = threading.local()
        # Bumped when this process finds the index rebuilt: every thread then reconnects.
        self._generation = 0
        self._repairing = threading.Lock()

    def path(self, name: str) -> Path:
        return self.directory / f"{name}{SUFFIX}"

    def open(self) -> None:
        """Create the tables (or bring an older index up to date) and tidy the folder."""
        self.run(self._open_index)

    def usage(self, client: str | None = None) -> int:
        if client is None:
            return self.run(lambda db: db.execute("SELECT disk FROM totals").fetchone()[0])
        return self.run(lambda db: self._client_bytes(db, client))

    def missing(self, name: str) -> Missing:
        """Why the stored name `name` finds no transcript. A file deleted behind the index is
        found here and recorded as removed, its size uncharged from its client."""
        try:
            row = self.run(lambda db: db.execute("SELECT removed, why FROM transcripts WHERE name = ?", (name,)).fetchone())
        except (OSError, sqlite3.Error) as error:
            if unwritable(error) is None:
                raise
            return Missing(None, UNKNOWN)
        if row is None:
            return Missing(None, NEVER)
        if row[0] is not None:
            return Missing(row[0], row[1] or ROOM)
        if self.path(name).exists():
            return Missing(None, NEVER)  # a file that no longer reads under today's rules
        return Missing(self.note_deleted(name), DELETED)

    def _db(self) -> sqlite3.Connection:
        """This thread's connection: SQLite connections are shared neither across threads nor
        across a fork (gunicorn may create the app before forking its workers), nor kept to an
        index that was rebuilt."""
        key = (os.getpid(), self._generation)
        if getattr(self._local, "key", None) != key:
            if getattr(self._local, "key", (None,))[0] == os.getpid():
                with contextlib.suppress(sqlite3.Error):
                    self._local.connection.close()
            connection = sqlite3.connect(self.directory / INDEX, timeout=30, isolation_level=None)
            connection.execute("PRAGMA synchronous = NORMAL")
            self._local.connection, self._local.key = connection, key
        return self._local.connection

    def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """`work` on this thread's connection. An index found corrupt, at start or while
        running, is set aside and rebuilt from the files, once across the processes sharing
        it; then `work` runs again, on the new one."""
        generation = self._generation
        try:
            return work(self._db())
        except sqlite3.DatabaseError as error:
            if not needs_repair(error):
                raise
        self._repair(generation)
        return work(self._db())

    def _repair(self, generation: int) -> None:
        with self._repairing:
            if generation != self._generation:
                return  # another thread of this process reconnected to the rebuilt index
            with repair_lock(self.directory):
                broken = not self._healthy()  # or another process rebuilt it already
                if broken and (self.directory / INDEX).stat().st_size:
                    set_aside(self.directory / INDEX)
                self._generation += 1
                if broken:
                    self._open_index(self._db())

    def _healthy(self) -> bool:
        """Whether the index now at its path reads as a database that holds its tables."""
        probe = sqlite3.connect(self.directory / INDEX, timeout=30)
        try:
            checked = probe.execute("PRAGMA quick_check").fetchone()[0] == "ok"
            return checked and probe.execute("SELECT 1 FROM sqlite_master WHERE name = 'totals'").fetchone() is not None
        except sqlite3.DatabaseError as error:
            if is_corrupt(error):
                return False
            raise
        finally:
            probe.close()

    def _open_index(self, db: sqlite3.Connection) -> None:
        with transaction(db):
            for statement in SCHEMA:
                db.execute(statement)
            if "why" not in {column[1] for column in db.execute("PRAGMA table_info(transcripts)")}:
                db.execute("ALTER TABLE transcripts ADD COLUMN why TEXT")  # an index from before it said why
            self._tidy(db)

    def _tidy(self, db: sqlite3.Connection) -> None:
        """At start, and into a rebuilt index: partial files left by a failed paste or a killed
        worker are removed; files the index does not know (a worker killed between writing and
        indexing, a lost index) are adopted into the ADOPTED bucket, as used when last modified,
        inside the store's cap; rows whose file was deleted behind the index are marked removed
        and uncharged. Runs inside the transaction, so no other process evicts meanwhile."""
        now = time.time()
        for partial in self.directory.glob(".t-*.partial"):
            if abandoned(partial, now):
                partial.unlink(missing_ok=True)
        stored = {name for (name,) in db.execute("SELECT name FROM transcripts WHERE removed IS NULL")}
        files = {path.stem: path for path in self.directory.glob(f"t-*{SUFFIX}") if TRANSCRIPT_ID.match(path.stem)}
        for name in sorted(files.keys() - stored):
            self._add(db, name, disk_bytes(files[name]), ADOPTED, files[name].stat().st_mtime)
        for name in stored - files.keys():
            self._remove(db, name, now, DELETED)
        self._make_room(db, ADOPTED, now)

    @staticmethod
    def _client_bytes(db: sqlite3.Connection, client: str) -> int:
        row = db.execute("SELECT disk FROM clients WHERE client = ?", (client,)).fetchone()
        return row[0] if row else 0

    @staticmethod
    def _add(db: sqlite3.Connection, name: str, disk: int, client: str, used: float) -> None:
        db.execute("INSERT OR REPLACE INTO transcripts VALUES (?, ?, ?, ?, NULL, NULL)", (name, disk, client, used))
        db.execute("INSERT INTO clients VALUES (?, ?) ON CONFLICT (client) DO UPDATE SET disk = disk + excluded.disk", (client, disk))
        db.execute("UPDATE totals SET disk = disk + ?", (disk,))

    def saved(self, name: str, disk: int, client: str) -> list[str]:
        """Record a stored transcript, then make room; returns the names removed."""
        return self.run(lambda db: self._saved(db, name, disk, client))

    def _saved(self, db: sqlite3.Connection, name: str, disk: int, client: str) -> list[str]:
        now = time.time()
        with transaction(db):
            row = db.execute("SELECT removed FROM transcripts WHERE name = ?", (name,)).fetchone()
            if row is not None and row[0] is None:
                db.execute("UPDATE transcripts SET used = ? WHERE name = ?", (now, name))
            else:
                self._add(db, name, disk, client, now)
            return self._make_room(db, client, now, keep=name)

    def _make_room(self, db: sqlite3.Connection, client: str, now: float, keep: str = "") -> list[str]:
        """Remove the least recently used (never `keep`) until the client's share and the
        store's cap both hold; returns the names removed."""
        removed: list[str] = []
        while self._client_bytes(db, client) > self.max_client_bytes:
            oldest = db.execute(
                "SELECT name FROM transcripts WHERE client = ? AND removed IS NULL AND name != ? ORDER BY used LIMIT 1",
                (client, keep),
            ).fetchone()
            if oldest is None:
                break
            removed.append(self._remove(db, oldest[0], now))
        while db.execute("SELECT disk FROM totals").fetchone()[0] > self.max_total_bytes:
            oldest = db.execute(
                "SELECT name FROM transcripts WHERE removed IS NULL AND name != ? ORDER BY used LIMIT 1", (keep,)
            ).fetchone()
            if oldest is None:
                break
            removed.append(self._remove(db, oldest[0], now))
        if removed:
            self._forget_old_removals(db)
        return removed

    def _remove(self, db: sqlite3.Connection, name: str, now: float, why: str = ROOM) -> str:
        disk, client = db.execute("SELECT disk, client FROM transcripts WHERE name = ?", (name,)).fetchone()
        db.execute("UPDATE transcripts SET removed = ?, why = ? WHERE name = ?", (now, why, name))
        db.execute("UPDATE clients SET disk = disk - ? WHERE client = ?", (disk, client))
        db.execute("UPDATE totals SET disk = disk - ?", (disk,))
        self.path(name).unlink(missing_ok=True)
        return name

    @staticmethod
    def _forget_old_removals(db: sqlite3.Connection) -> None:
        db.execute(
            "DELETE FROM transcripts WHERE removed IS NOT NULL AND removed <= "
            "(SELECT removed FROM transcripts WHERE removed IS NOT NULL ORDER BY removed DESC LIMIT 1 OFFSET ?)",
            (REMEMBERED_REMOVALS,),
        )

    def note_deleted(self, name: str) -> float:
        """Record that the file of `name` was deleted behind the index, best effort; when."""
        now = time.time()

        def note(db: sqlite3.Connection) -> None:
            with transaction(db):
                row = db.execute("SELECT 1 FROM transcripts WHERE name = ? AND removed IS NULL", (name,)).fetchone()
                if row is not None and not self.path(name).exists():
                    self._remove(db, name, now, DELETED)

        self._best_effort(note, f"recording that {name} was deleted")
        return now

    def record_use(self, name: str, now: float) -> None:
        """Mark `name` as used now, for the recency of eviction: best effort."""
        self._best_effort(lambda db: self._record_use(db, name, now), f"recording a read of {name}")

    def _record_use(self, db: sqlite3.Connection, name: str, now: float) -> None:
        if db.execute("UPDATE transcripts SET used = ? WHERE name = ? AND removed IS NULL", (now, name)).rowcount == 0:
            # A file the index does not know (copied in by hand since the start).
            with transaction(db):
                if db.execute("SELECT 1 FROM transcripts WHERE name = ? AND removed IS NULL", (name,)).fetchone() is None:
                    self._add(db, name, disk_bytes(self.path(name)), ADOPTED, now)

    def _best_effort(self, work: Callable[[sqlite3.Connection], object], what: str) -> None:
        """`work` on the index, or a line in the log when the store cannot be written."""
        try:
            self.run(work)
        except (OSError, sqlite3.Error) as error:
            if (fault := unwritable(error)) is None:
                raise
            log.info("transcript store: %s skipped: %s", what, fault.reason)

