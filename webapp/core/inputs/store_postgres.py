"""Pasted transcripts in PostgreSQL (`TRANSCRIPT_STORE=postgresql://…`): the index and the bodies
in one database that every host shares, under the folder store's rules (store_rules.py).

A paste is one transaction: its body inserted by its hash (`INSERT … ON CONFLICT DO NOTHING`, so
two hosts pasting the same bytes store them once), its row charged to its client, room made;
writers take an advisory lock, so that two hosts never evict on the same totals at once. A
link is answered only once that transaction has committed, so a paste answered with its link is
readable from every host afterwards, whatever stops next. A body counts as whole 4 KiB blocks,
as a file of the folder store does on disk, so that the caps mean the same in both stores.

Each process has its own pool of connections (psycopg_pool), made the first time it is used in
that process: gunicorn forks its workers after the app may have been made, and a pool's
connections and threads do not survive a fork. PostgreSQL stopped or restarting never gives a
500 and never stops a worker from booting: a paste or a read of a stored transcript raises
StoreUnreachable (the web answers 503 with Retry-After) at once, without waiting on the pool;
at most once a second a request tries a new connection, and when one opens, a new pool serves
again, so the store recovers by itself when the server returns.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from .store import StoredTranscripts
from .store_faults import StoreUnreachable, StoreUnwritable, log
from .store_rules import SCHEMA, StoreIndex, T, blocks

BODIES = "CREATE TABLE IF NOT EXISTS bodies (name TEXT PRIMARY KEY, data BYTEA NOT NULL)"
# One writer at a time per store (a store is a schema of a database): the first key names this
# app's locks, the second the schema, so that two stores in one database do not wait on each other.
WRITER_LOCK = "SELECT pg_advisory_xact_lock(20834, hashtext(current_schema()))"
# Connections per process, at most: one per thread that runs requests (webapp/asgi.py), so a
# request never waits for another's connection; at least one kept open.
POOL_SIZE = 8
# Seconds to open a connection, to wait for one from the pool, and for one statement: all below
# the app's budget of a request (REQUEST_WALL_SECONDS, 20 s), so a store that hangs gets a 503
# before gunicorn kills the worker.
CONNECT_SECONDS = 3
WAIT_SECONDS = 5.0
STATEMENT_TIMEOUT = "10s"
# Once the database did not answer, requests fail at once, and one tries it again this often.
PROBE_EVERY = 1.0


@functools.lru_cache(maxsize=256)
def placeholders(sql: str) -> str:
    """The rules' SQL (`?` placeholders) as psycopg takes it (`%s`)."""
    return sql.replace("%", "%%").replace("?", "%s")


class Rules:
    """A psycopg connection that takes the rules' SQL."""

    def __init__(self, connection: psycopg.Connection):
        self.connection = connection

    def execute(self, sql: str, params: tuple = (), binary: bool = False) -> psycopg.Cursor:
        return self.connection.execute(placeholders(sql), params, binary=binary)


def postgres_fault(error: BaseException) -> StoreUnwritable | None:
    """The fault of the store that a psycopg error reports: a database that cannot be reached
    (stopped, restarting, refusing connections, a statement past its timeout) is
    StoreUnreachable; a full disk is `full` (507); a read-only database (a standby) cannot be
    written. None for anything else, which is a bug and raised as it is."""
    if isinstance(error, StoreUnwritable):
        return error
    if not isinstance(error, psycopg.Error):
        return None
    reason = f"PostgreSQL: {str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__}"
    if error.sqlstate == "53100":  # disk_full
        return StoreUnwritable(reason, full=True)
    if error.sqlstate == "25006":  # read_only_sql_transaction
        return StoreUnwritable(reason)
    if isinstance(error, psycopg.OperationalError):
        return StoreUnreachable(reason)
    return None


