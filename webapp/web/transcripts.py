"""Bring your own transcript: paste or upload an OpenAI chat-completions transcript, get a
link (`/play/t-<hash>`) that replays it with every strategy, setting and panel."""

from __future__ import annotations

from flask import Blueprint, current_app, redirect, render_template, request, url_for
from flask_babel import format_number
from flask_babel import gettext as _

from ..core.scenarios import ScenarioError
from ..core.transcript_store import TranscriptStore, TranscriptTooLarge

blueprint = Blueprint("transcripts", __name__)


def store() -> TranscriptStore:
    return current_app.extensions["transcript_store"]


@blueprint.get("/transcripts/new")
def new():
    return form_page()


@blueprint.post("/transcripts")
def create():
    upload = request.files.get("file")
    text = request.form.get("transcript", "")
    if upload is not None and upload.filename:
        data = upload.read(store().max_bytes + 1)
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            return form_page([("", _("The file is not UTF-8 text: upload the JSON file itself."))], "", 400)
    if not text.strip():
        return form_page([("", _("Paste a transcript or choose a file."))], text, 400)
    try:
        scenario = store().save(text)
    except TranscriptTooLarge as error:
        problem = _(
            "The transcript is %(size)s bytes; the limit is %(limit)s bytes.",
            size=format_number(error.size),
            limit=format_number(error.limit),
        )
        return form_page([("", problem)], "", 413)
    except ScenarioError as error:
        return form_page(error.problems, text, 400)
    return redirect(url_for("web.play", scenario_id=scenario.id, lang=request.args.get("lang")), code=303)


def form_page(problems: list[tuple[str, str]] | None = None, text: str = "", status: int = 200):
    limit = store().max_bytes
    return (
        render_template("transcript_new.html", problems=problems or [], text=text, limit=limit, limit_text=format_number(limit)),
        status,
    )
