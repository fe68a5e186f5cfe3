"""Worker recycling by memory: a gunicorn worker whose resident memory passed a bound is
replaced after the request it is answering (gunicorn's `post_request` hook,
webapp/gunicorn_config.py).

Why memory and not a count of requests: a count replaces a worker however little it holds (a
flood of cheap static requests replaced 20 workers in 30 s, each starting with empty caches),
while memory is what recycling is for: Python keeps the memory of the largest request a worker
served, and only a new process gives it back.
"""

from __future__ import annotations

import os

# MAX_WORKER_MEMORY_MB: a worker holds about 150 MB once warm and its caches are bounded
# (REPLAY_CACHE_MAX_BYTES, 128 MB); past this, it is replaced. 0 turns recycling off.
DEFAULT_MAX_MB = 1024


def resident_mb() -> float:
    """This process's resident memory in MB (from /proc; 0 where there is none)."""
    try:
        with open("/proc/self/statm") as status:
            pages = int(status.read().split()[1])
    except (OSError, IndexError, ValueError):
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def recycle_when_large(worker, request, environ, response) -> None:
    """Lets the worker finish this request, then stop (gunicorn starts another in its place)
    when its memory is over MAX_WORKER_MEMORY_MB."""
    limit = int(os.environ.get("MAX_WORKER_MEMORY_MB", DEFAULT_MAX_MB))
    used = resident_mb()
    if limit and used > limit and worker.alive:
        worker.log.info("worker %s holds %.0f MB, over MAX_WORKER_MEMORY_MB=%d: replaced after this request", worker.pid, used, limit)
        worker.alive = False
