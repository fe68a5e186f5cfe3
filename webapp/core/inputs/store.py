"""Pasted transcripts, kept as files named by the hash of their exact bytes.

The link (`/play/t-<hash>`) is the hash of the bytes as they arrived: a textarea's CRLF, a
lone CR, a byte order mark and any Unicode are stored and read back unchanged, so every
worker and every server that shares the directory finds the same transcript under the same
link, before and after a restart. A file is written under a temporary name and renamed into
place, so a reader never sees half a file, and two servers storing the same content write
the same bytes.

An index beside the files (`index.sqlite3`, SQLite's own locking makes it safe across
processes) records each transcript's size on disk, who pasted it and when it was last used,
and which were removed to make room. So a paste never lists or stats the store, a missing
link says whether it was removed or never stored, and eviction counts what the disk holds
(blocks, not file sizes: a 1-byte file takes a whole block).

Limits: each file at most `max_bytes` as sent, the metadata an agent writes around its
messages included; what the replay holds at most `max_messages` messages (a replay keeps every
call's request, and the comparison panel walks every call of every strategy, so their cost
grows with the square of the chat's length) and `max_characters` characters in its messages
and tool definitions (what the counters read), however large the file around them; each client
at most `max_client_bytes` on disk, past which its own least recently used transcripts go
first, so one client cannot push out everyone else's; the whole store at most
`max_total_bytes`, past which the least recently used go. The disk caps count files as sent,
metadata included (the store serves them back byte for byte).
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import re
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..lru import LRUCache
from .scenarios import ScenarioError
from .transcripts import parse_transcript, transcript_id
from ..model import Scenario

TRANSCRIPT_ID = re.compile(r"^t-[0-9a-f]{16}$")
# The link of one run of a file holding several: t-<hash>-r2 (run 1 is t-<hash> itself).
RUN_LINK = re.compile(r"^(?P<name>t-[0-9a-f]{16})-r(?P<run>[2-9]|[1-9][0-9]{1,3})$")
SUFFIX = ".json"
INDEX = "index.sqlite3"
BLOCK = 4096  # where a file system does not report its blocks
# A read marks a transcript as used at most this often per worker: a step through a play page
# reads it at every click, and the recency of eviction does not need the second.
TOUCH_EVERY = 60.0
# Removals remembered to explain a dead link; past it the oldest are forgotten.
REMEMBERED_REMOVALS = 200_000
# A parsed transcript holds about 3.3 times the characters of its messages in memory
# (tracemalloc, 1 MB chat-completions transcripts); the metadata around them is not kept.
PARSED_BYTES_PER_CHARACTER = 4


SCHEMA = (
    """CREATE TABLE IF NOT EXISTS transcripts (
        name TEXT PRIMARY KEY,
        disk INTEGER NOT NULL,      -- bytes the file takes on disk (its blocks)
        client TEXT NOT NULL,       -- client_key() of who pasted it
        used REAL NOT NULL,         -- last stored or read, seconds since the epoch
        removed REAL                -- NULL while stored; when it was removed to make room
    )""",
    "CREATE INDEX IF NOT EXISTS stored_by_use ON transcripts (removed, used)",
    "CREATE INDEX IF NOT EXISTS stored_by_client ON transcripts (client, removed, used)",
    # Running totals, so that a paste never adds up the whole store.
    "CREATE TABLE IF NOT EXISTS clients (client TEXT PRIMARY KEY, disk INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS totals (id INTEGER PRIMARY KEY CHECK (id = 0), disk INTEGER NOT NULL)",
    "INSERT OR IGNORE INTO totals VALUES (0, 0)",
)


class TranscriptTooLarge(ValueError):
    def __init__(self, size: int, limit: int):
        self.size = size
        self.limit = limit
        super().__init__(f"the transcript is {size:,} bytes; the limit is {limit:,} bytes")


class TranscriptNotText(ValueError):
    """The bytes are not UTF-8 text."""


@dataclass(frozen=True)
class Missing:
    """Why a link finds no transcript: `removed` is when it was removed to make room, or None
    when nothing was ever stored under it here."""

    removed: float | None


def decode(data: bytes) -> str:
    """The text of a transcript's bytes: UTF-8, a leading byte order mark set aside for parsing."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise TranscriptNotText(f"byte {error.start:,} is not UTF-8") from None


