"""Pasted transcripts, kept as files named by their content's hash.

The same content is the same file and the same link (`/play/t-<hash>`); a link works for
anyone and survives a restart. Several app servers share transcripts by pointing at one
directory (a shared volume or network file system): a file is written under a temporary name
and renamed into place, so a reader never sees half a file, and two servers storing the same
content write the same bytes.

Limits: each transcript at most `max_bytes` and `max_messages` (a replay keeps every call's
request, and the comparison panel walks every call of every strategy, so their cost grows with
the square of the chat's length); the directory at most `max_total_bytes`, beyond
which the least recently used transcripts are removed, by file access time. Reading a
transcript sets its access time explicitly, so eviction does not depend on how the file
system is mounted (noatime, relatime).
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import OrderedDict
from pathlib import Path

from .scenarios import Scenario, ScenarioError, parse_transcript, transcript_id

TRANSCRIPT_ID = re.compile(r"^t-[0-9a-f]{16}$")
SUFFIX = ".json"


class TranscriptTooLarge(ValueError):
    def __init__(self, size: int, limit: int):
        self.size = size
        self.limit = limit
        super().__init__(f"the transcript is {size:,} bytes; the limit is {limit:,} bytes")


class TranscriptStore:
    def __init__(self, directory: Path, max_bytes: int, max_total_bytes: int, parsed_cache: int = 32, max_messages: int = 1000):
        self.directory = Path(directory)
        self.max_bytes = max_bytes
        self.max_messages = max_messages
        self.max_total_bytes = max_total_bytes
        self._parsed: OrderedDict[str, Scenario] = OrderedDict()
        self._parsed_size = parsed_cache
        self._lock = threading.Lock()

    def path(self, name: str) -> Path:
        return self.directory / f"{name}{SUFFIX}"

    def parse(self, text: str) -> Scenario:
        """The transcript as a scenario, or ScenarioError naming each problem's message and field."""
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > self.max_bytes:
            raise TranscriptTooLarge(size, self.max_bytes)
        name = transcript_id(text)
        scenario = parse_transcript(text, "transcript", scenario_id=name, title=f"Transcript {name}")
        # The prefix counts too: a replay sends it with every request.
        count = len(scenario.prefix) + len(scenario.script)
        if count > self.max_messages:
            raise ScenarioError(
                "transcript",
                [("messages", f"{count:,} messages; at most {self.max_messages:,} are accepted")],
            )
        return scenario

    def save(self, text: str) -> Scenario:
        """Validate and store; returns the scenario, whose id is the link. Storing the same
        content again only marks it as used."""
        scenario = self.parse(text)
        target = self.path(scenario.id)
        self.directory.mkdir(parents=True, exist_ok=True)
        if target.exists():
            self._touch(target)
        else:
            partial = target.with_name(f".{scenario.id}.{os.getpid()}.{threading.get_ident()}.partial")
            partial.write_text(text, encoding="utf-8")
            partial.replace(target)
        self._remember(scenario)
        self.evict(keep=scenario.id)
        return scenario

    def load(self, name: str) -> Scenario | None:
        """The stored transcript `name` (t-<16 hex>), or None when there is none."""
        if not TRANSCRIPT_ID.match(name):
            return None
        target = self.path(name)
        with self._lock:
            cached = self._parsed.get(name)
            if cached is not None:
                self._parsed.move_to_end(name)
        if cached is not None:
            if not target.exists():  # evicted, here or by another server
                with self._lock:
                    self._parsed.pop(name, None)
                return None
            self._touch(target)
            return cached
        try:
            text = target.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            scenario = self.parse(text)
        except (ScenarioError, TranscriptTooLarge):
            return None  # not ours, or changed by hand: no link to it
        if scenario.id != name:
            return None
        self._touch(target)
        self._remember(scenario)
        return scenario

    def evict(self, keep: str | None = None) -> list[str]:
        """Remove the least recently used transcripts until the directory fits its cap."""
        entries = []
        for path in self.directory.glob(f"t-*{SUFFIX}"):
            try:
                status = path.stat()
            except FileNotFoundError:
                continue
            entries.append((status.st_atime, status.st_size, path))
        total = sum(size for _, size, _ in entries)
        removed = []
        for _, size, path in sorted(entries):
            if total <= self.max_total_bytes:
                break
            if path.stem == keep:
                continue
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            total -= size
            removed.append(path.stem)
        with self._lock:
            for name in removed:
                self._parsed.pop(name, None)
        return removed

    def _touch(self, path: Path) -> None:
        try:
            status = path.stat()
            os.utime(path, (time.time(), status.st_mtime))
        except FileNotFoundError:
            pass

    def _remember(self, scenario: Scenario) -> None:
        with self._lock:
            self._parsed[scenario.id] = scenario
            self._parsed.move_to_end(scenario.id)
            while len(self._parsed) > self._parsed_size:
                self._parsed.popitem(last=False)
