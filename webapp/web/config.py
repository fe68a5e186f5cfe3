"""The app's configuration, every key in one place with its default and why.

A test or a deployment overrides any key with `create_app({...})`; docs/serving.md says which
to change for a classroom server. Two keys are derived from others unless given: where pasted
transcripts live (the instance folder), and one client's share of their store; one is read from
the environment unless given: TRANSCRIPT_STORE, the database that holds them instead.
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
    "THREAD_SWITCH_SECONDS": 0.001,
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
    app.config.setdefault("TRANSCRIPT_DIR", str(Path(app.instance_path) / "transcripts"))
    # Where pasted transcripts live (docs/deployment.md): unset, files in TRANSCRIPT_DIR with
    # their SQLite index; postgresql://…, that database, which several hosts can share. Read
    # from the environment when the app is made, as gunicorn's workers get it.
    app.config.setdefault("TRANSCRIPT_STORE", os.environ.get("TRANSCRIPT_STORE", ""))
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
