"""Worker recycling under load, against `compaction-playground serve` as the README runs it.

- recycle-balance: kept-alive clients step through the lessons as fast as they can; a third of
  the way in, one worker is replaced (SIGTERM, as gunicorn's own recycling does it between
  requests). Throughput and p99 before and after the replacement say whether the clients
  spread over both workers again or stay on the survivor while the new worker idles.
- static-flood: clients asking for a static file in a loop, the cheapest request there is;
  how many workers does the flood replace (with recycling by count, each replacement starts
  with empty caches)?
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import os
import re
import signal
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from bench.attacks import Attack, Row
from bench.attacks.probe import under_load
from bench.attacks.served import readme_server
from bench.server import get, percentile

CLIENTS = 8
LESSON_STEPS = [f"/play/{lesson}?call={call}" for lesson, calls in (("long-haul", 64), ("bike-shop", 6), ("coding-agent", 20))
                for call in range(1, calls + 1)]
BOOTED = re.compile(rb"Booting worker with pid")
SETTLE = 15  # seconds after the recycle: the new worker started and warmed, the connections spread again


class KeptAlive:
    """CLIENTS clients on kept-alive connections, each asking for the next lesson step as soon as
    the last answered; records when each answer came and how long it took."""

    def __init__(self, port: int, paths: list[str]):
        self.port, self.paths = port, paths
        self.answers: list[tuple[float, float]] = []  # (when it finished, seconds)
        self.lock = threading.Lock()

    def __call__(self, stop: threading.Event) -> Counter:
        statuses: Counter = Counter()
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        for path in itertools.cycle(self.paths):
            if stop.is_set():
                break
            start = time.monotonic()
            try:
                connection.request("GET", path)
                response = connection.getresponse()
                response.read()
                status = response.status
                if response.getheader("Connection", "").lower() == "close":
                    connection.close()
            except (OSError, http.client.HTTPException):
                connection.close()
                status = 0
            end = time.monotonic()
            statuses[status] += 1
            with self.lock:
                self.answers.append((end, end - start))
        connection.close()
        return statuses

    def window(self, start: float, end: float) -> str:
        seconds = [took for when, took in self.answers if start <= when < end]
        if not seconds:
            return "no answers"
        return f"{len(seconds) / (end - start):.0f} req/s, p99 {percentile(seconds, 0.99):.2f} s"


def workers_of(master: int) -> list[int]:
    """The pids of a gunicorn master's workers, from /proc."""
    children = Path(f"/proc/{master}/task/{master}/children")
    return [int(pid) for pid in children.read_text().split()] if children.exists() else []


def cpu_seconds(pid: int) -> float:
    """The CPU time a process used so far (user + system, from /proc); 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def balance(options: argparse.Namespace) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="attack-recycling-") as folder, readme_server(Path(folder) / "serve.log") as (port, process):
        load = KeptAlive(port, LESSON_STEPS)
        marks: dict[str, float] = {}
        cpu: dict[int, float] = {}  # each worker's CPU seconds once the new one settled

        def recycle_one():
            marks["start"] = time.monotonic()
            time.sleep(options.duration / 3)
            marks["recycle"] = time.monotonic()
            # `compaction-playground serve` replaced itself with gunicorn: its pid is the master's.
            os.kill(workers_of(process.pid)[0], signal.SIGTERM)
            time.sleep(SETTLE)
            marks["settled"] = time.monotonic()
            cpu.update({pid: cpu_seconds(pid) for pid in workers_of(process.pid)})

        first = threading.Lock()  # the first client to start starts the clock, once

        def started_load(stop: threading.Event) -> Counter:
            if first.acquire(blocking=False):
                threading.Thread(target=recycle_one, daemon=True).start()
            return load(stop)

        def note() -> str:
            end = time.monotonic()
            if any(not Path(f"/proc/{pid}").exists() for pid in cpu):
                shares = "unknown, a worker was replaced again meanwhile"
            else:
                used = [cpu_seconds(pid) - start for pid, start in cpu.items()]
                shares = " / ".join(f"{part / sum(used):.0%}" for part in used) if sum(used) else "none"
            return (f"before the recycle {load.window(marks['start'], marks['recycle'])}; "
                    f"after it {load.window(marks['settled'], end - 1)}; the two workers' shares of CPU after it: {shares}")

        return [under_load(f"{CLIENTS} kept-alive clients, 1 recycle", port, started_load, duration=options.duration,
                           idle=options.idle, threads=CLIENTS, timeout=options.timeout, note=note)]


def static_flood(options: argparse.Namespace) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="attack-static-") as folder, readme_server(Path(folder) / "serve.log") as (port, _):
        static = re.search(rb'(/static/app\.[0-9a-f]+\.css)', get(port, "/")[1]).group(1).decode()
        load = KeptAlive(port, [static])
        log = Path(folder) / "serve.log"
        booted_before = len(BOOTED.findall(log.read_bytes()))

        def note() -> str:
            replaced = len(BOOTED.findall(log.read_bytes())) - booted_before
            return f"{len(load.answers) / options.duration:.0f} static req/s; {replaced} worker(s) replaced"

        return [under_load(f"{CLIENTS} clients flooding {static.split('.')[0]}.css", port, load, duration=options.duration,
                           idle=options.idle, threads=CLIENTS, timeout=options.timeout, note=note)]


ATTACKS = [
    Attack("recycle-balance", "kept-alive clients stepping through lessons while one worker is replaced", balance),
    Attack("static-flood", "clients asking for a static file in a loop: how many workers it replaces", static_flood),
]
