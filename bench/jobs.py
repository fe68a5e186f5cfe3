"""Long work as jobs (issue 34): how long a long chat's sweep page takes to first answer, before
(computed in the request) and after (a job and its progress bar); and the home page's p99 under
load, one host against two hosts sharing one Redis.

1. The sweep of a pasted 1,000-message session (bench/transcript.py `pasteable_transcript`: the
   longest chat a paste may hold) at a 128,000-token window, its default range (10 lines, 3 KEEP
   values), on gunicorn with the settings of `compaction-playground serve` (two workers), a new
   chat each round so that nothing is cached:
   - before: the app computes it in the request, as before jobs (JOB_MESSAGES above 1,000), with
     a budget large enough for it to end (REQUEST_CPU_SECONDS, REQUEST_WALL_SECONDS);
   - after: the defaults: the page answers with a progress bar; then the time until its result
     (polled every second, as the bar does), and the same sweep asked again.
   The ratio is of the first answers' medians (before ÷ after).
2. The home page's p99 while `--clients` threads ask for it for `--duration` seconds and one
   long sweep computes: one host (LIMITS_STORE unset), then two hosts (two servers of two
   workers, each with a folder of its own) sharing one Redis (LIMITS_STORE) and one PostgreSQL
   (TRANSCRIPT_STORE), requests alternating between them. On one machine the two hosts share
   its cores: the figure is what Redis and the second host cost, not what a second machine gives.

Only 127.0.0.1 is contacted (Redis and PostgreSQL are throwaway servers, tests/servers.py);
every loop stops by itself.

    .venv/bin/python bench/jobs.py [--rounds 3] [--duration 15] [--clients 4]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.server import get, paste, percentile, serve  # noqa: E402
from bench.transcript import pasteable_transcript  # noqa: E402
from tests.servers import PostgresServer, RedisServer, empty_schema  # noqa: E402

SWEEP_QUERY = "?window=128000"
# One client asks every sweep: it does not rest between them (CLIENT_REST_FACTOR), as it would.
AFTER = {"CLIENT_REST_FACTOR": 0.0}
BEFORE = {**AFTER, "JOB_MESSAGES": 10**6, "REQUEST_CPU_SECONDS": 600.0, "REQUEST_WALL_SECONDS": 600.0}
POLL = {"HX-Request": "true", "HX-Trigger": "job-progress", "HX-Target": "sweep-panel"}


def timed(port: int, path: str, headers: dict | None = None) -> tuple[float, int, bytes]:
    started = time.perf_counter()
    status, body, _ = get(port, path, headers, timeout=900)
    return time.perf_counter() - started, status, body


def sweep_path(port: int, seed: int) -> str:
    name = paste(port, json.dumps(pasteable_transcript(1000, seed=seed), ensure_ascii=False))
    return f"/sweep/{name}{SWEEP_QUERY}"


def first_answers(config: dict, rounds: int, folder: Path, seed: int) -> dict[str, list[float]]:
    """Per round: the first answer's seconds, and with jobs, until the result and asked again."""
    times: dict[str, list[float]] = {"first": [], "result": [], "again": []}
    with serve(workers=None, production=True, config={"TRANSCRIPT_DIR": str(folder), **config}, error_log=str(folder / "gunicorn.log")) as (port, _):
        for round_number in range(rounds):
            path = sweep_path(port, seed + round_number)
            seconds, status, body = timed(port, path)
            if status != 200:
                raise SystemExit(f"GET {path}: {status} {body[:300]!r}")
            times["first"].append(seconds)
            if b'id="job-progress"' in body:
                started = time.perf_counter() - seconds
                while b'id="job-progress"' in body:
                    time.sleep(1)
                    _, status, body = timed(port, path, {**POLL, "HX-Current-URL": f"http://127.0.0.1:{port}{path}"})
                times["result"].append(time.perf_counter() - started)
            times["again"].append(timed(port, path)[0])
    return times


