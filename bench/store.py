"""Pasted transcripts, the folder against PostgreSQL: pastes and reads per second on this machine.

Two measures, each on the folder store (the default, the baseline) and on PostgreSQL, in the
same run, with the ratio of each row to the folder's:

1. The store alone, in this process, one thread: saves of distinct transcripts (23 KB, twelve
   messages of bench/transcript.py; a save parses them first, as a paste does, so the parse
   alone is shown as the floor), then reads of their bytes (a download), then loads of the
   parsed transcripts a worker holds (each checked to be still stored, as every step of a play
   page does).
2. As served: gunicorn with the settings of `compaction-playground serve` (two workers), one
   host on the folder, one host on PostgreSQL, and two hosts (two servers of two workers each,
   each with an empty folder of its own) sharing one PostgreSQL. `--clients` threads paste for
   `--duration` seconds, then read for as long (a stored transcript's file or its play page,
   among 16 of them, so that the replays stay cached and the store is what is measured).
   Requests alternate between the hosts.

PostgreSQL is a throwaway cluster (tests/servers.py: initdb and pg_ctl), durable as in
production (fsync on, as the folder's SQLite index syncs its commits), or the one
`--postgres URL` names. Only 127.0.0.1 is contacted; every
loop stops by itself.

    .venv/bin/python bench/store.py [--duration 10] [--clients 4] [--saves 300] [--postgres URL]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import random
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.server import get, paste, percentile, serve  # noqa: E402
from bench.transcript import generate_transcript  # noqa: E402
from tests.servers import PostgresServer, empty_schema  # noqa: E402
from webapp.core.inputs.store import StoredTranscripts, TranscriptStore  # noqa: E402
from webapp.core.inputs.store_postgres import PostgresStore  # noqa: E402
from webapp.core.inputs.transcripts import transcript_id  # noqa: E402

READ_SET = 16
LIMITS = {"max_bytes": 20_000_000, "max_total_bytes": 1 << 30}


def transcript(seed: int) -> str:
    return json.dumps(generate_transcript(12, seed=seed), ensure_ascii=False)


def rate(count: int, seconds: float) -> float:
    return count / seconds if seconds else float("inf")


# --- The store alone ---------------------------------------------------------------------------


def per_second(work: Callable[[int], object], count: int) -> float:
    started = time.perf_counter()
    for n in range(count):
        work(n)
    return rate(count, time.perf_counter() - started)


def store_alone(store: StoredTranscripts, bodies: list[bytes]) -> dict[str, float]:
    names = [transcript_id(body) for body in bodies]  # named without parsing them first
    held = names[-READ_SET:]  # still parsed in this process's memory after the saves
    figures = {"save": per_second(lambda n: store.save(bodies[n], f"client-{n % 8}"), len(bodies))}
    figures["read bytes"] = per_second(lambda n: store.read_bytes(names[n]), len(names))
    figures["load (held)"] = per_second(lambda n: store.load(held[n % READ_SET]), len(names))
    return figures


def store_rows(url: str, count: int) -> list[tuple[str, dict[str, float]]]:
    """Each row parses transcripts of its own, never parsed before (parsing a text again is
    faster: its token counts are cached), after a warm-up on others."""
    warm, floor, folder_bodies, postgres_bodies = ([transcript(seed).encode() for seed in range(start, start + count)]
                                                   for start in range(0, 4 * count, count))
    with tempfile.TemporaryDirectory(prefix="bench-store-") as folder:
        folder_store = TranscriptStore(Path(folder), **LIMITS)
        per_second(lambda n: folder_store.parse(warm[n]), min(count, 30))
        rows = [("parse only (the floor)", {"save": per_second(lambda n: folder_store.parse(floor[n]), count)}),
                ("folder + SQLite", store_alone(folder_store, folder_bodies))]
    with empty_schema(url) as schema:
        postgres = PostgresStore(schema, **LIMITS)
        try:
            rows.append(("PostgreSQL", store_alone(postgres, postgres_bodies)))
        finally:
            postgres.close()
    return rows


# --- As served ---------------------------------------------------------------------------------


class Clients:
    """`count` threads that ask the hosts (in turn) for `duration` seconds; what they saw."""

    def __init__(self, ports: list[int], count: int, duration: float, stored: list[str]):
        self.ports, self.count, self.duration, self.stored = ports, count, duration, stored
        self.seeds = itertools.count(1_000_000)
        self.lock = threading.Lock()

    def run(self, ask: Callable[[int, random.Random], int]) -> tuple[int, list[float], Counter]:
        latencies: list[float] = []
        statuses: Counter = Counter()
        deadline = time.monotonic() + self.duration

        def client(number: int) -> None:
            rng = random.Random(number)
            turn = number
            while time.monotonic() < deadline:
                started = time.monotonic()
                status = ask(self.ports[turn % len(self.ports)], rng)
                turn += 1
                with self.lock:
                    latencies.append(time.monotonic() - started)
                    statuses[status] += 1

        threads = [threading.Thread(target=client, args=(n,)) for n in range(self.count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return len(latencies), latencies, statuses

    def paste(self, port: int, rng: random.Random) -> int:
        with self.lock:
            seed = next(self.seeds)
        body = urllib.parse.urlencode({"transcript": transcript(seed)}).encode()
        return get(port, "/transcripts", {"Content-Type": "application/x-www-form-urlencoded"}, "POST", body)[0]

    def read(self, port: int, rng: random.Random) -> int:
        name = rng.choice(self.stored)
        return get(port, rng.choice((f"/play/{name}", f"/transcripts/{name}.json")))[0]


def served_row(ports: list[int], options: argparse.Namespace) -> dict[str, str]:
    stored = [paste(ports[0], transcript(seed)) for seed in range(READ_SET)]
    for name in stored:  # every worker parses and replays them once before the clock starts
        for port in ports:
            for _ in range(4):
                get(port, f"/play/{name}")
    clients = Clients(ports, options.clients, options.duration, stored)
    pasted, paste_seconds, paste_statuses = clients.run(clients.paste)
    read, read_seconds, read_statuses = clients.run(clients.read)
    return {
        "pastes/s": f"{rate(pasted, options.duration):.1f}",
        "paste p50/p99": f"{percentile(paste_seconds, 0.5) * 1000:.0f}/{percentile(paste_seconds, 0.99) * 1000:.0f} ms",
        "reads/s": f"{rate(read, options.duration):.1f}",
        "read p50/p99": f"{percentile(read_seconds, 0.5) * 1000:.0f}/{percentile(read_seconds, 0.99) * 1000:.0f} ms",
        "answers": ", ".join(f"{status}×{count}" for status, count in sorted((paste_statuses + read_statuses).items())),
    }


@contextlib.contextmanager
def hosts(configs: list[dict], logs: Path) -> Iterator[list[int]]:
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(serve(workers=None, production=True, config=config, error_log=str(logs / f"host-{n}.log")))[0]
               for n, config in enumerate(configs)]


def served_rows(url: str, options: argparse.Namespace) -> list[tuple[str, dict[str, str]]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-store-") as folder:
        base = Path(folder)
        with hosts([{"TRANSCRIPT_DIR": str(base / "folder")}], base) as ports:
            rows.append(("one host, folder + SQLite", served_row(ports, options)))
        with empty_schema(url) as schema, hosts([{"TRANSCRIPT_DIR": str(base / "pg-1"), "TRANSCRIPT_STORE": schema}], base) as ports:
            rows.append(("one host, PostgreSQL", served_row(ports, options)))
        with empty_schema(url) as schema:
            configs = [{"TRANSCRIPT_DIR": str(base / f"pg-2-{n}"), "TRANSCRIPT_STORE": schema} for n in range(2)]
            with hosts(configs, base) as ports:
                rows.append(("two hosts, one PostgreSQL", served_row(ports, options)))
    return rows


# --- The report --------------------------------------------------------------------------------


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(row[n])) for row in [headers, *rows]) for n in range(len(headers))]
    return "\n".join("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [headers, *rows])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds of pastes, then of reads, per row")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--saves", type=int, default=300, help="transcripts saved by the store alone")
    parser.add_argument("--postgres", help="a PostgreSQL URL (default: a throwaway cluster)")
    options = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        url = options.postgres
        if not url:
            server = PostgresServer(durable=True).start()
            stack.callback(server.remove)
            url = server.url
        alone = store_rows(url, options.saves)
        served = served_rows(url, options)
    kinds = ["save", "read bytes", "load (held)"]
    folder = alone[1][1]
    print("The store alone, one thread (operations per second; × the folder's)")
    print(table(["store", *kinds], [
        [label, *(f"{figures[kind]:,.0f}" + (f" ({figures[kind] / folder[kind]:.2f}×)" if kind in figures and label != "parse only (the floor)" else "") if kind in figures else "" for kind in kinds)]
        for label, figures in alone
    ]))
    print()
    print(f"As served: gunicorn, 2 workers a host, {options.clients} clients, {options.duration:.0f} s of pastes then of reads")
    columns = ["pastes/s", "paste p50/p99", "reads/s", "read p50/p99", "answers"]
    baseline = served[0][1]
    print(table(["hosts", *columns], [
        [label, *(figures[column] + (f" ({float(figures[column]) / float(baseline[column]):.2f}×)" if column.endswith("/s") else "") for column in columns)]
        for label, figures in served
    ]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
