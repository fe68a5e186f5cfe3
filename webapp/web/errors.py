"""Every error as a page that says what was wrong and what to do, in the page's language, or
as its fragment for htmx, swapped where the request came from (web/htmx.py answers both);
never a stack trace."""

from __future__ import annotations

from collections.abc import Sequence

from flask import Flask, Response, current_app, request
from flask_babel import format_number
from flask_babel import gettext as _
from werkzeug.exceptions import HTTPException
from werkzeug.routing import BuildError

from ..core.counter_catalog import VocabularyError
from ..core.engine.remote_summarizer import SummarizerError
from ..core.inputs.store_faults import StoreUnreachable
from .htmx import page_or_block
from .state import read_state
from .state_error import StateError


def init_app(app: Flask) -> None:
    app.register_error_handler(StateError, lambda error: error_page(error.status, error.problems))
    app.register_error_handler(SummarizerError, summarizer_failed)
    app.register_error_handler(StoreUnreachable, store_unreachable)
    app.register_error_handler(VocabularyError, vocabulary_broken)
    app.register_error_handler(HTTPException, http_error)
    app.register_error_handler(Exception, unexpected)


def summarizer_failed(error: SummarizerError):
    # The endpoint's address and its answer are for the operator's log, not for visitors.
    current_app.logger.warning("summarizer: %s", error)
    return error_page(502, [_("The summarizer is unavailable right now. Every other strategy still works: pick another one, or try again in a minute.")])


def store_unreachable(error: StoreUnreachable):
    """A stored transcript asked for while the store's database does not answer (a paste gets
    its own answer, on the form): 503, to come back shortly; the lessons still work. The index
    logs when the database stops answering and when it answers again, not every request."""
    response = error_page(503, [
        _("Stored transcripts cannot be read right now: the server's transcript store does not answer. Nothing stored is lost: try again in a moment."),
        _("Everything else still works: the lessons, their comparisons and sweeps."),
    ], title=_("Transcripts unavailable"))
    response.headers["Retry-After"] = str(error.retry_after)
    return response


def vocabulary_broken(error: VocabularyError):
    """An open model's counter asked for (the form offers it: its files are there) whose
    vocabulary turns out missing or not the pinned file: 503, since the request is right and
    the server's installation is not, and only whoever runs the server can mend it. The file's
    path is for the operator's log, the command that mends it for the page."""
    current_app.logger.error("vocabulary: %s", error)
    return error_page(503, [
        _("The %(counter)s counter cannot run on this server: its vocabulary is missing or is not the file this version of the playground pins.", counter=error.counter),
        _("Whoever runs the server brings it back with: %(command)s", command=error.remedy),
        _("Every other counter still works: choose another one."),
    ], _same_page_counted_otherwise(error.counter), title=_("Counter unavailable"))


def _same_page_counted_otherwise(broken: str) -> list[tuple[str, str]]:
    """A link to the page asked for, counted with the scenario's own counter (o200k_base where
    that is the broken one, as on a pasted session of that model); none off a scenario's page."""
    scenario_id = (request.view_args or {}).get("scenario_id")
    if not scenario_id or not request.endpoint:
        return []
    try:
        state = read_state(scenario_id, request.args, request.endpoint, (request.view_args or {}).get("settings", ""))
        counter = state.scenario.settings.counter if state.scenario.settings.counter != broken else "o200k_base"
        return [(_("The same page, counted with %(counter)s", counter=counter), state.url(request.endpoint, counter=counter))]
    except (StateError, BuildError):  # a URL that names no page state: the words alone
        return []


def http_error(error: HTTPException):
    messages = {
        404: _("There is no page at this address."),
        405: _("This address does not accept that method."),
        # Only a transcript's form takes a body this large.
        413: _("What you sent is too large: a transcript may take at most %(limit)s bytes.", limit=format_number(current_app.config["TRANSCRIPT_MAX_BYTES"])),
    }
    return error_page(error.code or 500, [messages.get(error.code, error.description or error.name)])


def unexpected(error: Exception):
    if isinstance(error, HTTPException):
        return http_error(error)
    current_app.logger.exception("unexpected error")
    return error_page(500, [_("Something went wrong on our side. The error is logged.")])


def error_page(status: int, problems: list[str], ways_out: Sequence[tuple[str, str]] = (), title: str | None = None) -> Response:
    """The error page, or its fragment for an htmx request (swapped where the request came
    from); `ways_out`: links (text, URL) to what the visitor may ask instead; `title`, when the
    status's own title would not say what happened."""
    titles = {
        400: _("Bad request"),
        404: _("Not found"),
        410: _("Removed"),
        413: _("Too large"),
        422: _("Too much to compute"),
        429: _("One at a time"),
        500: _("Server error"),
        502: _("Summarizer unavailable"),
        503: _("Busy"),
    }
    context = {"status": status, "title": title or titles.get(status, str(status)), "problems": problems, "ways_out": ways_out}
    return page_or_block("error.html", "problem", status, context)