def client_key(address: str | None) -> str:
    """Who pasted, for the per-client share: the IPv4 address, or the /64 network of an IPv6
    one (one household or machine gets a whole /64). Stored as a hash, not as the address."""
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        label = address or ""
    else:
        if ip.version == 6 and ip.ipv4_mapped:
            ip = ip.ipv4_mapped
        label = str(ipaddress.ip_network(f"{ip}/64", strict=False) if ip.version == 6 else ip)
    return hashlib.sha256(label.encode()).hexdigest()[:16]


def held_characters(scenario: Scenario) -> int:
    """Characters of what a replay holds of a transcript: its messages and tool definitions,
    as compact JSON (the metadata of the file around them is not kept)."""
    messages = [*scenario.prefix, *(item.message for item in scenario.script)]
    return len(json.dumps([messages, scenario.tools], ensure_ascii=False, separators=(",", ":")))


def disk_bytes(path: Path) -> int:
    status = path.stat()
    blocks = getattr(status, "st_blocks", None)
    if blocks is None:
        return -(-status.st_size // BLOCK) * BLOCK
    return max(blocks * 512, BLOCK if status.st_size else 0)


class TranscriptStore:
    def __init__(
        self,
        directory: Path,
        max_bytes: int,
        max_total_bytes: int,
        max_client_bytes: int | None = None,
        max_messages: int = 1000,
        max_characters: int = 1_000_000,
        parsed_cache: int = 32,
        parsed_cache_bytes: int = 48 * 1024 * 1024,
    ):
        self.directory = Path(directory)
        self.max_bytes = max_bytes
        self.max_messages = max_messages
        self.max_characters = max_characters
        self.max_total_bytes = max_total_bytes
        self.max_client_bytes = max_client_bytes or max_total_bytes
        self._parsed: LRUCache[str, tuple[Scenario, int]] = LRUCache(
            parsed_cache, parsed_cache_bytes, lambda name, entry: PARSED_BYTES_PER_CHARACTER * entry[1]
        )
        self._touched: dict[str, float] = {}
        self._local = threading.local()
        self.directory.mkdir(parents=True, exist_ok=True)
        self._open_index()

    def path(self, name: str) -> Path:
        return self.directory / f"{name}{SUFFIX}"

    # --- Reading and writing -----------------------------------------------------------------

    def parse(self, data: bytes, run: int = 1) -> tuple[Scenario, int]:
        """The transcript (of a file holding several runs, run `run`) as a scenario and the
        characters of what it holds, or TranscriptTooLarge, TranscriptNotText, or ScenarioError
        naming each problem's message and field."""
        if len(data) > self.max_bytes:
            raise TranscriptTooLarge(len(data), self.max_bytes)
        name = transcript_id(data) + ("" if run == 1 else f"-r{run}")
        scenario = parse_transcript(decode(data), "transcript", scenario_id=name, run=run)
        # The prefix counts too: a replay sends it with every request.
        count = len(scenario.prefix) + len(scenario.script)
        if count > self.max_messages:
            raise ScenarioError(
                "transcript",
                [("messages", f"{count:,} messages; at most {self.max_messages:,} are accepted")],
            )
        characters = held_characters(scenario)
        if characters > self.max_characters:
            raise ScenarioError(
                "transcript",
                [("messages", f"the messages and tool definitions hold {characters:,} characters (as JSON); at most {self.max_characters:,} are accepted")],
            )
        return scenario, characters

    def save(self, data: bytes, client: str = "") -> Scenario:
        """Validate and store the exact bytes; returns the scenario, whose id is the link.
        Storing the same bytes again only marks them as used."""
        scenario, characters = self.parse(data)
        target = self.path(scenario.id)
        if not target.exists():
            partial = target.with_name(f".{scenario.id}.{os.getpid()}.{threading.get_ident()}.partial")
            partial.write_bytes(data)
            partial.replace(target)
        removed = self._index_saved(scenario.id, disk_bytes(target), client)
        self._forget(removed)
        self._parsed.put(scenario.id, (scenario, characters))
        return scenario

    def read_bytes(self, name: str) -> bytes | None:
        """The bytes stored under `name`, exactly as they were pasted, or None."""
        if not TRANSCRIPT_ID.match(name):
            return None
        try:
            data = self.path(name).read_bytes()
        except FileNotFoundError:
            return None
        return data if transcript_id(data) == name else None  # changed by hand: no link to it

    def load(self, name: str) -> Scenario | None:
        """The stored transcript `name` (t-<16 hex>, or t-<16 hex>-r2 for its second run), or
        None when there is none: then `missing(name)` says why."""
        if chosen := RUN_LINK.match(name):
            return self._load_run(chosen["name"], int(chosen["run"]))
        if not TRANSCRIPT_ID.match(name):
            return None
        cached = self._parsed.get(name)
        if cached is not None:
            if not self.path(name).exists():  # removed, here or by another server
                self._parsed.pop(name)
                return None
            self._touch(name)
            return cached[0]
        data = self.read_bytes(name)
        if data is None:
            return None
        try:
            scenario, characters = self.parse(data)
        except (ScenarioError, TranscriptTooLarge, TranscriptNotText):
            return None  # stored under older, other rules: no link to it
        self._parsed.put(name, (scenario, characters))
        self._touch(name)
        return scenario

    def _load_run(self, stored: str, run: int) -> Scenario | None:
        name = f"{stored}-r{run}"
        cached = self._parsed.get(name)
        if cached is not None and self.path(stored).exists():
            return cached[0]
        data = self.read_bytes(stored)
        if data is None:
            return None
        try:
            scenario, characters = self.parse(data, run)
        except (ScenarioError, TranscriptTooLarge, TranscriptNotText):
            return None  # no such run
        self._parsed.put(name, (scenario, characters))
        return scenario

    def missing(self, name: str) -> Missing:
        name = chosen["name"] if (chosen := RUN_LINK.match(name)) else name
        row = self._db().execute("SELECT removed FROM transcripts WHERE name = ?", (name,)).fetchone()
        return Missing(row[0] if row else None)

    def usage(self, client: str | None = None) -> int:
        """Bytes on disk of the stored transcripts, of one client or of all."""
        if client is None:
            return self._db().execute("SELECT disk FROM totals").fetchone()[0]
        return self._client_bytes(self._db(), client)

    # --- The index ----------------------------------------------------------------------------

    def _db(self) -> sqlite3.Connection:
        """This thread's connection: SQLite connections are shared neither across threads nor
        across a fork (gunicorn may create the app before forking its workers)."""
        if getattr(self._local, "pid", None) != os.getpid():
            connection = sqlite3.connect(self.directory / INDEX, timeout=30, isolation_level=None)
            connection.execute("PRAGMA synchronous = NORMAL")
            self._local.connection, self._local.pid = connection, os.getpid()
        return self._local.connection

    def _open_index(self) -> None:
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            fresh = db.execute("SELECT name FROM sqlite_master WHERE name = 'transcripts'").fetchone() is None
            for statement in SCHEMA:
                db.execute(statement)
            if fresh:
                # A directory from before the index: its transcripts are adopted once, as used
                # when their files were last modified.
                for path in self.directory.glob(f"t-*{SUFFIX}"):
                    if TRANSCRIPT_ID.match(path.stem):
                        self._add(db, path.stem, disk_bytes(path), "", path.stat().st_mtime)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    @staticmethod
    def _client_bytes(db: sqlite3.Connection, client: str) -> int:
        row = db.execute("SELECT disk FROM clients WHERE client = ?", (client,)).fetchone()
        return row[0] if row else 0

    @staticmethod
    def _add(db: sqlite3.Connection, name: str, disk: int, client: str, used: float) -> None:
        db.execute("INSERT OR REPLACE INTO transcripts VALUES (?, ?, ?, ?, NULL)", (name, disk, client, used))
        db.execute("INSERT INTO clients VALUES (?, ?) ON CONFLICT (client) DO UPDATE SET disk = disk + excluded.disk", (client, disk))
        db.execute("UPDATE totals SET disk = disk + ?", (disk,))

    def _index_saved(self, name: str, disk: int, client: str) -> list[str]:
        """Record a stored transcript, then remove the least recently used until the client's
        share and the store's cap both hold; returns the names removed."""
        db = self._db()
        now = time.time()
        removed: list[str] = []
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute("SELECT removed FROM transcripts WHERE name = ?", (name,)).fetchone()
            if row is not None and row[0] is None:
                db.execute("UPDATE transcripts SET used = ? WHERE name = ?", (now, name))
            else:
                self._add(db, name, disk, client, now)
            while self._client_bytes(db, client) > self.max_client_bytes:
                oldest = db.execute(
                    "SELECT name FROM transcripts WHERE client = ? AND removed IS NULL AND name != ? ORDER BY used LIMIT 1",
                    (client, name),
                ).fetchone()
                if oldest is None:
                    break
                removed.append(self._remove(db, oldest[0], now))
            while db.execute("SELECT disk FROM totals").fetchone()[0] > self.max_total_bytes:
                oldest = db.execute(
                    "SELECT name FROM transcripts WHERE removed IS NULL AND name != ? ORDER BY used LIMIT 1", (name,)
                ).fetchone()
                if oldest is None:
                    break
                removed.append(self._remove(db, oldest[0], now))
            if removed:
                self._forget_old_removals(db)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return removed

    def _remove(self, db: sqlite3.Connection, name: str, now: float) -> str:
        disk, client = db.execute("SELECT disk, client FROM transcripts WHERE name = ?", (name,)).fetchone()
        db.execute("UPDATE transcripts SET removed = ? WHERE name = ?", (now, name))
        db.execute("UPDATE clients SET disk = disk - ? WHERE client = ?", (disk, client))
        db.execute("UPDATE totals SET disk = disk - ?", (disk,))
        try:
            self.path(name).unlink()
        except FileNotFoundError:
            pass
        return name

    @staticmethod
    def _forget_old_removals(db: sqlite3.Connection) -> None:
        db.execute(
            "DELETE FROM transcripts WHERE removed IS NOT NULL AND removed <= "
            "(SELECT removed FROM transcripts WHERE removed IS NOT NULL ORDER BY removed DESC LIMIT 1 OFFSET ?)",
            (REMEMBERED_REMOVALS,),
        )

    def _touch(self, name: str) -> None:
        now = time.time()
        if now - self._touched.get(name, 0.0) < TOUCH_EVERY:
            return
        if len(self._touched) > 4 * self._parsed.max_entries:
            self._touched.clear()
        self._touched[name] = now
        db = self._db()
        if db.execute("UPDATE transcripts SET used = ? WHERE name = ? AND removed IS NULL", (now, name)).rowcount == 0:
            # A file the index does not know (copied in by hand, or its save was interrupted).
            db.execute("BEGIN IMMEDIATE")
            try:
                if db.execute("SELECT 1 FROM transcripts WHERE name = ? AND removed IS NULL", (name,)).fetchone() is None:
                    self._add(db, name, disk_bytes(self.path(name)), "", now)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def _forget(self, names: list[str]) -> None:
        for name in names:
            self._parsed.pop(name)
