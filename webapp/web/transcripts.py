"""Bring your own transcript: paste or upload an OpenAI chat-completions transcript, get a
link (`/play/t-<hash>`) that replays it with every strategy, setting and panel."""

from __future__ import annotations

from datetime import datetime, UTC

from flask import Blueprint, Response, current_app, redirect, render_template, request
from flask_babel import format_date, format_number
from flask_babel import gettext as _

from ..core.inputs.scenarios import ScenarioError
from ..core.model import LANGUAGES
from ..core.inputs.store import TranscriptNotText, TranscriptStore, TranscriptTooLarge, client_key
from .state import PageState, StateError

blueprint = Blueprint("transcripts", __name__)


def store() -> TranscriptStore:
    return current_app.extensions["transcript_store"]


def missing_transcript(name: str) -> StateError:
    """The 404 of a transcript link that finds nothing, saying what happened to it."""
    removed = store().missing(name).removed
    if removed is not None:
        problem = _(
            "The transcript %(name)s was removed on %(date)s to make room for newer ones. Paste it again: it gets the same link back.",
            name=name,
            date=format_date(datetime.fromtimestamp(removed, UTC)),
        )
    else:
        problem = _("No transcript was ever stored as %(name)s on this server. Check the link, or paste the transcript again.", name=name)
    return StateError(404, [problem])


@blueprint.get("/transcripts/new")
def new():
    return form_page()


@blueprint.get("/transcripts/<name>.json")
def original(name: str):
    """The transcript exactly as it was pasted, byte for byte."""
    data = store().read_bytes(name)
    if data is None:
        raise missing_transcript(name)
    return Response(data, mimetype="application/json", headers={"Content-Disposition": f'attachment; filename="{name}.json"'})


@blueprint.post("/transcripts")
def create():
    wanted = request.args.get("lang")
    if wanted is not None and wanted not in LANGUAGES:
        # Refused before anything is stored: the redirect would lead to a 400.
        raise StateError(400, [_("lang: got %(got)r, expected one of %(accepted)s", got=wanted, accepted=", ".join(LANGUAGES))])
    upload = request.files.get("file")
    if upload is not None and upload.filename:
        data = upload.read(store().max_bytes + 1)
        text = None
    else:
        text = request.form.get("transcript", "")
        # The exact text the browser sent, a textarea's CRLF newlines included.
        data = text.encode("utf-8", "surrogatepass")
    if not data.strip():
        return form_page([("", _("Paste a transcript or choose a file."))], "", 400)
    try:
        scenario = store().save(data, client_key(request.remote_addr))
    except TranscriptTooLarge as error:
        limit = format_number(error.limit)
        if text is None:  # an upload is read only up to one byte past the limit
            problem = _("The file is larger than the limit of %(limit)s bytes.", limit=limit)
        else:
            problem = _("The transcript is %(size)s bytes; the limit is %(limit)s bytes.", size=format_number(error.size), limit=limit)
        return form_page([("", problem)], "", 413)
    except TranscriptNotText:
        return form_page([("", _("The file is not UTF-8 text: upload the JSON file itself."))], "", 400)
    except ScenarioError as error:
        return form_page(error.problems, text if text is not None else data.decode("utf-8-sig"), 400)
    return redirect(PageState.first(scenario, lang=wanted).url(), code=303)


def form_page(problems: list[tuple[str, str]] | None = None, text: str = "", status: int = 200):
    limit = store().max_bytes
    problems = problems or []
    # The note on tool pairs only under a problem about tool pairs, not under invalid JSON.
    tool_pair_problems = any("tool_call" in where for where, _what in problems)
    return (
        render_template(
            "transcript_new.html", problems=problems, text=text, limit=limit, limit_text=format_number(limit), tool_pair_problems=tool_pair_problems
        ),
        status,
    )
