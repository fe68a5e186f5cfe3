"""What the app keeps between requests, read-mostly, and the accessors pages use: the scenario
library (loaded once, at start), the bounded cache of replays (with the summarizer endpoint,
when one is configured), and the store of pasted transcripts. Nothing else outlives a request.
"""

from __future__ import annotations

from pathlib import Path

from flask import Flask, current_app, g

from ..core.engine.remote_summarizer import OpenAICompatibleSummarizer, end_time_budget, start_time_budget, summarizer_config
from ..core.inputs.library import Library, load_library
from ..core.inputs.store import StoredTranscripts, TranscriptStore
from .redis_link import shared_redis
from .replays import ReplayCache
from .shared_failures import SharedFailures

POSTGRES_SCHEMES = ("postgresql", "postgres")


def init_app(app: Flask) -> None:
    config = app.config
    app.extensions["scenario_library"] = load_library(Path(config["SCENARIOS_DIR"]), *map(Path, config["USER_SCENARIOS_DIRS"]))
    # An OpenAI-compatible endpoint for summarize, when configured (README: "A real summarizer").
    endpoint = summarizer_config(config)
    summarizer = OpenAICompatibleSummarizer(endpoint) if endpoint else None
    link = shared_redis(app)
    if summarizer is not None and link is not None:  # its failures remembered by every host
        summarizer.failures = SharedFailures(link, endpoint)
    app.extensions["replay_cache"] = ReplayCache(config["REPLAY_CACHE_SIZE"], config["REPLAY_CACHE_MAX_BYTES"], summarizer)
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


def replays() -> ReplayCache:
    return current_app.extensions["replay_cache"]


def store() -> TranscriptStore:
    return current_app.extensions["transcript_store"]