def home_under_load(ports: list[int], clients: int, duration: float, seed: int) -> tuple[list[float], Counter]:
    """The home page's seconds while `clients` threads ask for it, alternating between the
    hosts, and one long sweep computes (started on the first host, watched from the last)."""
    path = sweep_path(ports[0], seed)
    get(ports[0], path)  # the job starts
    seconds: list[float] = []
    statuses: Counter = Counter()
    stop = time.monotonic() + duration
    lock = threading.Lock()

    def ask(number: int) -> None:
        turn = number
        while time.monotonic() < stop:
            port = ports[turn % len(ports)]
            took, status, _ = timed(port, "/")
            with lock:
                seconds.append(took)
                statuses[status] += 1
            turn += 1

    threads = [threading.Thread(target=ask, args=(number,)) for number in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    statuses[f"sweep {get(ports[-1], path)[0]}"] += 1
    return seconds, statuses


def load_rows(options: argparse.Namespace, folder: Path) -> list[tuple[str, list[float], Counter]]:
    rows = []
    with serve(workers=None, production=True, config={**AFTER, "TRANSCRIPT_DIR": str(folder / "one")}, error_log=str(folder / "one.log")) as (port, _):
        rows.append(("one host", *home_under_load([port], options.clients, options.duration, 900)))
    with contextlib.ExitStack() as stack:
        redis = RedisServer().start()
        stack.callback(redis.remove)
        postgres = PostgresServer(durable=True).start()
        stack.callback(postgres.remove)
        schema = stack.enter_context(empty_schema(postgres.url))
        ports = [
            stack.enter_context(serve(workers=None, production=True, config={
                **AFTER, "TRANSCRIPT_DIR": str(folder / f"host-{n}"), "LIMITS_STORE": redis.url, "TRANSCRIPT_STORE": schema,
            }, error_log=str(folder / f"host-{n}.log")))[0]
            for n in range(2)
        ]
        rows.append(("two hosts, one Redis", *home_under_load(ports, options.clients, options.duration, 901)))
    return rows


def ms(values: list[float]) -> str:
    """The median, and each round's in parentheses."""
    if not values:
        return "-"
    return f"{statistics.median(values) * 1000:,.0f} ms ({', '.join(f'{value * 1000:,.0f}' for value in values)})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="sweeps of new chats, before and after")
    parser.add_argument("--duration", type=float, default=15.0, help="seconds of home-page load per row")
    parser.add_argument("--clients", type=int, default=4, help="threads asking for the home page")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-jobs-", ignore_cleanup_errors=True) as name:
        folder = Path(name)
        (folder / "before").mkdir()
        (folder / "after").mkdir()
        before = first_answers(BEFORE, options.rounds, folder / "before", 100)
        after = first_answers(AFTER, options.rounds, folder / "after", 200)
        rows = load_rows(options, folder)
    first_before, first_after = statistics.median(before["first"]), statistics.median(after["first"])
    print("1. A pasted 1,000-message session's sweep page (window 128,000, 10 lines x 3 KEEP), median of", options.rounds, "new chats")
    print(f"   before (in the request): first answer {ms(before['first'])} (the result), asked again {ms(before['again'])}")
    print(f"   after (a job):           first answer {ms(after['first'])} (a progress bar), result after {ms(after['result'])}, asked again {ms(after['again'])}")
    print(f"   first answer, before / after: {first_before / first_after:.1f}x; goal: under 500 ms: {'MET' if first_after < 0.5 else 'MISSED'}")
    print(f"2. The home page under load: {options.clients} threads for {options.duration:.0f} s, one long sweep computing")
    baseline = percentile(rows[0][1], 0.99)
    for label, seconds, statuses in rows:
        p99 = percentile(seconds, 0.99)
        print(f"   {label:22} {len(seconds) / options.duration:6.1f}/s  p50 {percentile(seconds, 0.5) * 1000:6.1f} ms  p99 {p99 * 1000:6.1f} ms"
              f" ({p99 / baseline:.2f}x)  answers: {', '.join(f'{status}x{count}' for status, count in sorted(statuses.items(), key=str))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
