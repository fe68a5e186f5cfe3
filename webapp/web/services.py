"""What the app keeps between requests, read-mostly, and the accessors pages use: the scenario
library (loaded once, at start), the bounded cache of replays (with the summarizer endpoint,
when one is configured), and the store of pasted transcripts. Nothing else outlives a request.
"""

from __future__ import annotations

from pathlib import Path

from flask import Flask, current_app, g

from ..core.engine.remote_summarizer import OpenAICompatibleSummarizer, end_time_budget, start_time_budget, summarizer_config
from ..core.inputs.library import Library, load_library
from ..core.inputs.store import TranscriptStore
from .replays import ReplayCache


def init_app(app: Flask) -> None:
    config = app.config
    app.extensions["scenario_library"] = load_library(Path(config["SCENARIOS_DIR"]), *map(Path, config["USER_SCENARIOS_DIRS"]))
    # An OpenAI-compatible endpoint for summarize, when configured (README: "A real summarizer").
    endpoint = summarizer_config(config)
    summarizer = OpenAICompatibleSummarizer(endpoint) if endpoint else None
    app.extensions["replay_cache"] = ReplayCache(config["REPLAY_CACHE_SIZE"], config["REPLAY_CACHE_MAX_BYTES"], summarizer)
    app.extensions["transcript_store"] = TranscriptStore(
        Path(config["TRANSCRIPT_DIR"]),
        config["TRANSCRIPT_MAX_BYTES"],
        config["TRANSCRIPT_STORE_MAX_BYTES"],
        max_client_bytes=config["TRANSCRIPT_CLIENT_MAX_BYTES"],
        max_messages=config["TRANSCRIPT_MAX_MESSAGES"],
        max_characters=config["TRANSCRIPT_MAX_CHARACTERS"],
    )

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


def library() -> Library:
    return current_app.extensions["scenario_library"]


def replays() -> ReplayCache:
    return current_app.extensions["replay_cache"]


def store() -> TranscriptStore:
    return current_app.extensions["transcript_store"]
