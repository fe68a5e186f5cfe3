"""Where jobs run (docs/deployment.md, "Long work as jobs"), and what running one is.

- `ProcessPool` (JOB_QUEUE unset, the default): the server's own pool of processes, a few per
  worker (JOB_PROCESSES), started by Python's forkserver the first time a job comes; nothing to
  install. The web workers' threads stay free for pages while a job computes.
- `RedisQueue` (JOB_QUEUE=redis): a queue on the Redis LIMITS_STORE names, served by RQ workers
  (`compaction-playground worker`, scripts/worker) on any host that reads the same transcripts.
  RQ because a job is one function call with its arguments, its id is ours (the job's key, so
  a job asked twice is queued once), and its workers need nothing but Redis.

Both run `run_job`: the page's own computation (`compute`), in a request context of the page's
URL, under a budget of its own (JOB_CPU_SECONDS, JOB_WALL_SECONDS), reporting its progress to
the job store (web/job_store.py) and leaving there its result, or why it failed.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass

from flask import Flask, current_app

from ..core import time_budget
from ..core.engine.remote_summarizer import SummarizerError, end_time_budget, start_time_budget
from ..core.inputs.store_faults import StoreUnwritable
from ..core.time_budget import BudgetExceeded
from .job_store import RUNNING, FolderJobs, Progress, RedisJobs
from .shares import Ticket

log = logging.getLogger("webapp.jobs")

REPORT_SECONDS = 0.25  # a job writes its progress at most this often
OWNER_WATCH_SECONDS = 1.0
QUEUE_NAME = "playground"


@dataclass(frozen=True)
class JobSpec:
    """One job: the page URL whose data it computes, its key, and the share of the client who
    started it (given back when it ends)."""

    key: str
    path: str
    query: str
    ticket: Ticket


class Reporter:
    """The job's word of progress: `done` of `total` steps, written at most every
    REPORT_SECONDS (and the first and last always), each renewing the job's lease."""

    def __init__(self, jobs: FolderJobs | RedisJobs, key: str, lease: float):
        self.jobs, self.key, self.lease = jobs, key, lease
        self._last = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done in (0, total) or now - self._last >= REPORT_SECONDS:
            self._last = now
            self.jobs.report(self.key, Progress(RUNNING, done, total, time.time() + self.lease))


def run_job(compute: Callable[[Reporter], bytes], spec: JobSpec) -> float:
    """Runs one job in this process's app (current_app) and returns the seconds it computed.
    Its result, or why it failed ("budget", "summarizer", "store", "error"), goes to the job
    store."""
    app = current_app._get_current_object()
    jobs = app.extensions["job_store"]
    config = app.config
    if jobs.result(spec.key) is not None:  # queued twice (a lease ran out while it waited): done once
        return 0.0
    started = time.monotonic()
    reporter = Reporter(jobs, spec.key, config["JOB_LEASE_SECONDS"])
    reporter(0, 0)
    with app.test_request_context(spec.path, query_string=spec.query):
        budget = time_budget.start(config["JOB_CPU_SECONDS"], config["JOB_WALL_SECONDS"])
        summaries = start_time_budget(config["JOB_WALL_SECONDS"])
        try:
            jobs.finish(spec.key, compute(reporter))
        except BudgetExceeded:
            jobs.fail(spec.key, "budget")
        except SummarizerError as error:
            log.warning("summarizer, job %s: %s", spec.key, error)
            jobs.fail(spec.key, "summarizer")
        except StoreUnwritable as error:
            log.warning("transcript store, job %s: %s", spec.key, error)
            jobs.fail(spec.key, "store")
        except Exception:
            log.exception("job %s (%s?%s) failed", spec.key, spec.path, spec.query)
            jobs.fail(spec.key, "error")
        finally:
            end_time_budget(summaries)
            time_budget.stop(budget)
    return time.monotonic() - started


def start_job_process(test_config: dict | None, owner: int) -> None:
    """A pool process's start: the app, made as the server's (the same config, the environment
    it inherits), its context left open for every job the process runs; and a watch on the
    worker that owns the pool (`owner`, its pid)."""
    from . import create_app

    create_app(test_config).app_context().push()
    threading.Thread(target=watch_owner, args=(owner,), name="owner watch", daemon=True).start()


