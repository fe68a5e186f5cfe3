"""Bring your own transcript: paste or upload a transcript in any format the registry reads
(core/inputs/formats/), get a link (`/play/t-<hash>`) that replays it with every strategy,
setting and panel."""

from __future__ import annotations

import json

from flask import Blueprint, current_app, jsonify, redirect, render_template, request
from flask_babel import format_number
from flask_babel import gettext as _
from werkzeug.exceptions import RequestEntityTooLarge

from ...core.inputs.scenarios import ScenarioError, problem_groups
from ...core.inputs.store import TranscriptNotText, TranscriptTooLarge, client_key
from ...core.inputs.store_faults import StoreUnreachable, StoreUnwritable
from ...core.model import LANGUAGES
from ..languages import transcript_formats
from ..services import store
from ..scenario_lookup import missing_transcript
from ..state import PageState
from ..state_error import StateError
from ..twins import attachment

blueprint = Blueprint("transcripts", __name__)

# The example the form offers to start from: a chat-completions chat small enough to paste by
# hand, with a tool call and its result, and four requests, so that with KEEP at 2 the
# hammer has old exchanges to strike (at the small window such a chat gets).
EXAMPLE = {
    "messages": [
        {"role": "system", "content": "You are a travel assistant. Use the tools to look things up."},
        {"role": "user", "content": "Find me a train from Lyon to Paris tomorrow morning."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "search_trains", "arguments": "{\"from\": \"Lyon\", \"to\": \"Paris\", \"date\": \"tomorrow\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "07:04 TGV 6602, arrives 09:00, 45 EUR; 08:04 TGV 6606, arrives 10:00, 59 EUR; 09:34 TGV 6612, arrives 11:30, 39 EUR"},
        {"role": "assistant", "content": "The cheapest is the 09:34 TGV 6612 at 39 EUR, arriving at 11:30. The 07:04 arrives earliest, at 09:00, for 45 EUR."},
        {"role": "user", "content": "The 07:04 then. Is there a seat by the window?"},
        {"role": "assistant", "content": "I cannot book seats, but window seats are usually free on the 07:04 at this time of year."},
        {"role": "user", "content": "And what time does it arrive again?"},
        {"role": "assistant", "content": "At 09:00, in Paris Gare de Lyon."},
        {"role": "user", "content": "Thanks. Write me a one-line reminder for my calendar."},
        {"role": "assistant", "content": "Tomorrow 07:04, TGV 6602 Lyon Part-Dieu to Paris Gare de Lyon, arrives 09:00."},
    ],
    "tools": [{"type": "function", "function": {"name": "search_trains", "description": "Trains between two cities on a date.", "parameters": {"type": "object", "properties": {"from": {"type": "string"}, "to": {"type": "string"}, "date": {"type": "string"}}, "required": ["from", "to", "date"]}}}],
}
EXAMPLE_TEXT = json.dumps(EXAMPLE, indent=2, ensure_ascii=False)


@blueprint.get("/transcripts/new")
def new():
    """The form; `?example=1` puts the example in the box, for a browser without JavaScript.
    While the store cannot be written, the form says so before anyone pastes."""
    return form_page(text=EXAMPLE_TEXT if request.args.get("example") == "1" else "", store_fault=store().fault)


@blueprint.get("/transcripts/<name>.json")
def original(name: str):
    """The transcript exactly as it was pasted, byte for byte."""
    data = store().read_bytes(name)
    if data is None:
        raise missing_transcript(name)
    return attachment(data, "application/json", f"{name}.json")


@blueprint.post("/transcripts")
def create():
    wanted = request.args.get("lang")
    if wanted is not None and wanted not in LANGUAGES:
        # Refused before anything is stored: the redirect would lead to a 400.
        raise StateError(400, [_("lang: got %(got)r, expected one of %(accepted)s", got=wanted, accepted=", ".join(LANGUAGES))])
    try:
        upload = request.files.get("file")
        pasted = request.form.get("transcript", "")
    except RequestEntityTooLarge:  # a pasted field or a whole form past the transcript's limit
        problem = _("The transcript is larger than the limit of %(limit)s bytes.", limit=format_number(store().max_bytes))
        return form_page([("", problem)], "", 413)
    if upload is not None and upload.filename:
        data = upload.read(store().max_bytes + 1)
        text = None
    else:
        text = pasted
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
            scenario = store().parse(data, int(run))[0]
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
    except StoreUnwritable as error:
        return store_refused(error, text or "")
    return redirect(PageState.first(scenario, lang=wanted).url(), code=303)


def store_refused(fault: StoreUnwritable, text: str):
    """A paste the store could not keep: 507 when the disk is full, else 503, saying what
    happened and what still works; the form again with the pasted text, or the same in JSON
    for a client that asks for JSON."""
    current_app.logger.warning("transcript store: a paste was refused: %s", fault.reason)
    status = 507 if fault.full else 503
    headers = {} if fault.full else {"Retry-After": str(fault.retry_after)}
    if request.accept_mimetypes.best_match(["text/html", "application/json"]) == "application/json":
        title, problems = store_fault_text(fault)
        return jsonify(status=status, title=title, problems=problems), status, headers
    return (*form_page(text=text, status=status, store_fault=fault), headers)


def store_fault_text(fault: StoreUnwritable) -> tuple[str, list[str]]:
    """The title and the lines that tell a visitor that the store cannot keep a transcript."""
    if isinstance(fault, StoreUnreachable):
        return _("Transcripts cannot be stored right now"), [
            _("The server cannot store a transcript now: its transcript store does not answer. Nothing you sent was kept."),
            _("The lessons and their comparisons still work; stored transcripts are back when the store answers again. Try again in a moment."),
        ]
    if fault.full:
        title = _("The server's disk is full")
        happened = _("The server's disk is full, so it cannot store a transcript now. Nothing you sent was kept.")
    else:
        title = _("Transcripts cannot be stored right now")
        happened = _("The server cannot store a transcript now: its transcript store cannot be written. Nothing you sent was kept.")
    still = _("Everything else still works: the lessons, the comparisons and every transcript already stored. Try again later, or tell whoever runs this server.")
    return title, [happened, still]


def form_page(
    problems: list[tuple[str, str]] | None = None, text: str = "", status: int = 200, looks_like: str | None = None,
    store_fault: StoreUnwritable | None = None,
):
    """The paste page; a refusal's problems grouped by what they say (with how many places
    and the first few), at most SHOWN_PROBLEMS lines and a count of the rest, under the name
    of the format the input looks like; above the form, why the store cannot keep a
    transcript, while it cannot."""
    problems = problems or []
    limits = {
        "limit": format_number(store().max_bytes),
        "messages": format_number(store().max_messages),
        "characters": format_number(store().max_characters),
    }
    # The note on tool pairs only under a problem about tool pairs, not under invalid JSON.
    tool_pair_problems = any("tool_call" in where or "tool_call" in what for where, what in problems)
    groups, rest = problem_groups(problems)
    shown = [(", ".join(places[:3]) + ("…" if len(places) > 3 else ""), what, len(places)) for what, places in groups]
    return (
        render_template(
            "transcript_new.html",
            problems=shown,
            more_problems=rest,
            looks_like=_(looks_like) if looks_like else None,
            text=text,
            limits=limits,
            tool_pair_problems=tool_pair_problems,
            formats=transcript_formats(),
            example=EXAMPLE_TEXT,
            store_fault=store_fault_text(store_fault) if store_fault else None,
        ),
        status,
    )
