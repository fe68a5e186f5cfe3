"""Plain rate limits, with Flask-Limiter: how many transcripts one client (its address, as
web/limits.py tells clients apart) may send in a while (PASTE_RATE_LIMIT). Reading and storing a
20 MB paste is work before any replay, which the fair share of long chats does not ration.

Counted where the shares are: in each process's memory, or in the Redis LIMITS_STORE names, for
every worker and host. While that Redis does not answer, Flask-Limiter counts in each process's
memory and looks for Redis again by itself, after 1, 2, 4… up to 32 seconds (its in-memory
fallback, Flask-Limiter 4.1). Past the limit: 429 with Retry-After, in the page's language.
"""

from __future__ import annotations

import time

from flask import Flask, current_app, request, url_for
from flask_babel import format_number, format_timedelta
from flask_babel import gettext as _
from flask_limiter import Limiter, RateLimitExceeded

from .errors import error_page
from .pages import transcripts
from .redis_link import TIMEOUT_SECONDS


def init_app(app: Flask) -> None:
    store = app.config["LIMITS_STORE"]
    limiter = Limiter(
        key_func=lambda: request.remote_addr or "unknown",
        app=app,
        storage_uri=store or "memory://",
        storage_options={"socket_timeout": TIMEOUT_SECONDS, "socket_connect_timeout": TIMEOUT_SECONDS} if store else {},
        key_prefix="playground",
        strategy="moving-window",
        in_memory_fallback_enabled=True,
        headers_enabled=True,
    )
    limiter.limit(lambda: current_app.config["PASTE_RATE_LIMIT"], methods=["POST"])(transcripts.blueprint)

    @app.errorhandler(RateLimitExceeded)
    def too_many(error: RateLimitExceeded):
        # Flask-Limiter writes Retry-After on the answer (headers_enabled).
        current = limiter.current_limit
        wait = max(1, int(current.reset_at - time.time())) if current else 60  # as Retry-After says
        item = error.limit.limit
        return error_page(429, [
            _("Your address has sent %(count)s transcripts within %(period)s: as many as one address may.", count=format_number(item.amount), period=format_timedelta(item.get_expiry(), threshold=1)),
            _("Try again in %(seconds)s seconds. The transcripts already sent stay at their links.", seconds=format_number(wait)),
        ], [(_("Back to the transcript form"), url_for("transcripts.new", lang=request.args.get("lang")))], title=_("Too many transcripts"))