def server_name(url: str) -> str:
    """Where the database is, for the log: host, port and database, never the password."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.Error:
        return "PostgreSQL (an unreadable URL)"
    return f"PostgreSQL {parts.get('host', 'localhost')}:{parts.get('port', 5432)}/{parts.get('dbname', '')}"


def configure(connection: psycopg.Connection) -> None:
    connection.execute(f"SET statement_timeout = '{STATEMENT_TIMEOUT}'")


class PostgresIndex(StoreIndex):
    """The index and the bodies in PostgreSQL, reached through this process's pool."""

    def __init__(self, url: str, max_total_bytes: int, max_client_bytes: int):
        super().__init__(max_total_bytes, max_client_bytes)
        self.url = url
        self.where = server_name(url)
        self._lock = threading.Lock()
        self._pool: ConnectionPool | None = None
        self._pid: int | None = None
        # While the database does not answer: why, and when a request may try it again.
        self.unreachable: StoreUnreachable | None = None
        self._retry_at = 0.0
        self._tables = False

    # --- What the rules need of PostgreSQL ---------------------------------------------------

    def run(self, work: Callable[[Rules], T]) -> T:
        return self.on_a_connection(lambda connection: work(Rules(connection)))

    def write(self, work: Callable[[Rules], T]) -> T:
        def transacted(connection: psycopg.Connection) -> T:
            with connection.transaction():
                connection.execute(WRITER_LOCK)
                return work(Rules(connection))

        return self.on_a_connection(transacted)

    def fault(self, error: BaseException) -> StoreUnwritable | None:
        return postgres_fault(error)

    def body_exists(self, db: Rules, name: str) -> bool:
        return db.execute("SELECT 1 FROM bodies WHERE name = ?", (name,)).fetchone() is not None

    def drop_body(self, db: Rules, name: str) -> None:
        db.execute("DELETE FROM bodies WHERE name = ?", (name,))

    def keep(self, name: str, data: bytes, client: str) -> list[str]:
        """Store the body and charge it, in one transaction; the names removed to make room."""

        def keep(db: Rules) -> list[str]:
            db.execute("INSERT INTO bodies VALUES (?, ?) ON CONFLICT (name) DO NOTHING", (name, data))
            return self.saved_row(db, name, blocks(len(data)), client, time.time())

        return self.write(keep)

    def read(self, name: str) -> bytes | None:
        row = self.run(lambda db: db.execute("SELECT data FROM bodies WHERE name = ?", (name,), binary=True).fetchone())
        return None if row is None else bytes(row[0])

    # --- Connections, and a database that does not answer ------------------------------------

    def on_a_connection(self, work: Callable[[psycopg.Connection], T], again: bool = False) -> T:
        """`work` on a connection of this process's pool. A database that cannot be reached
        raises StoreUnreachable, and so does every request until one finds it answering again.
        A pooled connection that the server closed since (a restart) sends this request to try
        the database at once with a new connection, and `work` runs again, once, on a new pool:
        every work here may run twice (reads, and writes that roll back whole or, run again,
        find their own commit), and no request pays a check of its connection beforehand."""
        pool = self._pool_of_this_process()
        try:
            connection = pool.getconn(timeout=WAIT_SECONDS)
        except psycopg.Error as error:
            raise self._fault_of(error) from error
        try:
            return work(connection)
        except psycopg.Error as error:
            fault = self._fault_of(error)
            if fault is error:
                raise
            if again or not (isinstance(fault, StoreUnreachable) and connection.broken):
                raise fault from error
        finally:
            pool.putconn(connection)
        return self.on_a_connection(work, again=True)

    def _fault_of(self, error: psycopg.Error) -> Exception:
        """What to raise for `error`: the store's fault, noting a database that stopped answering;
        `error` itself when it is a bug."""
        fault = postgres_fault(error)
        if fault is None:
            return error
        if isinstance(fault, StoreUnreachable):
            self._lost(fault)
        return fault

    def _pool_of_this_process(self) -> ConnectionPool:
        with self._lock:
            if self._pool is not None and self._pid == os.getpid() and self.unreachable is None:
                return self._pool
            if time.monotonic() < self._retry_at and self._pid == os.getpid():
                raise self.unreachable or StoreUnreachable(f"{self.where} does not answer")
            return self._reopen()

    def _reopen(self) -> ConnectionPool:
        """Try the database with a connection of its own (refused at once while it is down,
        where the pool would wait), create the tables once, then serve from a new pool."""
        try:
            with psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_SECONDS) as probe:
                if not self._tables:
                    self._create_tables(probe)
        except psycopg.Error as error:
            fault = postgres_fault(error)
            if not isinstance(fault, StoreUnreachable):
                raise
            self._retry_at = time.monotonic() + PROBE_EVERY
            if self._pid != os.getpid() or self.unreachable is None:
                log.warning("transcript store: %s cannot be reached (%s): pastes and stored transcripts answer 503 until it answers",
                            self.where, fault.reason)
            self._pid, self.unreachable = os.getpid(), fault
            raise fault from error
        if self.unreachable is not None and self._pid == os.getpid():
            log.warning("transcript store: %s answers again", self.where)
        self._close_pool()
        self._pool = self._new_pool()
        self._pid, self.unreachable, self._retry_at = os.getpid(), None, 0.0
        return self._pool

    def _create_tables(self, connection: psycopg.Connection) -> None:
        """Create the tables, once per process. A database that cannot be written (a read-only
        standby, a full disk) still serves what it holds: its pastes are refused as they come."""
        try:
            with connection.transaction():
                connection.execute(WRITER_LOCK)  # two processes creating a table at once would collide
                for statement in (*SCHEMA, BODIES):
                    connection.execute(statement)
        except psycopg.Error as error:
            fault = postgres_fault(error)
            if fault is None or isinstance(fault, StoreUnreachable):
                raise
            log.warning("transcript store: %s cannot be written (%s): pastes are refused, stored transcripts are still read",
                        self.where, fault.reason)
            return
        self._tables = True

    def _new_pool(self) -> ConnectionPool:
        kwargs: dict[str, Any] = {"autocommit": True, "connect_timeout": CONNECT_SECONDS}
        return ConnectionPool(self.url, min_size=1, max_size=POOL_SIZE, kwargs=kwargs, configure=configure,
                              timeout=WAIT_SECONDS, name="transcripts", open=True)

    def _lost(self, fault: StoreUnreachable) -> None:
        """The database stopped answering: its pool is closed (it would retry on its own, slower
        and logging each try) and the next request tries the database with a new connection."""
        with self._lock:
            if self.unreachable is None and self._pid == os.getpid():
                log.warning("transcript store: %s stopped answering (%s)", self.where, fault.reason)
                self.unreachable = fault
                self._close_pool()

    def close(self) -> None:
        with self._lock:
            if self._pool is not None and self._pid == os.getpid():
                self._pool.close()
            self._pool = None

    def _close_pool(self) -> None:
        """Close this process's pool without waiting on it (a parent's pool is not ours to close)."""
        if self._pool is not None and self._pid == os.getpid():
            threading.Thread(target=self._pool.close, kwargs={"timeout": 1.0}, daemon=True).start()
        self._pool = None


