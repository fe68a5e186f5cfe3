"""The glossary: what each thing drawn on the play page means, and each event of the log.

One list serves the glossary page, the event log's explanations on hover and focus, and the
tests that check that every event the replay can log is explained.
"""

from __future__ import annotations

from flask import Blueprint, render_template
from flask_babel import gettext as _

from ...core.counter_catalog import OPEN_COUNTERS
from ...core.i18n import N_
from ..languages import strategy_descriptions
from ..settings_form import counters_to_add

blueprint = Blueprint("glossary", __name__)

# Every kind of event a replay logs (core/engine/replay.py, `Event`), in the order a call logs them.
EVENTS = {
    "user_message": N_("A user request enters the history. It waits there for the next model call."),
    "compact": N_(
        "The hammer: the request was above the red line, so the loop compacted the history before the "
        "model call. Shown as tokens before → after."
    ),
    "turn_start": N_("The loop starts a turn: one pass of calling the model (and running the tools it asks for) for the current request."),
    "model_call": N_("The request is sent to the model: the floor plus every message of the history, with its size in tokens."),
    "tool_call": N_("The model's reply asks for a tool; the loop runs it."),
    "tool_result": N_("The tool's output enters the history, as a message that answers its call."),
    "turn_end": N_("The model answered without asking for a tool: the turn is over."),
    "warning": N_(
        "The request passed the alert line but not the red line: a warning in the log, nothing is compacted yet."
    ),
    "notice": N_(
        "Every level of the manual's strategy ran and the request was still above its target: the loop adds a "
        "notice telling the user that old details may no longer be available. It is also a block in the well."
    ),
    "pinned_kept": N_(
        "Compaction stopped above where it aims: what was left to cut was pinned, and no strategy touches a pinned message."
    ),
    "recorded_compaction": N_(
        "The harness that wrote the session compacted its history before this call, as its log records: its own "
        "count of what it replaced, and the summary that took its place. The replay itself keeps the whole history."
    ),
    "overflow": N_("Gulp: the request is larger than the model's window. The provider rejects it, or silently cuts its oldest part."),
    "invalid_request": N_("An API rejects the request: a tool result no longer follows the message with its call, or a call lost its result."),
    "no_room_for_reply": N_("The request fits, but the reply does not: the provider rejects it or cuts the reply short."),
    "pitfall": N_(
        "A trap users of a production harness report, seen at this call: it compacts and stays above its line "
        "(so it compacts at every call), the compaction saves only a few percent, or its summary sits before "
        "messages that had not changed, so the prompt cache writes them again."
    ),
}


# Each event's name in the reader's words; the log and the glossary give the loop's own name
# (the key above) on hover and beside it.
EVENT_NAMES = {
    "user_message": N_("new request"),
    "compact": N_("compaction"),
    "turn_start": N_("turn starts"),
    "model_call": N_("model call"),
    "tool_call": N_("tool call"),
    "tool_result": N_("tool result"),
    "turn_end": N_("turn ends"),
    "warning": N_("alert"),
    "notice": N_("notice to the user"),
    "pinned_kept": N_("pinned, kept"),
    "recorded_compaction": N_("the harness compacted"),
    "overflow": N_("overflow"),
    "invalid_request": N_("request refused"),
    "no_room_for_reply": N_("no room for the reply"),
    "pitfall": N_("pitfall"),
}


@blueprint.app_template_global()
def event_name(kind: str) -> str:
    return _(EVENT_NAMES[kind]) if kind in EVENT_NAMES else kind


@blueprint.app_template_global()
def event_meaning(kind: str) -> str:
    return _(EVENTS[kind]) if kind in EVENTS else ""


@blueprint.get("/glossary")
def page():
    return render_template(
        "glossary.html",
        events=[(kind, _(meaning)) for kind, meaning in EVENTS.items()],
        strategies=strategy_descriptions(),
        open_counters=", ".join(_(counter.label) for counter in OPEN_COUNTERS),  # with the models each counts for
        counters_to_add=counters_to_add(),  # what the settings form says while the extra is missing
    )
