"""The index of the folder's transcript store (`index.sqlite3` beside the files; SQLite's own
locking makes it safe across processes). Its rules are the store's (store_rules.py); here is how
SQLite is reached, and what a folder of files needs besides.

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
from pathlib import Path

from .store_faults import StoreUnwritable, is_corrupt, needs_repair, repair_lock, set_aside, transaction, unwritable
from .store_rules import ADOPTED, DELETED, SCHEMA, StoreIndex, T, blocks

TRANSCRIPT_ID = re.compile(r"^t-[0-9a-f]{16}$")
SUFFIX = ".json"
INDEX = "index.sqlite3"
# A partial file whose writer is still alive is left alone this long (a store shared by servers
# on other machines, whose writers this one cannot see).
PARTIAL_GRACE = 600.0


def disk_bytes(path: Path) -> int:
    status = path.stat()
    disk = getattr(status, "st_blocks", None)
    if disk is None:
        return blocks(status.st_size)
    return max(disk * 512, blocks(1) if status.st_size else 0)


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


class TranscriptIndex(StoreIndex):
    """The index of one store folder, shared by every thread of a process (each with its own
    connection) and by every process that points at the folder."""

    def __init__(self, directory: Path, max_total_bytes: int, max_client_bytes: int):
        super().__init__(max_total_bytes, max_client_bytes)
        self.directory = directory
        self._local = threading.local()
        # Bumped when this process finds the index rebuilt: every thread then reconnects.
        self._generation = 0
        self._repairing = threading.Lock()

    def path(self, name: str) -> Path:
        return self.directory / f"{name}{SUFFIX}"

    def open(self) -> None:
        """Create the tables (or bring an older index up to date) and tidy the folder."""
        self.run(self._open_index)

    # --- What the rules need of SQLite and of the folder -------------------------------------

    def write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        def transacted(db: sqlite3.Connection) -> T:
            with transaction(db):
                return work(db)

        return self.run(transacted)

    def fault(self, error: BaseException) -> StoreUnwritable | None:
        return unwritable(error)

    def body_exists(self, db: sqlite3.Connection, name: str) -> bool:
        return self.path(name).exists()

    def drop_body(self, db: sqlite3.Connection, name: str) -> None:
        self.path(name).unlink(missing_ok=True)

    def record_use_in(self, db: sqlite3.Connection, name: str, now: float) -> int:
        marked = super().record_use_in(db, name, now)
        if marked == 0:
            # A file the index does not know (copied in by hand since the start).
            with transaction(db):
                if db.execute("SELECT 1 FROM transcripts WHERE name = ? AND removed IS NULL", (name,)).fetchone() is None:
                    self.add(db, name, disk_bytes(self.path(name)), ADOPTED, now)
        return marked

    # --- Connections, and an index found corrupt ---------------------------------------------

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
            self.add(db, name, disk_bytes(files[name]), ADOPTED, files[name].stat().st_mtime)
        for name in stored - files.keys():
            self.remove(db, name, now, DELETED)
        self.make_room(db, ADOPTED, now)
