"""Where jobs (web/jobs.py) leave their progress and their results, kept by their inputs: a
job's key is a hash of what it computes (the chat's content, the settings, the range, the
prices, the summarizer), so every visitor who asks the same finds the same job, and then its
result.

- `FolderJobs`: files in JOB_DIR (the instance folder by default), which every worker of one
  machine shares: `<key>.job` (its progress, JSON) and `<key>.result` (its result).
- `RedisJobs`: the Redis LIMITS_STORE names, which every worker and host shares: results kept
  RESULT_SECONDS, progress as long as its lease. While Redis does not answer, it keeps them in
  its folder instead (and still finds what Redis holds once it answers again).

A job's record has a lease: the process that runs it, or holds it in its queue, renews it at
each word of progress. A job whose lease ran out (its process died, or Redis restarted empty)
is gone, and the next visitor who asks starts it again: nothing a visitor waits for is lost.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .redis_link import RedisDown, RedisLink

QUEUED, RUNNING, FAILED = "queued", "running", "failed"
TURN = "turn"  # not started: the client's last long chat is computed, or it rests after it
FAILURE_SECONDS = 60  # a failure is shown that long, then asking again starts the job again


@dataclass
class Progress:
    """What a job has done: `done` of `total` steps; `why` a failure's kind (failed only)."""

    state: str
    done: int = 0
    total: int = 0
    lease_until: float = 0.0  # time.time() past which a job that says nothing more is gone
    why: str = ""

    @property
    def share(self) -> float:
        return self.done / self.total if self.total else 0.0


class FolderJobs:
    """Jobs of one machine, in a folder its processes share."""

    def __init__(self, folder: Path, max_bytes: int):
        self.folder = folder
        self.max_bytes = max_bytes  # the results kept, the oldest removed past it

    def progress(self, key: str) -> Progress | None:
        try:
            found = Progress(**json.loads((self.folder / f"{key}.job").read_text()))
        except (OSError, ValueError, TypeError):
            return None
        return found if time.time() < found.lease_until else None

    def claim(self, key: str, lease: float) -> bool:
        """Records a new job queued, unless one is (its lease not run out): True when this
        caller is to start it."""
        with self._locked():
            if self.progress(key) is not None:
                return False
            self._write(key, Progress(QUEUED, lease_until=time.time() + lease))
            return True

    def report(self, key: str, progress: Progress) -> None:
        self._write(key, progress)

    def finish(self, key: str, result: bytes) -> None:
        self._atomic(self.folder / f"{key}.result", result)
        with contextlib.suppress(FileNotFoundError):
            (self.folder / f"{key}.job").unlink()
        self._trim()

    def fail(self, key: str, why: str) -> None:
        self._write(key, Progress(FAILED, why=why, lease_until=time.time() + FAILURE_SECONDS))

    def result(self, key: str) -> bytes | None:
        try:
            return (self.folder / f"{key}.result").read_bytes()
        except OSError:
            return None

    def _write(self, key: str, progress: Progress) -> None:
        self._atomic(self.folder / f"{key}.job", json.dumps(asdict(progress)).encode())

    def _atomic(self, path: Path, data: bytes) -> None:
        """Written whole or not at all: a reader never sees half a file."""
        self.folder.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}")
        partial.write_bytes(data)
        os.replace(partial, path)

    @contextlib.contextmanager
    def _locked(self):
        """One claim at a time among this machine's processes."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / "claims.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _trim(self) -> None:
        """Past `max_bytes` of results, the least recently written go."""
        results = []
        for path in self.folder.glob("*.result"):
            with contextlib.suppress(FileNotFoundError):
                stat = path.stat()
                results.append((stat.st_mtime, stat.st_size, path))
        total = sum(size for _, size, _ in results)
        for _, size, path in sorted(results):
            if total <= self.max_bytes:
                break
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            total -= size


class RedisJobs:
    """Jobs of every host, in Redis; in `local` while Redis does not answer."""

    def __init__(self, link: RedisLink, local: FolderJobs, result_seconds: int):
        self.link, self.local, self.result_seconds = link, local, result_seconds

    def progress(self, key: str) -> Progress | None:
        try:
            found = self.link.run(lambda redis: redis.get(f"playground:job:{key}"))
        except RedisDown:
            return self.local.progress(key)
        return Progress(**json.loads(found)) if found else self.local.progress(key)

    def claim(self, key: str, lease: float) -> bool:
        record = json.dumps(asdict(Progress(QUEUED, lease_until=time.time() + lease)))
        try:
            return bool(self.link.run(lambda redis: redis.set(f"playground:job:{key}", record, nx=True, px=round(lease * 1000))))
        except RedisDown:
            return self.local.claim(key, lease)

    def report(self, key: str, progress: Progress) -> None:
        seconds = max(1, round((progress.lease_until - time.time()) * 1000))
        try:
            self.link.run(lambda redis: redis.set(f"playground:job:{key}", json.dumps(asdict(progress)), px=seconds))
        except RedisDown:
            self.local.report(key, progress)

    def finish(self, key: str, result: bytes) -> None:
        def store(redis):
            with redis.pipeline() as both:  # one round trip, in one transaction
                both.set(f"playground:result:{key}", result, ex=self.result_seconds)
                both.delete(f"playground:job:{key}")
                both.execute()

        try:
            self.link.run(store)
        except RedisDown:
            self.local.finish(key, result)

    def fail(self, key: str, why: str) -> None:
        record = json.dumps(asdict(Progress(FAILED, why=why, lease_until=time.time() + FAILURE_SECONDS)))
        try:
            self.link.run(lambda redis: redis.set(f"playground:job:{key}", record, ex=FAILURE_SECONDS))
        except RedisDown:
            self.local.fail(key, why)

    def result(self, key: str) -> bytes | None:
        try:
            found = self.link.run(lambda redis: redis.get(f"playground:result:{key}"))
        except RedisDown:
            return self.local.result(key)
        kept = self.local.result(key) if found is None else None
        if kept is not None:
            # Computed here while Redis did not answer: published now, or the other hosts would
            # wait for it (and queue it again) while this one takes the job for done.
            self.finish(key, kept)
        return found if found is not None else kept
