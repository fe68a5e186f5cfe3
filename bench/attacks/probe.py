"""The probe every attack shares: the home page's latency idle, then under a load."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable

from bench.attacks import Row
from bench.server import get, percentile


def timed(port: int, path: str, headers: dict | None = None, timeout: float = 60) -> tuple[float, int]:
    """Seconds and status of one GET on 127.0.0.1; status 0 when no answer came in `timeout`."""
    start = time.monotonic()
    try:
        status = get(port, path, headers or {}, timeout=timeout)[0]
    except OSError:
        status = 0
    return time.monotonic() - start, status


def home_latencies(port: int, count: int | None = None, stop: threading.Event | None = None, timeout: float = 60) -> tuple[list[float], Counter]:
    """The home page asked one request at a time, 0.1 s apart (as a person clicking would
    be), `count` times or until `stop` is set; returns the seconds of each and their statuses."""
    seconds: list[float] = []
    statuses: Counter = Counter()
    while (count is None or len(seconds) < count) and not (stop and stop.is_set()):
        elapsed, status = timed(port, "/", timeout=timeout)
        seconds.append(elapsed)
        statuses[status] += 1
        (stop.wait if stop else time.sleep)(0.1)
    return seconds, statuses


def under_load(
    label: str, port: int, load: Callable[[threading.Event], Counter], *, duration: float, idle: int = 50,
    threads: int = 1, timeout: float = 60, note: Callable[[], str] = lambda: "",
) -> Row:
    """The home page's p99 idle (`idle` probes), then while `threads` copies of `load` run for
    `duration` seconds. Each `load(stop)` works until `stop` is set and returns the statuses its
    requests got; 5xx among them, and among the probe's, are counted. A probe with no answer
    in `timeout` counts at `timeout` seconds (the site is down for it)."""
    home_latencies(port, 3, timeout=timeout)  # warm: the first answer loads the templates
    idle_seconds, _ = home_latencies(port, idle, timeout=timeout)
    stop = threading.Event()
    results: list[Counter] = []
    workers = [threading.Thread(target=lambda: results.append(load(stop)), daemon=True) for _ in range(threads)]
    for worker in workers:
        worker.start()
    time.sleep(min(2.0, duration / 4))  # the load is in place before the first probe
    deadline = threading.Timer(duration, stop.set)
    deadline.start()
    busy_seconds, probe_statuses = home_latencies(port, stop=stop, timeout=timeout)
    for worker in workers:
        worker.join(timeout + 10)
    statuses = sum(results, Counter()) + probe_statuses
    errors = sum(count for status, count in statuses.items() if status >= 500)
    unanswered = probe_statuses.get(0, 0)
    extra = f"{unanswered} home probe(s) unanswered in {timeout:g} s; " if unanswered else ""
    return Row(label, percentile(idle_seconds, 0.99), percentile(busy_seconds, 0.99), errors, extra + note())