def watch_owner(owner: int) -> None:
    """Ends this process within a second of its worker's end (stopped, restarted, recycled or
    killed): Python's forkserver makes pool processes that would otherwise outlive it, computing
    a job nobody reads and keeping the forkserver alive. The job's lease then runs out, and the
    next visitor who asks for it starts it again on a worker that lives."""
    while True:
        time.sleep(OWNER_WATCH_SECONDS)
        try:
            os.kill(owner, 0)
        except ProcessLookupError:
            os._exit(0)


def run_queued_job(compute: Callable[[Reporter], bytes], spec: JobSpec) -> None:
    """What an RQ worker runs (in the worker's app context, web/worker.py): the job, then the
    client's share given back, from whatever host."""
    seconds = run_job(compute, spec)
    current_app.extensions["client_shares"].leave(spec.ticket, seconds)


class ProcessPool:
    """Jobs in this worker's own pool of processes, made when the first job comes."""

    def __init__(self, app: Flask, test_config: dict | None):
        self.app, self.test_config = app, test_config
        self._executor: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._pending = 0  # jobs submitted and not done

    def has_room(self) -> bool:
        """Whether this worker's pool may take one more job (JOB_PROCESSES computing and
        JOB_WAITING waiting for them)."""
        return self._pending < self.app.config["JOB_PROCESSES"] + self.app.config["JOB_WAITING"]

    def submit(self, compute: Callable[[Reporter], bytes], spec: JobSpec) -> None:
        """Hands the job to the pool from a thread of its own: the first job of a worker starts
        the pool's processes, which takes a second or two that the page does not wait for."""
        with self._lock:
            self._pending += 1
        threading.Thread(target=self._submit, args=(compute, spec), name=f"job {spec.key}", daemon=True).start()

    def _submit(self, compute: Callable[[Reporter], bytes], spec: JobSpec) -> None:
        try:
            future = self._pool().submit(run_job, compute, spec)
        except Exception as error:  # the pool could not start: the job fails, the page says so
            failed: Future = Future()
            failed.set_exception(error)
            self._done(spec, failed)
            return
        future.add_done_callback(lambda done: self._done(spec, done))

    def _pool(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._executor is None:
                # forkserver: a worker serving pages has threads, which a plain fork would copy
                # mid-work; the server process imports the app's code once for every child.
                context = multiprocessing.get_context("forkserver")
                context.set_forkserver_preload(["webapp.web"])
                self._executor = ProcessPoolExecutor(
                    self.app.config["JOB_PROCESSES"], mp_context=context, initializer=start_job_process, initargs=(self.test_config, os.getpid()),
                    max_tasks_per_child=self.app.config["JOB_TASKS_PER_PROCESS"],
                )
            return self._executor

    def _done(self, spec: JobSpec, done: Future) -> None:
        """The client's share given back, after as long as the job computed; a pool process
        that died (killed, out of memory) fails the job, and the pool is made again."""
        try:
            seconds = done.result()
        except Exception as error:
            log.error("a job process died (%s): job %s failed", error, spec.key)
            self.app.extensions["job_store"].fail(spec.key, "error")
            seconds = 0.0
            with self._lock:
                self._executor = None
        with self._lock:
            self._pending -= 1
        self.app.extensions["client_shares"].leave(spec.ticket, seconds)


class RedisQueue:
    """Jobs on RQ's queue in Redis, for `compaction-playground worker`."""

    def __init__(self, app: Flask):
        from rq import Queue

        self.app = app
        self.queue = Queue(QUEUE_NAME, connection=app.extensions["redis"].client)

    def submit(self, compute: Callable[[Reporter], bytes], spec: JobSpec) -> None:
        config = self.app.config
        self.app.extensions["redis"].run(lambda _: self.queue.enqueue(
            run_queued_job, compute, spec, job_id=f"playground-{spec.key}",
            job_timeout=int(config["JOB_WALL_SECONDS"]) + 30, result_ttl=0, failure_ttl=config["JOB_LEASE_SECONDS"],
        ))
