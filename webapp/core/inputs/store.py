"""Pasted transcripts, kept under the hash of their exact bytes: what both stores do alike
(StoredTranscripts), and the default store, files in a folder (TranscriptStore). The other
keeps them in PostgreSQL (store_postgres.py, TRANSCRIPT_STORE=postgresql://…); both follow the
rules of store_rules.py.

The link (`/play/t-<hash>`) is the hash of the bytes as they arrived: a textarea's CRLF, a
lone CR, a byte order mark and any Unicode are stored and read back unchanged, so every
worker and every server that shares the directory finds the same transcript under the same
link, before and after a restart. A file is written under a temporary name and renamed into
place, so a reader never sees half a file, and two servers storing the same content write
the same bytes.

An index beside the files (store_index.py) records each transcript's size on disk, who pasted
it and when it was last used, and which were removed and why. So a paste never lists or stats
the store, a missing link says whether it was removed or never stored, and eviction counts what
the disk holds (blocks, not file sizes: a 1-byte file takes a whole block).

The store degrades, never the site (store_faults.py): whatever state its folder is in at start
(read-only, impossible to create, full, its index corrupt), the store is built; it then reads
what is stored, and refuses pastes with StoreUnwritable until one finds it writable again.

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

import contextlib
import hashlib
import ipaddress
import json
import os
import re
import sqlite3
import threading
import time
from pathlib import Path

from ..lru import LRUCache
from .scenarios import ScenarioError
from .store_faults import StoreUnwritable, log, unwritable
from .store_index import SUFFIX, TRANSCRIPT_ID, TranscriptIndex, disk_bytes
from .store_rules import Missing, StoreIndex
from .transcripts import parse_transcript, transcript_id
from ..model import Scenario

# The link of one run of a file holding several: t-<hash>-r2 (run 1 is t-<hash> itself).
RUN_LINK = re.compile(r"^(?P<name>t-[0-9a-f]{16})-r(?P<run>[2-9]|[1-9][0-9]{1,3})$")
# A read marks a transcript as used at most this often per worker: a step through a play page
# reads it at every click, and the recency of eviction does not need the second.
TOUCH_EVERY = 60.0
# A parsed transcript holds about 3.3 times the characters of its messages in memory
# (tracemalloc, 1 MB chat-completions transcripts); the metadata around them is not kept.
PARSED_BYTES_PER_CHARACTER = 4


class TranscriptTooLarge(ValueError):
    def __init__(self, size: int, limit: int):
        self.size = size
        self.limit = limit
        super().__init__(f"the transcript is {size:,} bytes; the limit is {limit:,} bytes")


class TranscriptNotText(ValueError):
    """The bytes are not UTF-8 text."""


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


class StoredTranscripts:
    """What both stores do alike: the limits a transcript is parsed under, the parsed
    transcripts this process keeps, the runs of a file, the fault a paste met, the recency of
    reads. A store says where the bytes live: `_keep`, `_read`, `_exists`, `_start`, `_fault`."""

    def __init__(
        self,
        index: StoreIndex,
        max_bytes: int,
        max_messages: int = 1000,
        max_characters: int = 1_000_000,
        parsed_cache: int = 32,
        parsed_cache_bytes: int = 48 * 1024 * 1024,
    ):
        self.max_bytes = max_bytes
        self.max_messages = max_messages
        self.max_characters = max_characters
        self.max_total_bytes = index.max_total_bytes
        self.max_client_bytes = index.max_client_bytes
        self._parsed: LRUCache[str, tuple[Scenario, int]] = LRUCache(
            parsed_cache, parsed_cache_bytes, lambda name, entry: PARSED_BYTES_PER_CHARACTER * entry[1]
        )
        self._touched: dict[str, float] = {}
        self._index = index
        # Why the store cannot keep a new transcript, while it cannot (None when it can).
        self.fault: StoreUnwritable | None = None
        self._ready = False
        self._start()

    # --- Where the bytes live (each store's own) ---------------------------------------------

    def _start(self) -> bool:
        """Make the store ready to keep transcripts; False, with `fault` set, when it cannot yet."""
        raise NotImplementedError

    def _keep(self, name: str, data: bytes, client: str) -> list[str]:
        """Store `data` as `name` and index it, charged to `client`; the names removed to make room."""
        raise NotImplementedError

    def _read(self, name: str) -> bytes | None:
        raise NotImplementedError

    def _exists(self, name: str) -> bool:
        raise NotImplementedError

    def _fault(self, error: BaseException) -> StoreUnwritable | None:
        return self._index.fault(error)

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
        Storing the same bytes again only marks them as used. Raises StoreUnwritable, with
        nothing kept, when the store cannot be written (StoreUnreachable when its database
        cannot be reached) or the disk is full."""
        scenario, characters = self.parse(data)
        try:
            if not self._ready and not self._start():  # a store that failed at start may work now
                raise self.fault or StoreUnwritable("the store did not start")
            removed = self._keep(scenario.id, data, client)
        except Exception as error:
            if (fault := self._fault(error)) is None:
                raise
            self.fault = fault
            raise fault from error
        self.fault = None
        self._forget(removed)
        self._parsed.put(scenario.id, (scenario, characters))
        return scenario

    def read_bytes(self, name: str) -> bytes | None:
        """The bytes stored under `name`, exactly as they were pasted, or None."""
        if not TRANSCRIPT_ID.match(name):
            return None
        data = self._read(name)
        if data is None:
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
            if not self._exists(name):  # removed, here or by another server
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
        if cached is not None and self._exists(stored):
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
        """Why `name` finds no transcript (the stored file's, for the link of a run)."""
        return self._index.missing(chosen["name"] if (chosen := RUN_LINK.match(name)) else name)

    def usage(self, client: str | None = None) -> int:
        """Bytes on disk of the stored transcripts, of one client or of all."""
        return self._index.usage(client)

    def close(self) -> None:
        """Let go of what the store holds open beyond a request (a database's connections)."""

    def _touch(self, name: str) -> None:
        """Record a read, for the recency of eviction: best effort, a read never fails for it."""
        now = time.time()
        if now - self._touched.get(name, 0.0) < TOUCH_EVERY:
            return
        if len(self._touched) > 4 * self._parsed.max_entries:
            self._touched.clear()
        self._touched[name] = now
        self._index.record_use(name, now)

    def _forget(self, names: list[str]) -> None:
        for name in names:
            self._parsed.pop(name)


