"""The stepper: where the lesson sits on the path, the jump chips to each request, autoplay's
speeds, the "next thing that happens" link, and KEEP as the legend names it."""

from __future__ import annotations

from flask import url_for
from flask_babel import gettext as _
from flask_babel import ngettext

from ....core.analysis.story import narration_at
from ....core.triggers import TRIGGERS
from ....core.engine.calls import Call, Replay, per_replay
from ...languages import number as format_number
from ...services import library
from ...state import SPEEDS, PageState


def keep_legend(settings) -> str:
    """KEEP as the legend names it, in the unit it counts."""
    if settings.keep_unit == "tool_results":
        return ngettext(
            "KEEP, the last tool result and what follows it: never compacted",
            "KEEP, the last %(num)d tool results and what follows them: never compacted",
            settings.keep,
        )
    if settings.keep_unit == "turns":
        return ngettext("KEEP, the last turn: never compacted", "KEEP, the last %(num)d turns: never compacted", settings.keep)
    return ngettext("KEEP, the last request: never compacted", "KEEP, the last %(num)d requests: never compacted", settings.keep)


def line_legend(settings) -> str:
    """The red line as the legend names it: where compaction is required, or, under a server
    that cuts the request at a context of its own (Ollama's num_ctx), that context."""
    trigger = TRIGGERS[settings.strategy]
    if trigger is not None and trigger.line_setting:
        return _("red line at %(setting)s: past it, the server leaves out the oldest messages", setting=trigger.line_setting)
    return _("red line: compaction required")


def lesson_path(view: PageState, lang: str) -> dict:
    """Where this scenario sits on the path of lessons: its number, and the next lesson."""
    lessons = library()
    following = lessons.next_lesson(view.scenario.id)
    return {
        "number": lessons.lesson_number(view.scenario.id),
        "next": following
        and {
            "number": lessons.lesson_number(following.id),
            "title": following.text("title", lang),
            "url": url_for("play.page", scenario_id=following.id, lang=view.lang),
        },
    }


def happens(result: Replay, call: Call) -> bool:
    """Something worth stopping at: narration, a compaction, or a request the provider rejects."""
    return bool(
        narration_at(result, call.number) is not None
        or (call.compaction is not None and call.compaction.changed)
        or call.overflow
        or not call.valid
        or call.no_room_for_reply
    )


def next_event(result: Replay, number: int) -> int | None:
    """The next call after `number` where something happens, for the "next thing" control."""
    return next((event for event in happenings(result) if event > number), None)


@per_replay
def happenings(result: Replay) -> list[int]:
    return [call.number for call in result.calls if happens(result, call)]


def request_jumps(view: PageState, result: Replay) -> list[tuple[int, str, str]]:
    """(request number, the link to its first call, its name for a screen reader) for the
    stepper's jump chips: their words translated once, not once per chip."""
    to_call = view.link_to("call", play=False)
    name = _("Request %(number)s (call %(call)s)")
    return [(number, to_call(first), name % {"number": number, "call": first}) for number, first in request_starts(result)]


def speed_links(view: PageState) -> list[tuple[str, str, str]]:
    """(speed, its link, the speed written in the page's language) for the autoplay chips."""
    to_speed = view.link_to("speed")
    return [(speed, to_speed(speed), format_number(float(speed))) for speed in SPEEDS]


@per_replay
def request_starts(result: Replay) -> list[tuple[int, int]]:
    """(request number, its first call) for the jump links."""
    starts: dict[int, int] = {}
    for call in result.calls:
        starts.setdefault(call.request_number, call.number)
    return sorted(starts.items())
