"""Cost attackers: clients asking, in a loop, for the costliest pages of the worst transcripts
the playground accepts, on gunicorn as `compaction-playground serve` runs it.

Each attacker pastes its own transcript (all distinct, so no cache helps): 1,000 messages of
agent work (bench/transcript.py, tool results cut to fit the paste limit), or 333 rounds of a
tool named by 2,760 random letters (bench/hostile_transcripts.py). Then it asks for the
comparison panel, its CSV and JSON twins, or summarize on the play page, each time at a window
no request used before, so every answer is computed afresh. One phase per count of
`--attackers` (2,4,8: one row each).

Then the memory run (what bench/worst_case.py did): the comparison's CSV of `--distinct`
distinct transcripts of about 543 KB (290 messages), one after the other, and each worker's
peak resident memory, which the byte-bounded caches must keep bounded.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import tempfile
import threading
from collections import Counter
from pathlib import Path

from bench.attacks import Attack, Row
from bench.attacks.probe import timed, under_load
from bench.hostile_transcripts import long_tool_names
from bench.load import worker_pids
from bench.server import paste, serve, status_kib
from bench.transcript import generate_transcript

TRANSCRIPT_LIMIT = 1_000_000
COSTLY_PAGES = ("/compare/{id}.csv", "/compare/{id}", "/compare/{id}.json", "/play/{id}?strategy=summarize")


def agent_transcript(seed: int) -> dict:
    """1,000 messages of agent work (999 and the system prompt), tool results cut to fit the paste limit."""
    transcript = generate_transcript(999, seed=seed)
    for cut in (4000, 2000, 1200, 800, 400):
        for message in transcript["messages"]:
            if message["role"] == "tool":
                message["content"] = message["content"][:cut]
        if len(json.dumps(transcript)) < TRANSCRIPT_LIMIT:
            return transcript
    raise SystemExit("the agent transcript does not fit the paste limit")


class CostlyRequests:
    """The load of `count` attackers, each on a transcript of its own, at windows no earlier
    request used (so nothing is cached)."""

    def __init__(self, port: int, count: int, timeout: float):
        self.port, self.timeout = port, timeout
        self.ids = iter([paste(port, json.dumps(agent_transcript(seed)) if seed % 2 == 0 else long_tool_names(seed=seed))
                         for seed in range(100, 100 + count)])
        self.windows = itertools.count(2000 + 10_000 * count)
        self.lock = threading.Lock()
        self.answers: Counter = Counter()  # every attacker's statuses, for the row's note

    def __call__(self, stop: threading.Event) -> Counter:
        with self.lock:
            scenario_id = next(self.ids)
        rng = random.Random(scenario_id)
        statuses: Counter = Counter()
        while not stop.is_set():
            page = rng.choice(COSTLY_PAGES).format(id=scenario_id)
            with self.lock:
                window = next(self.windows)
            statuses[timed(self.port, f"{page}{'&' if '?' in page else '?'}window={window}", timeout=self.timeout)[1]] += 1
        with self.lock:
            self.answers.update(statuses)
        return statuses

    def note(self) -> str:
        return "attackers got " + ", ".join(f"{count} x {status}" for status, count in sorted(self.answers.items()))


def memory_run(port: int, master: int, count: int, timeout: float) -> Row:
    """The CSV of `count` distinct transcripts of about 543 KB, one after the other, while a
    sampler reads each worker's resident memory; the row's note says the peaks."""
    peaks: dict[int, int] = {}

    def sample(stop: threading.Event) -> Counter:
        while not stop.wait(0.5):
            for pid in worker_pids(master):
                peaks[pid] = max(peaks.get(pid, 0), status_kib(pid, "VmRSS"))
        return Counter()

    texts = iter(json.dumps(generate_transcript(290, seed=100 + seed)) for seed in range(count))

    def csv_of_each(stop: threading.Event) -> Counter:
        statuses: Counter = Counter()
        for text in texts:
            if stop.is_set():
                break
            statuses[timed(port, f"/compare/{paste(port, text)}.csv", timeout=timeout)[1]] += 1
        stop.wait()
        return statuses

    sampler = threading.Thread(target=sample, args=(done := threading.Event(),), daemon=True)
    sampler.start()
    row = under_load(f"memory: {count} distinct 543 KB CSVs", port, csv_of_each, duration=count * 3.0, idle=10, timeout=timeout,
                     note=lambda: "peak MiB per worker: " + " ".join(f"{kib / 1024:.0f}" for kib in sorted(peaks.values(), reverse=True)))
    done.set()
    return row


def attackers(options: argparse.Namespace) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="attack-cost-") as folder, serve(
        workers=None, production=True, config={"TRANSCRIPT_DIR": str(Path(folder) / "transcripts")}, error_log=str(Path(folder) / "gunicorn.log")
    ) as (port, master):
        rows = [under_load(f"{count} cost attackers", port, load, duration=options.duration, idle=options.idle, threads=count,
                           timeout=options.timeout, note=load.note)
                for count, load in ((count, CostlyRequests(port, count, options.timeout)) for count in options.attackers)]
        return rows + ([memory_run(port, master.pid, options.distinct, options.timeout)] if options.distinct else [])


ATTACKS = [Attack("cost", "clients asking for the costliest pages of distinct worst-case transcripts", attackers)]