class TranscriptStore(StoredTranscripts):
    """The store in a folder: a file per transcript, named by its link, and the SQLite index
    beside them (store_index.py). The default; several servers share it through the folder."""

    def __init__(
        self,
        directory: Path,
        max_bytes: int,
        max_total_bytes: int,
        max_client_bytes: int | None = None,
        **limits,
    ):
        self.directory = Path(directory)
        index = TranscriptIndex(self.directory, max_total_bytes, max_client_bytes or max_total_bytes)
        super().__init__(index, max_bytes, **limits)

    def path(self, name: str) -> Path:
        return self.directory / f"{name}{SUFFIX}"

    def _start(self) -> bool:
        """Create the folder and open the index, tidied (TranscriptIndex._tidy). Whatever fails, the store
        stays up: it reads what is stored and refuses pastes (`fault`) until one finds it
        writable again."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._index.open()
        except (OSError, sqlite3.Error) as error:
            if (fault := unwritable(error)) is None:
                raise
            self.fault = fault
            log.warning("transcript store %s cannot be written (%s): pastes are refused, stored transcripts are still read",
                        self.directory, fault.reason)
            return False
        self._ready, self.fault = True, None
        return True

    def _keep(self, name: str, data: bytes, client: str) -> list[str]:
        wrote = self._write(name, data)
        try:
            return self._index.saved(name, disk_bytes(self.path(name)), client)
        except BaseException:
            if wrote:  # a file the index does not count would be outside every quota
                self.path(name).unlink(missing_ok=True)
            raise

    def _write(self, name: str, data: bytes) -> bool:
        """Write the file under a temporary name, then rename it into place; False when it was
        there already. A failed write leaves no partial file behind."""
        target = self.path(name)
        if target.exists():
            return False
        partial = target.with_name(f".{name}.{os.getpid()}.{threading.get_ident()}.partial")
        try:
            partial.write_bytes(data)
            partial.replace(target)
        except BaseException:
            with contextlib.suppress(OSError):
                partial.unlink(missing_ok=True)
            raise
        return True

    def _read(self, name: str) -> bytes | None:
        try:
            return self.path(name).read_bytes()
        except FileNotFoundError:
            return None

    def _exists(self, name: str) -> bool:
        return self.path(name).exists()
