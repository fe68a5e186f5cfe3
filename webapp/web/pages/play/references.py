"""The values the agent used again (core/analysis/references.py) in the page's words: in the
facts panel at the current call, and in the selected block's detail for the values it
brought in."""

from __future__ import annotations

from flask_babel import gettext as _
from flask_babel import ngettext

from ....core.analysis.references import ReferenceFate, replay_reference_fates
from ....core.engine.calls import Replay

# How many values the facts panel lists at once; the others are folded under one line.
SHOWN = 6


def held_words(held: str) -> str:
    return {
        "verbatim": _("still in the request as written"),
        "summary": _("only in a summary"),
        "preview": _("only in a truncated preview"),
        "lost": _("gone from the request"),
    }[held]


def _held_at(fate: ReferenceFate, number: int) -> str | None:
    for use, held in zip(fate.reference.uses, fate.held):
        if use == number:
            return held
    return None


def reference_checks(result: Replay, number: int) -> dict:
    """The facts panel's values at call `number`: those this call's reply uses (again, when
    an earlier call brought them in), with what the request still holds of each, then those
    lost at an earlier call; and how many values entered so far the agent uses again."""
    fates = [fate for fate in replay_reference_fates(result) if fate.reference.source_call <= number]
    rows = []
    for fate in fates:
        held = _held_at(fate, number)
        if held is not None and fate.reference.source_call == number:
            said = _("new in this request, and this call's reply writes it")
            rows.append({"value": fate.reference.value, "ok": held != "lost", "text": said if held == "verbatim" else _("%(what)s: %(status)s", what=said, status=held_words(held))})
        elif held is not None:
            rows.append({"value": fate.reference.value, "ok": held != "lost", "text": _(
                "this call uses it again (brought in at call %(source)s): %(held)s", source=fate.reference.source_call, held=held_words(held)
            )})
        elif fate.lost_from is not None and fate.lost_from < number:
            rows.append({"value": fate.reference.value, "ok": False, "text": _(
                "brought in at call %(source)s, gone when call %(call)s used it", source=fate.reference.source_call, call=fate.lost_from
            )})
    return {"count": len(fates), "rows": rows, "shown": SHOWN}


def block_references(result: Replay, block_id: str) -> list[str]:
    """One sentence for each value the block brought in that the agent uses again: at which
    calls, and the first of them whose request no longer held it under this strategy."""
    lines = []
    for fate in replay_reference_fates(result):
        reference = fate.reference
        if reference.source != block_id:
            continue
        calls = ", ".join(str(use) for use in reference.uses)
        count = len(reference.uses)
        if fate.lost_from is None:
            lines.append(ngettext(
                "%(value)s from this block is used again at call %(calls)s",
                "%(value)s from this block is used again at calls %(calls)s",
                count, value=reference.value, calls=calls,
            ))
        else:
            lines.append(ngettext(
                "%(value)s from this block is used again at call %(calls)s; with this strategy it is gone from the request at call %(call)s",
                "%(value)s from this block is used again at calls %(calls)s; with this strategy it is gone from the request at call %(call)s",
                count, value=reference.value, calls=calls, call=fate.lost_from,
            ))
    return lines


def reference_json(result: Replay, number: int) -> list[dict]:
    """Every value the agent used again that has entered by call `number`: where it came
    from, the calls that use it, what each held, and the first that had lost it."""
    return [
        {
            "value": fate.reference.value,
            "kind": fate.reference.kind,
            "from_message": fate.reference.source,
            "from_call": fate.reference.source_call,
            "uses": list(fate.reference.uses),
            "held": list(fate.held),
            "lost_from": fate.lost_from,
        }
        for fate in replay_reference_fates(result)
        if fate.reference.source_call <= number
    ]
