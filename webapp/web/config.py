"""The app's configuration, every key in one place with its default and why.

A test or a deployment overrides any key with `create_app({...})`; docs/serving.md says which
to change for a classroom server. Two keys are derived from others unless given: where pasted
transcripts live (the instance folder), and one client's share of their store; three are read
from the environment unless given: TRANSCRIPT_STORE, the database that holds them instead,
LIMITS_STORE, the Redis that several hosts share, and JOB_QUEUE.
"""

from __future__ import annotations

import os
from pathlib import Path

from flask import Flask

from ..core.inputs.library import SCENARIOS_DIR, user_scenario_folders
from ..resources import data_folder

# Bytes of a form beyond its transcript: the multipart boundaries and headers, the other field.
FORM_ROOM = 64 * 1024

DEFAULTS = {
    "SCENARIOS_DIR": SCENARIOS_DIR,
    # Per worker, every page's replays (core/engine/replays.py). The bytes are the bound: one
    # replay of a 1,000-message transcript holds up to about 30 MB, one of the bike shop 25 KB.
    # The count only keeps the table small; it must hold a sweep's, about 300 by default
    # (long haul's weigh about 86 MB), or a new price would replay what it let go.
    "REPLAY_CACHE_SIZE": 1024,
    "REPLAY_CACHE_MAX_BYTES": 128 * 1024 * 1024,
    "BABEL_DEFAULT_LOCALE": "en",
    "BABEL_TRANSLATION_DIRECTORIES": str(data_folder("translations")),
    # Pasted transcripts (README: "Bring your own transcript"): a cap per file as sent (an
    # agent's session is mostly metadata around its messages: real ones take 1 to 3.5 MB), a
    # cap on the characters the replay keeps of it (its messages and tool definitions), and a
    # cap for the whole store, which several servers can share, counting files as sent.
    "TRANSCRIPT_MAX_BYTES": 20_000_000,
    "TRANSCRIPT_MAX_CHARACTERS": 1_000_000,
    "TRANSCRIPT_STORE_MAX_BYTES": 1024 * 1024 * 1024,
    # Behind a reverse proxy, how many proxies' X-Forwarded-For to trust to tell clients apart.
    "TRUSTED_PROXY_HOPS": 0,
    # Past a few thousand messages a replay's memory and the comparison panel's time grow
    # with the square of the length (docs/hardening.md: 10,000 tiny messages took GBs and minutes).
    "TRANSCRIPT_MAX_MESSAGES": 1000,
    # A bounded cost per request (web/limits.py): CPU and wall-clock seconds a page may use, and
    # how long chats take turns.
    "REQUEST_CPU_SECONDS": 8.0,
    "REQUEST_WALL_SECONDS": 20.0,
    "LONG_CHAT_MESSAGES": 200,
    "LONG_CHATS_AT_ONCE": 1,
    "LONG_CHAT_WAITERS": 2,
    "LONG_CHAT_WAIT_SECONDS": 10.0,
    "LONG_COMPARISON_MESSAGES": 20,
    # Each client's share of long chats, per process (web/limits.py): one computed and one
    # waiting, and a rest as long as the last one took before the next.
    "CLIENT_LONG_CHAT_WAITERS": 1,
    "CLIENT_REST_FACTOR": 1.0,
    # Where the shares are counted (web/shares.py): unset, in each process's memory; redis://…,
    # in that Redis, so that a client has one share across every worker and host, with the
    # remembered summarizer failures and the jobs' progress and results (docs/deployment.md).
    # Read from the environment unless given.
    "LIMITS_STORE": None,
    # Transcripts one client may send (Flask-Limiter's notation, web/rate_limits.py): a class
    # behind one address pastes a few each, a script in a loop no more.
    "PASTE_RATE_LIMIT": "60 per minute; 600 per hour",
    "THREAD_SWITCH_SECONDS": 0.001,
    # Long work as jobs (web/jobs.py, docs/deployment.md): the sweep and the comparison of a
    # chat of more than JOB_MESSAGES messages are computed by a job, under a budget of its own, in JOB_PROCESSES
    # processes of each worker (JOB_WAITING more waiting for them), or with JOB_QUEUE=redis by
    # `compaction-playground worker` on any host. Results kept by their inputs, in JOB_DIR
    # (JOB_RESULTS_MAX_BYTES, the oldest removed past it) or with LIMITS_STORE in Redis for
    # JOB_RESULT_SECONDS. A job that says nothing for JOB_LEASE_SECONDS is gone, and started again.
    "JOB_MESSAGES": 200,
    "JOB_QUEUE": None,
    "JOB_PROCESSES": 1,
    "JOB_WAITING": 4,
    "JOB_TASKS_PER_PROCESS": 50,
    "JOB_CPU_SECONDS": 120.0,
    "JOB_WALL_SECONDS": 300.0,
    "JOB_LEASE_SECONDS": 30.0,
    "JOB_RESULTS_MAX_BYTES": 256 * 1024 * 1024,
    "JOB_RESULT_SECONDS": 7 * 24 * 3600,
    # The types this app answers with (Flask-Compress's own list lacks CSV).
    "COMPRESS_MIMETYPES": ["text/html", "application/json", "text/csv", "text/plain", "image/svg+xml"],
}