class PostgresStore(StoredTranscripts):
    """The store in PostgreSQL; `url` is libpq's (postgresql://user:password@host:port/database)."""

    def __init__(self, url: str, max_bytes: int, max_total_bytes: int, max_client_bytes: int | None = None, **limits):
        self.url = url
        self._write_fault: StoreUnwritable | None = None
        index = PostgresIndex(url, max_total_bytes, max_client_bytes or max_total_bytes)
        super().__init__(index, max_bytes, **limits)

    @property
    def fault(self) -> StoreUnwritable | None:
        """Why a paste would be refused now: the database does not answer, or the last paste
        found it could not write (a paste refused while it did not answer is forgotten when it answers)."""
        if self._index.unreachable is not None:
            return self._index.unreachable
        return None if isinstance(self._write_fault, StoreUnreachable) else self._write_fault

    @fault.setter
    def fault(self, value: StoreUnwritable | None) -> None:
        self._write_fault = value

    def _start(self) -> bool:
        """Reach the database and create the tables; whatever fails, the app starts."""
        try:
            self._index.run(lambda db: None)
        except StoreUnwritable as fault:
            self.fault = fault
            return False
        self._ready, self.fault = True, None
        return True

    def close(self) -> None:
        self._index.close()

    def _keep(self, name: str, data: bytes, client: str) -> list[str]:
        return self._index.keep(name, data, client)

    def _read(self, name: str) -> bytes | None:
        return self._index.read(name)

    def _exists(self, name: str) -> bool:
        return self._index.run(lambda db: self._index.body_exists(db, name))
