"""Worst-case mix (issue 15): the home page's latency while N of the costliest requests run,
and each gunicorn worker's peak memory. 127.0.0.1 only; bounded in time and in count.

The costly request is the comparison's CSV twin on a pasted transcript of 333 requests, each
calling a tool whose name is 2,760 random letters (bench/hostile_transcripts.py). Each of the
N attackers pastes its own transcript, then asks for its CSV over and over, each time at a
new window, so no cache answers for it. Meanwhile one prober asks for the home page, one
request at a time, and a sampler reads each worker's resident memory every half second.

    .venv/bin/python bench/worst_case.py                 # N = 2, 4, 8; 30 s each
    .venv/bin/python bench/worst_case.py --n 2 --seconds 20
    .venv/bin/python bench/worst_case.py --production    # with the threads and limits of `serve`

Then, with --distinct K (default 30), memory: the comparison's CSV of K distinct transcripts of
about 543 KB each (bench/transcript.py), one after the other, and each worker's peak memory.

Goal (issue 14): the home page's p99 within 5x its idle p99, and memory bounded.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.hostile_transcripts import long_tool_names  # noqa: E402
from bench.load import worker_pids  # noqa: E402
from bench.server import paste, percentile, serve, status_kib  # noqa: E402
from bench.transcript import generate_transcript  # noqa: E402

REQUEST_TIMEOUT = 120  # past gunicorn's worker timeout: a killed worker shows as a failure


def timed_request(port: int, method: str, path: str, body: bytes | None = None, headers: dict | None = None) -> tuple[int, float, bytes, dict]:
    """(status, seconds, body, headers); status 0 when the connection failed or timed out."""
    start = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        data = response.read()
        return response.status, time.monotonic() - start, data, dict(response.getheaders())
    except OSError:
        return 0, time.monotonic() - start, b"", {}
    finally:
        connection.close()


class Phase:
    """N attackers, one home-page prober and a memory sampler, for `seconds`."""

    def __init__(self, port: int, master: int, ids: list[str], seconds: float, first_window: int, log: Path):
        self.port, self.master, self.ids, self.seconds, self.log = port, master, ids, seconds, log
        self.window = first_window
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.home: list[float] = []
        self.home_failed = 0
        self.attacks: list[tuple[int, float]] = []
        self.peak: dict[int, int] = {}
        self.worker_timeouts = 0

    def next_window(self) -> int:
        with self.lock:
            self.window += 1
            return self.window

    def attacker(self, scenario_id: str) -> None:
        while not self.stop.is_set():
            status, seconds, _, _ = timed_request(self.port, "GET", f"/compare/{scenario_id}.csv?window={self.next_window()}")
            with self.lock:
                self.attacks.append((status, seconds))

    def prober(self) -> None:
        while not self.stop.is_set():
            status, seconds, _, _ = timed_request(self.port, "GET", "/")
            self.home.append(seconds)
            self.home_failed += status != 200
            time.sleep(0.05)

    def sampler(self) -> None:
        while not self.stop.wait(0.5):
            for pid in worker_pids(self.master):
                self.peak[pid] = max(self.peak.get(pid, 0), status_kib(pid, "VmRSS"))

    def run(self) -> Phase:
        timeouts_before = self.log.read_text().count("WORKER TIMEOUT")
        threads = [threading.Thread(target=self.attacker, args=(scenario_id,), daemon=True) for scenario_id in self.ids]
        threads += [threading.Thread(target=self.prober, daemon=True), threading.Thread(target=self.sampler, daemon=True)]
        for thread in threads:
            thread.start()
        time.sleep(self.seconds)
        self.stop.set()
        for thread in threads:
            thread.join(REQUEST_TIMEOUT + 10)  # an attack in flight finishes (or times out) first
        self.worker_timeouts = self.log.read_text().count("WORKER TIMEOUT") - timeouts_before
        return self


def memory_run(port: int, master: int, count: int) -> None:
    """The CSV of `count` distinct transcripts of about 543 KB (290 messages), one after the other."""
    sampler = Phase(port, master, [], 0, 0, Path("/dev/null"))
    thread = threading.Thread(target=sampler.sampler, daemon=True)
    thread.start()
    statuses = []
    start = time.monotonic()
    for seed in range(count):
        text = json.dumps(generate_transcript(290, seed=100 + seed))
        scenario_id = paste(port, text)
        statuses.append(timed_request(port, "GET", f"/compare/{scenario_id}.csv")[0])
    sampler.stop.set()
    thread.join()
    peaks = " ".join(f"{kib / 1024:.0f}" for kib in sorted(sampler.peak.values(), reverse=True)[:4])
    print(f"memory: {count} distinct transcripts of ~{len(text.encode()) // 1000} KB, their CSV one after the other in "
          f"{time.monotonic() - start:.0f} s; {statuses.count(200)} answered 200; peak MiB per worker: {peaks}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, nargs="*", default=[2, 4, 8], help="costly requests at once, one phase each (none: only the memory run)")
    parser.add_argument("--seconds", type=float, default=30, help="length of each phase")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--production", action="store_true", help="serve with webapp/gunicorn_config.py (threads) instead of plain sync workers")
    parser.add_argument("--distinct", type=int, default=30, help="distinct 543 KB transcripts for the memory run (0: none)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="worst-case-") as folder:
        config = {"TRANSCRIPT_DIR": str(Path(folder) / "transcripts")}
        log = Path(folder) / "gunicorn.log"
        with serve(workers=args.workers, config=config, error_log=str(log), production=args.production) as (port, master):
            ids = [paste(port, long_tool_names(seed=seed)) for seed in range(max(args.n, default=0))]
            idle = Phase(port, master.pid, [], min(args.seconds, 10), 0, log).run()
            idle_p99 = percentile(idle.home, 0.99)
            kind = "workers as webapp/gunicorn_config.py sets them" if args.production else "sync workers"
            print(f"gunicorn, {args.workers} {kind}, 127.0.0.1:{port}; costly request: /compare/<id>.csv on a "
                  f"333-request transcript with 2,760-letter tool names; {args.seconds:g} s per phase.")
            print(f"idle: home page p50 {statistics.median(idle.home) * 1000:.0f} ms, p99 {idle_p99 * 1000:.0f} ms "
                  f"({len(idle.home)} requests); workers {', '.join(f'{kib / 1024:.0f}' for kib in idle.peak.values())} MiB")
            print(f"{'N':>3} {'home p50':>10} {'home p99':>10} {'p99/idle':>9} {'home fails':>10} "
                  f"{'costly done':>11} {'costly ok':>9} {'costly p50':>10} {'killed':>6} {'peak MiB per worker':>20}")
            window = 4000
            for n in args.n:
                phase = Phase(port, master.pid, ids[:n], args.seconds, window, log).run()
                window = phase.window
                ok = [seconds for status, seconds in phase.attacks if status == 200]
                costly_p50 = f"{statistics.median(ok):.1f} s" if ok else "-"
                p99 = percentile(phase.home, 0.99)
                peaks = " ".join(f"{kib / 1024:.0f}" for kib in sorted(phase.peak.values(), reverse=True)[:4])
                print(f"{n:>3} {statistics.median(phase.home) * 1000:>8.0f}ms {p99 * 1000:>8.0f}ms {p99 / idle_p99:>8.1f}x "
                      f"{phase.home_failed:>10} {len(phase.attacks):>11} {len(ok):>9} {costly_p50:>10} {phase.worker_timeouts:>6} {peaks:>20}")
            if args.distinct:
                memory_run(port, master.pid, args.distinct)
        print("killed: workers gunicorn killed for passing its timeout. Peak MiB: the largest resident memory "
              "of the (at most 4 largest) workers seen in the phase.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
