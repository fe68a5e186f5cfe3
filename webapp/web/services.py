"""What the app keeps between requests, read-mostly, and the accessors pages use: the scenario
library (loaded once, at start), the replays (one bounded cache for every page, through the
summarizer endpoint when one is configured), and the store of pasted transcripts. Nothing
else outlives a request.
"""

from __future__ import annotations

from pathlib import Path

from flask import Flask, current_app, g

from ..core.engine.remote_summarizer import end_time_budget, start_time_budget
from ..core.engine.replays import Replays
from ..core.inputs.library import Library, load_library
from ..core.inputs.store import StoredTranscripts, TranscriptStore

POSTGRES_SCHEMES = ("postgresql", "postgres")


def init_app(app: Flask) -> None:
    config = app.config
    app.extensions["scenario_library"] = load_library(Path(config["SCENARIOS_DIR"]), *map(Path, config["USER_SCENARIOS_DIRS"]))
    # Every page's replays, through an OpenAI-compatible endpoint for summaries when one is
    # configured (README: "A real summarizer").
    app.extensions["replay_cache"] = Replays.configured(config, size=config["REPLAY_CACHE_SIZE"], max_bytes=config["REPLAY_CACHE_MAX_BYTES"])
    app.extensions["transcript_store"] = open_store(config)

    @app.before_request
    def summarizer_budget():
        # The summaries one page needs share one budget, so a slow endpoint answers with a
        # message before gunicorn kills the worker.
        g.summarizer_budget = start_time_budget()

    @app.teardown_request
    def end_summarizer_budget(error=None):
        token = g.pop("summarizer_budget", None)
        if token is not None:
            end_time_budget(token)


def open_store(config) -> StoredTranscripts:
    """The store TRANSCRIPT_STORE names (docs/deployment.md): unset, files in TRANSCRIPT_DIR with
    their SQLite index; postgresql://…, that database, which several hosts can share."""
    limits = {
        "max_bytes": config["TRANSCRIPT_MAX_BYTES"],
        "max_total_bytes": config["TRANSCRIPT_STORE_MAX_BYTES"],
        "max_client_bytes": config["TRANSCRIPT_CLIENT_MAX_BYTES"],
        "max_messages": config["TRANSCRIPT_MAX_MESSAGES"],
        "max_characters": config["TRANSCRIPT_MAX_CHARACTERS"],
    }
    location = config["TRANSCRIPT_STORE"]
    if not location:
        return TranscriptStore(Path(config["TRANSCRIPT_DIR"]), **limits)
    scheme = location.partition("://")[0] if "://" in location else ""
    if scheme not in POSTGRES_SCHEMES:  # the URL itself is not repeated: it may hold a password
        raise ValueError(f"TRANSCRIPT_STORE: expected a postgresql:// URL, or nothing for the folder TRANSCRIPT_DIR; got a value of scheme {scheme!r}")
    try:
        from ..core.inputs.store_postgres import PostgresStore
    except ImportError as error:
        raise RuntimeError(f"TRANSCRIPT_STORE names PostgreSQL, which needs psycopg: pip install 'compaction-playground[postgres]' ({error})") from None
    return PostgresStore(location, **limits)


def library() -> Library:
    return current_app.extensions["scenario_library"]


def replays() -> Replays:
    """The one way a page gets a replay (core/engine/replays.py): `get` for the replay of
    exactly its settings, `sending` for the sweep's many."""
    return current_app.extensions["replay_cache"]


def store() -> TranscriptStore:
    return current_app.extensions["transcript_store"]
