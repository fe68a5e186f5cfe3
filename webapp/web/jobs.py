"""Long work as jobs (docs/deployment.md, "Long work as jobs"): a page whose data would take more
than a moment (the sweep or the comparison of a chat of more than JOB_MESSAGES messages) asks
`computed`, which answers the data at once when it was computed before, by anyone, on any host (it
is kept by its inputs: web/job_store.py), or else raises `StillComputing` with the job's progress,
starting the job if nobody has (web/job_queue.py). The page then shows a progress bar that asks
again every second (htmx; without JavaScript, the page refreshes itself), and the result once it
is there. Its JSON and CSV twins answer 202 with the progress meanwhile.

Starting a job takes the client's share of long chats (web/shares.py) for as long as the job
computes, and its rest after: a client has one job computing at a time, everywhere LIMITS_STORE
counts, and its next waits for its turn, its page saying so. Asking for a job someone has
started, or for its result, costs nothing.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import time
from collections.abc import Callable
from pathlib import Path

from flask import Flask, current_app, jsonify, request
from flask_babel import gettext as _

from ..core.engine.remote_summarizer import SummarizerError
from ..core.engine.replays import chat_hash
from ..core.inputs.store_faults import StoreUnreachable
from ..core.time_budget import BudgetExceeded
from .job_queue import JobSpec, ProcessPool, RedisQueue, Reporter
from .job_store import FAILED, QUEUED, TURN, FolderJobs, Progress, RedisJobs
from .limits import LongChatsBusy
from .redis_link import RedisDown, shared_redis
from .services import replays
from .shares import OverShare
from .state import PageState

POLL_SECONDS = 1  # how often a waiting page asks again


class StillComputing(Exception):
    """The data asked for is being computed by a job: `progress` says how far it is."""

    def __init__(self, progress: Progress):
        self.progress = progress
        super().__init__(progress.state)


def init_app(app: Flask, test_config: dict | None) -> None:
    config = app.config
    folder = FolderJobs(Path(config["JOB_DIR"]), config["JOB_RESULTS_MAX_BYTES"])
    link = shared_redis(app)
    app.extensions["job_store"] = RedisJobs(link, folder, config["JOB_RESULT_SECONDS"]) if link else folder
    app.extensions["job_pool"] = ProcessPool(app, test_config)
    if config["JOB_QUEUE"]:
        if config["JOB_QUEUE"] != "redis" or link is None:
            raise ValueError("JOB_QUEUE: expected redis (RQ's queue on the Redis LIMITS_STORE names, which must be set), or nothing for the server's own processes")
        app.extensions["job_queue"] = RedisQueue(app)

    @app.errorhandler(StillComputing)
    def still_computing(waiting: StillComputing):
        """A twin's answer while its data is computed: 202, the progress, when to ask again."""
        progress = waiting.progress
        body = {"state": progress.state, "done": progress.done, "total": progress.total, "retry_after": POLL_SECONDS}
        if request.path.endswith(".csv"):
            return _("Still computing: %(done)s of %(total)s steps done. Ask again in a second.", done=progress.done, total=progress.total), 202, {"Retry-After": str(POLL_SECONDS), "Content-Type": "text/plain; charset=utf-8"}
        return jsonify(body), 202, {"Retry-After": str(POLL_SECONDS)}


def job_key(kind: str, view: PageState, leave_out: tuple[str, ...]) -> str:
    """What a job's result depends on, as one hash that every process computes alike: the
    page's kind, the chat's content, the URL's parameters but those in `leave_out` (what
    changes nothing the job computes), the summarizer, and the playground's version, so a new
    release computes anew what an old one kept."""
    params = {name: value for name, value in view.params().items() if name not in leave_out}
    inputs = [kind, chat_hash(view.scenario), params, replays().summarizer_name, version()]
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:40]


@functools.cache
def version() -> str:
    try:
        return importlib.metadata.version("compaction-playground")
    except importlib.metadata.PackageNotFoundError:  # a checkout run without installing it
        return "checkout"


def computed(compute: Callable[[Reporter], bytes], key: str) -> bytes:
    """The job's result (what `compute` returned), or StillComputing; a failed job raises what
    the page would have raised computing it (its budget, the summarizer, the store)."""
    app = current_app._get_current_object()
    jobs = app.extensions["job_store"]
    found = jobs.result(key)
    if found is not None:
        return found
    progress = jobs.progress(key) or start(compute, key)
    if progress.state == FAILED:
        raise failure(progress.why)
    raise StillComputing(progress)


def start(compute: Callable[[Reporter], bytes], key: str) -> Progress:
    """Starts the job unless someone just did, taking the client's share; while the client's
    last long chat is computed, or it rests after it, the job waits for its turn (TURN): the
    page's next poll tries again."""
    app = current_app._get_current_object()
    config, jobs = app.config, app.extensions["job_store"]
    pool: ProcessPool = app.extensions["job_pool"]
    queue: RedisQueue | None = app.extensions.get("job_queue")
    if queue is None and not pool.has_room():
        raise LongChatsBusy()
    # Queued, a job's lease lasts as long as the longest job ahead of it may; running, it is
    # renewed at each word of progress (JOB_LEASE_SECONDS).
    lease = config["JOB_WALL_SECONDS"]
    try:
        ticket = app.extensions["client_shares"].enter(request.remote_addr or "unknown", wait_seconds=0, lease=2 * lease)
    except OverShare:
        return Progress(TURN)
    if not jobs.claim(key, lease):  # another visitor started it a moment ago
        app.extensions["client_shares"].leave(ticket, 0)
        return jobs.progress(key) or Progress(QUEUED)
    spec = JobSpec(key, request.path, request.query_string.decode(), ticket)
    try:
        if queue is None:
            raise RedisDown()
        queue.submit(compute, spec)
    except RedisDown:  # no queue, or Redis gone: this host computes it
        pool.submit(compute, spec)
    return Progress(QUEUED, lease_until=time.time() + lease)


def failure(why: str) -> Exception:
    """What the page raises for a job that failed: the same answer it would have given
    computing it itself."""
    config = current_app.config
    if why == "budget":
        return BudgetExceeded(config["JOB_CPU_SECONDS"], "CPU")
    if why == "summarizer":
        return SummarizerError("the summarizer failed during a job (see the worker's log)")
    if why == "store":
        return StoreUnreachable("the transcript store failed during a job (see the worker's log)")
    return RuntimeError("a job failed (see the worker's log)")
