"""`compaction-playground worker`: computes the jobs of JOB_QUEUE=redis (web/job_queue.py) on
this host, as many at a time as workers are started (one each). It reads the same settings as
the server, from the environment: LIMITS_STORE (the Redis of the queue), TRANSCRIPT_STORE (the
transcripts the jobs replay: PostgreSQL when the worker is on another host than the server) and
the summarizer's. An RQ worker: each job runs in a process forked for it, so what a job holds is
given back when it ends; a Redis that stops is waited for, and the worker serves again when it
answers."""

from __future__ import annotations

import sys

# RQ waits this long at most between two tries at a Redis that does not answer (its own
# default, 60 s, would leave a restarted Redis's queue idle for a minute).
RECONNECT_SECONDS = 2.0


def run_worker(burst: bool = False) -> int:
    from redis import Redis
    from rq import Worker

    from .web import create_app
    from .web.job_queue import QUEUE_NAME

    app = create_app()
    if app.extensions.get("job_queue") is None:
        print("error: a worker serves the queue of JOB_QUEUE=redis, on the Redis of LIMITS_STORE=redis://…; set both", file=sys.stderr)
        return 2
    # Its own connection, without the pages' short timeouts: RQ waits for jobs on it.
    connection = Redis.from_url(app.config["LIMITS_STORE"])
    with app.app_context():  # each job's process, forked from this one, runs in this app
        worker = Worker([QUEUE_NAME], connection=connection)
        worker.max_connection_wait_time = RECONNECT_SECONDS
        worker.work(burst=burst, with_scheduler=False, logging_level="WARNING")
    return 0
