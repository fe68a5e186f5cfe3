"""Bring your own transcript: paste or upload a transcript or an agent's session file, get a
link (`/play/t-<hash>`) that replays it with every strategy, setting and panel."""

from __future__ import annotations

from flask import Blueprint, Response, redirect, render_template, request
from flask_babel import format_number
from flask_babel import gettext as _

from ...core.inputs.scenarios import ScenarioError, problem_groups
from ...core.inputs.store import TranscriptNotText, TranscriptTooLarge, client_key
from ...core.model import LANGUAGES
from ..services import store
from ..state import PageState, StateError, missing_transcript

blueprint = Blueprint("transcripts", __name__)


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
    run = request.form.get("run", "").strip() or "1"
    if not run.isdigit() or not 1 <= int(run) <= 9999:
        return form_page([("run", _("Run: give a run's number, 1 for the first."))], text or "", 400)
    try:
        scenario = store().save(data, client_key(request.remote_addr))
        if int(run) > 1:
            scenario = store().parse(data, int(run))
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
        return form_page(error.problems, text if text is not None else data.decode("utf-8-sig"), 400, error.looks_like)
    return redirect(PageState.first(scenario, lang=wanted).url(), code=303)


def form_page(problems: list[tuple[str, str]] | None = None, text: str = "", status: int = 200, looks_like: str | None = None):
    """The paste page; a refusal's problems grouped by what they say (with how many places
    and the first few), at most SHOWN_PROBLEMS lines and a count of the rest, under the name
    of the format the input looks like."""
    limit = store().max_bytes
    problems = problems or []
    # The note on tool pairs only under a problem about tool pairs, not under invalid JSON.
    tool_pair_problems = any("tool_call" in where or "tool_call" in what for where, what in problems)
    groups, rest = problem_groups(problems)
    shown = [(", ".join(places[:3]) + ("…" if len(places) > 3 else ""), what, len(places)) for what, places in groups]
    return (
        render_template(
            "transcript_new.html", problems=shown, more_problems=rest, looks_like=_(looks_like) if looks_like else None,
            text=text, limit=limit, limit_text=format_number(limit), tool_pair_problems=tool_pair_problems,
        ),
        status,
    )
