"""A store that fails: the transcript folder full, read-only, or its index corrupt at start or
while the site runs, on gunicorn as `compaction-playground serve` runs it.

Each attack stores transcripts first, puts the fault in place (a tmpfs mounted for it, filled
or remounted read-only; garbage written over the index's header), then loads the site with
clients that paste new transcripts and read the stored ones (their play page and their file),
while the probe asks for the home page. A paste's 503 or 507 is the store's clear answer and is
listed in the note, not counted as an error; any other 5xx, and a read that fails, is. A server
whose workers cannot boot is reported as down (no home page at all).

Mounting needs root (or CAP_SYS_ADMIN); the corrupt-index attacks need neither.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import random
import subprocess
import tempfile
import threading
import urllib.parse
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

from bench.attacks import Attack, Row
from bench.attacks.probe import timed, under_load
from bench.server import get, paste, serve
from bench.transcript import generate_transcript

STORED = 16  # transcripts stored before the fault, read during it
STORE_ANSWERS = {503, 507}  # a paste refused by a store that cannot keep it: the answer we want


def transcript(seed: int) -> str:
    return json.dumps(generate_transcript(12, seed=seed), ensure_ascii=False)


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True, text=True)
    if mounted.returncode:
        raise SystemExit(f"this attack mounts a tmpfs, which is not permitted here: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(path: Path) -> None:
    with contextlib.suppress(OSError), open(path / "filler", "wb", buffering=0) as filler:
        while True:
            filler.write(b"\0" * 65536)


def corrupt_index(folder: Path) -> None:
    with open(folder / "index.sqlite3", "r+b") as index:
        index.write(b"garbage over the header of the index " * 8)


class StoreClients:
    """Clients that paste new transcripts and read the stored ones, in turn; `seen` keeps the
    statuses of each kind of request, for the note. `fault`, if given, runs once, when the
    load starts (the fault that strikes a running site)."""

    def __init__(self, port: int, stored: list[str], timeout: float, fault: Callable[[], None] | None = None):
        self.port, self.stored, self.timeout, self.fault = port, stored, timeout, fault
        self.seeds = itertools.count(10_000)
        self.lock = threading.Lock()
        self.seen: dict[str, Counter] = defaultdict(Counter)

    def __call__(self, stop: threading.Event) -> Counter:
        with self.lock:
            fault, self.fault = self.fault, None
        if fault:
            fault()
        rng = random.Random()
        errors: Counter = Counter()
        while not stop.is_set():
            kind = rng.choice(("paste", "read", "read", "file"))
            if kind == "paste":
                with self.lock:
                    seed = next(self.seeds)
                body = urllib.parse.urlencode({"transcript": transcript(seed)}).encode()
                try:
                    status = get(self.port, "/transcripts", {"Content-Type": "application/x-www-form-urlencoded"}, "POST", body, timeout=self.timeout)[0]
                except OSError:
                    status = 0
            else:
                name = rng.choice(self.stored)
                status = timed(self.port, rng.choice((f"/play/{name}", f"/play/{name}?call=1")) if kind == "read" else f"/transcripts/{name}.json", timeout=self.timeout)[1]
            with self.lock:
                self.seen[kind][status] += 1
            if status >= 500 and not (kind == "paste" and status in STORE_ANSWERS):
                errors[status] += 1
        return errors

    def note(self) -> str:
        return "; ".join(f"{kind}s " + ", ".join(f"{status}×{count}" for status, count in sorted(counts.items()))
                         for kind, counts in sorted(self.seen.items()))


def store_some(folder: Path, logs: Path) -> list[str]:
    """Paste STORED transcripts through a server on `folder`, which then stops."""
    with serve(workers=1, config={"TRANSCRIPT_DIR": str(folder)}, error_log=str(logs / "setup.log")) as (port, _):
        return [paste(port, transcript(seed)) for seed in range(STORED)]


def attack_row(
    label: str, folder: Path, options: argparse.Namespace, stored: list[str], logs: Path, fault: Callable[[], None] | None = None
) -> Row:
    """The row of a production server on `folder` under StoreClients, or 'down' when no
    worker of it boots. Its log goes to `logs`, off the faulty disk."""
    log = logs / "gunicorn.log"
    try:
        with serve(workers=None, production=True, config={"TRANSCRIPT_DIR": str(folder)}, error_log=str(log)) as (port, _):
            clients = StoreClients(port, stored, options.timeout, fault)
            row = under_load(label, port, clients, duration=options.duration, idle=options.idle, threads=4,
                             timeout=options.timeout, note=clients.note)
    except SystemExit as down:
        return Row(label, 0.0, float("inf"), 0, f"site down: {down}")
    aside = len(list(folder.glob("index.sqlite3.corrupt-*")))
    return Row(row.attack, row.idle_p99, row.attack_p99, row.server_errors, row.note + (f"; index copies set aside: {aside}" if aside else ""))


def healthy(options: argparse.Namespace) -> list[Row]:
    """The same clients on a store with no fault: the reference for the rows of the faults,
    since four clients pasting and reading in a loop load the two cores by themselves."""
    with tempfile.TemporaryDirectory(prefix="attack-store-") as scratch:
        folder = Path(scratch) / "transcripts"
        return [attack_row("store: no fault (reference)", folder, options, store_some(folder, Path(scratch)), Path(scratch))]


def full_disk(options: argparse.Namespace) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="attack-store-") as scratch, tmpfs(Path(scratch) / "disk", "8m") as disk:
        folder = disk / "transcripts"
        stored = store_some(folder, Path(scratch))
        fill(disk)
        return [attack_row("store: disk full", folder, options, stored, Path(scratch))]


def read_only(options: argparse.Namespace) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="attack-store-") as scratch, tmpfs(Path(scratch) / "disk", "8m") as disk:
        folder = disk / "transcripts"
        stored = store_some(folder, Path(scratch))
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        return [attack_row("store: read-only at start", folder, options, stored, Path(scratch))]


def corrupt_at_start(options: argparse.Namespace) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="attack-store-") as scratch:
        folder = Path(scratch) / "transcripts"
        stored = store_some(folder, Path(scratch))
        corrupt_index(folder)
        return [attack_row("store: index corrupt at start", folder, options, stored, Path(scratch))]


def corrupt_while_running(options: argparse.Namespace) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="attack-store-") as scratch:
        folder = Path(scratch) / "transcripts"
        stored = store_some(folder, Path(scratch))
        first = attack_row("store: index corrupt while running", folder, options, stored, Path(scratch), fault=lambda: corrupt_index(folder))
        # Then as the operator would: restart, and see whether the store works again.
        again = attack_row("store: ... after a restart", folder, options, stored, Path(scratch))
        return [first, again]


ATTACKS = [
    Attack("store-healthy", "the same pastes and reads on a store with no fault (the reference)", healthy),
    Attack("store-full", "a full disk under the transcript store: pastes and reads of stored transcripts", full_disk),
    Attack("store-read-only", "the transcript folder read-only when the server starts", read_only),
    Attack("store-corrupt-start", "garbage over the index's header before the server starts", corrupt_at_start),
    Attack("store-corrupt-running", "garbage over the index's header while the site is pasted and read", corrupt_while_running),
]
