"""Cost attack: the home page's latency while the costliest requests run, and each worker's
peak memory, on gunicorn as `compaction-playground serve` runs it (webapp/gunicorn_config.py).

1. Pastes the worst transcripts the playground accepts (one per attacker, all distinct, so no
   cache helps): 1,000 messages of agent work (bench/transcript.py, tool results cut to fit the
   1,000,000-byte limit), and 333 rounds of one tool call named by 2,760 random letters each
   (bench/hostile_transcripts.py: the offline summarizer quoted every earlier name).
2. Idle: the home page and a bike-shop step, one request at a time.
3. Attack: N clients ask, in a loop, for the costliest pages of those transcripts (comparison
   panel, its CSV and JSON twins, summarize on the play page), each with a window of its own so
   every request is computed afresh; meanwhile a probe asks for the home page and a bike-shop
   step, one at a time, and the workers' peak memory (VmHWM) is read every second.

Prints each latency's median and p99, idle and under attack, with their ratio against the goal
(home p99 within 5x idle), what the attackers got (status counts), each worker's peak memory
and how many workers were replaced. Touches only 127.0.0.1; stops by itself after --duration.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.hostile_transcripts import long_tool_names  # noqa: E402
from bench.load import worker_pids  # noqa: E402
from bench.server import get, paste, percentile, serve, status_kib  # noqa: E402
from bench.transcript import generate_transcript  # noqa: E402

TRANSCRIPT_LIMIT = 1_000_000
PROBES = {"home": ("/", {}), "bike-shop step": ("/play/bike-shop?call=5", {"HX-Request": "true"})}
ATTACK_PAGES = ("/compare/{id}.csv", "/compare/{id}", "/compare/{id}.json", "/play/{id}?strategy=summarize")


def agent_transcript(seed: int) -> dict:
    """1,000 messages of agent work, tool results cut so the whole fits the paste limit."""
    transcript = generate_transcript(1000, seed=seed)
    for cut in (4000, 2000, 1200, 800, 400):
        for message in transcript["messages"]:
            if message["role"] == "tool":
                message["content"] = message["content"][:cut]
        if len(json.dumps(transcript)) < TRANSCRIPT_LIMIT:
            return transcript
    raise SystemExit("the agent transcript does not fit the paste limit")


def timed(port: int, path: str, headers: dict, timeout: float) -> tuple[float, int]:
    """Seconds and status of one request; status 0 when the connection failed or timed out."""
    start = time.monotonic()
    try:
        status = get(port, path, headers, timeout=timeout)[0]
    except OSError:
        status = 0
    return time.monotonic() - start, status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attackers", type=int, default=4, help="costly requests in flight at once (default 4)")
    parser.add_argument("--duration", type=int, default=60, help="seconds of attack (default 60)")
    parser.add_argument("--idle", type=int, default=60, help="idle probes of each page (default 60)")
    parser.add_argument("--workers", type=int, help="override the config file's worker count")
    parser.add_argument("--timeout", type=float, default=60, help="a request's timeout, seconds (default 60)")
    args = parser.parse_args(argv)

    log = Path(tempfile.mkdtemp(prefix="attack-")) / "gunicorn.log"
    with serve(workers=args.workers, production=True, error_log=str(log)) as (port, master):
        ids = []
        for number in range(args.attackers):
            seed = 100 + number
            ids.append(paste(port, json.dumps(agent_transcript(seed)) if number % 2 == 0 else long_tool_names(seed=seed)))
        for path, headers in PROBES.values():  # warm: the first answer loads templates and replays
            timed(port, path, headers, args.timeout)
        idle = {name: [] for name in PROBES}
        for _ in range(args.idle):  # paced as the probe under attack is
            for name, (path, headers) in PROBES.items():
                seconds, status = timed(port, path, headers, args.timeout)
                if status == 200:
                    idle[name].append(seconds)
            time.sleep(0.1)

        stop = threading.Event()
        busy = {name: [] for name in PROBES}
        probe_failures = Counter()
        attack_statuses = Counter()
        attack_seconds: list[float] = []
        peaks: dict[int, int] = {}

        def attacker(index: int) -> None:
            rng = random.Random(index)
            window = 2000 + index
            while not stop.is_set():
                window += args.attackers  # a setting no earlier request used: nothing is cached
                page = rng.choice(ATTACK_PAGES).format(id=ids[index % len(ids)])
                seconds, status = timed(port, f"{page}{'&' if '?' in page else '?'}window={window}", {}, args.timeout)
                attack_statuses[status] += 1
                attack_seconds.append(seconds)

        def probe() -> None:
            while not stop.is_set():
                for name, (path, headers) in PROBES.items():
                    seconds, status = timed(port, path, headers, args.timeout)
                    busy[name].append(seconds)
                    if status != 200:
                        probe_failures[(name, status)] += 1
                stop.wait(0.1)

        def memory() -> None:
            while not stop.wait(1.0):
                for pid in worker_pids(master.pid):
                    peaks[pid] = max(peaks.get(pid, 0), status_kib(pid, "VmHWM"))

        threads = [threading.Thread(target=attacker, args=(i,)) for i in range(args.attackers)]
        threads += [threading.Thread(target=probe), threading.Thread(target=memory)]
        for thread in threads:
            thread.start()
        stop.wait(args.duration)
        stop.set()
        for thread in threads:
            thread.join(args.timeout + 10)
        workers_at_end = set(worker_pids(master.pid))

    print(f"Cost attack: {args.attackers} clients for {args.duration} s on gunicorn (webapp/gunicorn_config.py"
          f"{f', {args.workers} workers' if args.workers else ''}), 127.0.0.1; pages {', '.join(ATTACK_PAGES)}")
    print(f"{'':18}{'idle median':>12}{'p99':>9}{'attack median':>15}{'p99':>9}{'p99/idle p99':>14}")
    met = True
    for name in PROBES:
        ratio = percentile(busy[name], 0.99) / percentile(idle[name], 0.99)
        print(f"{name:18}{percentile(idle[name], 0.5) * 1000:10.0f}ms{percentile(idle[name], 0.99) * 1000:7.0f}ms"
              f"{percentile(busy[name], 0.5) * 1000:13.0f}ms{percentile(busy[name], 0.99) * 1000:7.0f}ms{ratio:13.1f}x"
              f"   ({len(busy[name])} probes)")
        met &= ratio <= 5 and not any(key[0] == name for key in probe_failures)
    if probe_failures:
        print("probe failures (page, status 0 = no answer):", dict(probe_failures))
    print(f"attack requests: {sum(attack_statuses.values())}, statuses {dict(sorted(attack_statuses.items()))} "
          f"(0 = no answer in {args.timeout:g} s); median {percentile(attack_seconds, 0.5):.1f} s, max {max(attack_seconds, default=0):.1f} s")
    print("workers' peak memory (VmHWM): " + ", ".join(f"{kib / 1024:.0f} MiB" for kib in peaks.values())
          + f"; {len(set(peaks) - workers_at_end)} worker(s) replaced during the run")
    print(f"gunicorn killed {log.read_text().count('WORKER TIMEOUT')} worker(s) for running past its timeout (log: {log})")
    print(f"home and bike-shop p99 within 5x idle, no failed probe: {'MET' if met else 'MISSED'}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
