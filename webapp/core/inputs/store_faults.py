"""What goes wrong with the transcript store's folder and index, named so that the store can
degrade instead of failing: a folder that cannot be written (read-only, gone, not ours), a
full disk, an index that is not a database any more; and the lock the workers take to repair it.

Every such fault leaves the site up: the store refuses new pastes with `StoreUnwritable` (the
web answers 503, or 507 when the disk is full) while the files already stored are read as usual.
A database that cannot be reached (`StoreUnreachable`, PostgreSQL's store) refuses the reads of
stored transcripts too, with a 503, and the lessons go on.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger("webapp.store")

FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT}
# Beside the index: the lock the processes sharing the folder take to repair it one at a time.
REPAIR_LOCK = "index.lock"


class StoreUnwritable(Exception):
    """The store cannot keep a new transcript: its folder or index cannot be written, or the
    disk is `full`. `reason` is for the operator's log (the visitor gets a translated page)."""

    # Seconds a visitor is asked to wait (Retry-After) before pasting again.
    retry_after = 60

    def __init__(self, reason: str, full: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.full = full


class StoreUnreachable(StoreUnwritable):
    """The store's database cannot be reached (PostgreSQL stopped, restarting or not answering):
    neither a paste nor a stored transcript can be read until it answers again, which the store
    notices by itself."""

    retry_after = 15


def sqlite_code(error: sqlite3.Error) -> int | None:
    """SQLite's primary result code of an error the engine raised; None for the module's own
    errors (a misuse of the API is a bug, not a fault of the disk)."""
    code = getattr(error, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


def is_corrupt(error: BaseException) -> bool:
    """'file is not a database' or 'database disk image is malformed'."""
    return isinstance(error, sqlite3.DatabaseError) and sqlite_code(error) in {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}


def needs_repair(error: BaseException) -> bool:
    """A corrupt index, or one emptied by a repair still under way in another process
    (SQLite reads an empty file as a database without tables)."""
    return is_corrupt(error) or (isinstance(error, sqlite3.OperationalError) and str(error).startswith("no such table"))


def unwritable(error: BaseException) -> StoreUnwritable | None:
    """The fault of the folder or the index that `error` reports, or None when it is no such
    fault (then it is a bug, and is raised as it is)."""
    if isinstance(error, StoreUnwritable):
        return error
    if isinstance(error, OSError):
        return StoreUnwritable(f"{error.strerror or error} ({error.filename or 'the store'})", full=error.errno in FULL_ERRNOS)
    if isinstance(error, sqlite3.Error) and sqlite_code(error) is not None:
        return StoreUnwritable(f"the index: {error}", full=sqlite_code(error) == sqlite3.SQLITE_FULL)
    return None


@contextlib.contextmanager
def repair_lock(directory: Path) -> Iterator[None]:
    """Held by one process at a time (an advisory lock on a file beside the index, released
    when the process dies), so that two workers meeting the same corrupt index repair it once."""
    with open(directory / REPAIR_LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def set_aside(index: Path) -> Path:
    """Copy a corrupt index to `<name>.corrupt-<UTC time>` (kept for whoever wants to look into
    it, never silently lost), then empty it in place, which SQLite reads as a new database.
    Copied and emptied, not renamed: the other workers keep the file open, SQLite's locks hold
    on its inode, and a connection to a renamed index would take the new one's journal for its
    own (and roll it back into the old file). Its own journal, if any, is moved aside too."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = index.with_name(f"{index.name}.corrupt-{stamp}")
    count = 1
    while aside.exists():
        count += 1
        aside = index.with_name(f"{index.name}.corrupt-{stamp}-{count}")
    shutil.copyfile(index, aside)
    with contextlib.suppress(FileNotFoundError):
        index.with_name(index.name + "-journal").replace(aside.with_name(aside.name + "-journal"))
    os.truncate(index, 0)
    log.error("transcript store: the index %s was corrupt; copied aside to %s and rebuilt from the files", index, aside)
    return aside


@contextlib.contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A write transaction, rolled back if anything fails (a rollback that fails too, on a
    broken index, does not hide the first error)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