def init_app(app: Flask, test_config: dict | None) -> None:
    app.config.from_mapping(DEFAULTS)
    # A user's own scenario folders, added to the built-in ones (README: "Your own scenarios"),
    # read from the environment when the app is made.
    app.config["USER_SCENARIOS_DIRS"] = user_scenario_folders()
    if test_config:
        app.config.from_mapping(test_config)
    # Folders come from the environment too: a `compaction-playground worker` has no config file.
    app.config.setdefault("TRANSCRIPT_DIR", os.environ.get("TRANSCRIPT_DIR") or str(Path(app.instance_path) / "transcripts"))
    # Where pasted transcripts live (docs/deployment.md): unset, files in TRANSCRIPT_DIR with
    # their SQLite index; postgresql://…, that database, which several hosts can share. Read
    # from the environment when the app is made, as gunicorn's workers get it.
    app.config.setdefault("TRANSCRIPT_STORE", os.environ.get("TRANSCRIPT_STORE", ""))
    for name in ("LIMITS_STORE", "JOB_QUEUE"):
        if app.config[name] is None:
            app.config[name] = os.environ.get(name, "")
    # The jobs' progress and results beside the transcripts (the instance folder by default).
    app.config.setdefault("JOB_DIR", os.environ.get("JOB_DIR") or str(Path(app.config["TRANSCRIPT_DIR"]).parent / "jobs"))
    # One client's share of the store (its IPv4 address or IPv6 /64): past it, its own oldest
    # transcripts make room, so no one visitor can push out everyone else's; at least one
    # transcript of the largest size.
    store_share = app.config["TRANSCRIPT_STORE_MAX_BYTES"] // 16
    app.config.setdefault("TRANSCRIPT_CLIENT_MAX_BYTES", max(store_share, app.config["TRANSCRIPT_MAX_BYTES"]))
    # A pasted transcript (a form field) and an uploaded one (a file) take the same limit, the
    # store's, which measures the transcript exactly. Flask's own caps stay above it: its cap on
    # a form field (MAX_FORM_MEMORY_SIZE, 500,000 bytes unless set) counts the parser's buffer,
    # boundaries included, and a request carries the rest of its form. (Flask has defaults of
    # its own for both, so setdefault would keep them.)
    given = test_config or {}
    app.config["MAX_FORM_MEMORY_SIZE"] = given.get("MAX_FORM_MEMORY_SIZE", app.config["TRANSCRIPT_MAX_BYTES"] + FORM_ROOM)
    app.config["MAX_CONTENT_LENGTH"] = given.get("MAX_CONTENT_LENGTH", app.config["TRANSCRIPT_MAX_BYTES"] + 2 * FORM_ROOM)
    if app.config["TRUSTED_PROXY_HOPS"]:
        from werkzeug.middleware.proxy_fix import ProxyFix

        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=app.config["TRUSTED_PROXY_HOPS"])
