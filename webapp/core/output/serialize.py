"""Plain data (JSON-ready) views of a replay, shared by the CLI and the JSON twins of pages,
and the one CSV writer of their tables."""

from __future__ import annotations

import csv
import io
from dataclasses import asdict
from typing import Any

from ..analysis.layers import request_layers
from ..analysis.metrics import call_metrics, replay_hits
from ..analysis.pricing import Pricing
from ..analysis.provider_prices import bill_basis, session_basis
from ..analysis.usage import usage_fit
from ..engine.calls import Call, Replay
from ..counting.windows import model_window
from ..i18n import N_
from ..inputs.transcripts import LOGS_LEAVE_OUT, unknown_window
from ..model import Scenario
from ..settings import Settings
from ..counting.tokens import estimated, get_counter
from ..inputs.formats import format_named


def request_body(result: Replay, call: Call) -> dict[str, Any]:
    """The request exactly as the chat-completions API receives it at this call: the
    messages, and the tool definitions in the field the transcript used."""
    body: dict[str, Any] = {"messages": call.request(result.scenario.prefix)}
    if result.scenario.tools:
        body[result.scenario.tools_field] = result.scenario.tools
    return body


# What the well draws of the part of every request a log leaves out (engine/recorded.py), said
# under the reader's own note of what its log does not hold.
FLOOR_MEASURED = N_(
    "Not in the log: %(tokens)s tokens, measured from the provider's count at call %(call)s (what it "
    "counted there beyond the count here), drawn in the floor and sent with every request."
)
FLOOR_NOTHING_ADDED = N_(
    "The provider's count at call %(call)s is no more than the count here, so the floor adds nothing "
    "for what the log leaves out."
)
FLOOR_NOT_COUNTED = N_("The file records no usage to measure it by, so what the log leaves out is not counted.")
# Past these, the provider's count grew too unlike the count here for the text to be the one sent.
RATIO_FAR = 3.0
COUNTS_CANNOT_MATCH = N_(
    "The provider's count grew %(ratio)s times as fast as the count here over %(calls)s recorded "
    "calls: the file does not hold the text as the harness sent it (redacted, cut or rewritten), so "
    "the counts here cannot match the provider's."
)


def origin_json(result: Replay, say=lambda message: message) -> dict[str, Any] | None:
    """Which format a transcript was read as, what reading it rewrote, and what the replay
    made of what the log leaves out, as the well draws it; `say` translates a catalog message
    (the web passes gettext, the CLI keeps English)."""
    scenario = result.scenario
    origin = scenario.origin
    if origin is None:
        return None
    notes = [saying(say, message, values) for message, values in [*origin.notes, *replay_notes(result)]]
    read_as = format_named(origin.format)
    notes += [say(note) % {"counter": say(get_counter(result.settings.counter).label)} for note in read_as.notes]
    found = {"format": origin.format, "label": say(read_as.label), "notes": notes, "settings_from_file": list(origin.settings_from_file)}
    # What the session recorded, for a reader to set beside the replay's own counts.
    if origin.usage:
        found["recorded_usage"] = [asdict(usage) for usage in origin.usage]
    if origin.compactions:
        found["recorded_compactions"] = [asdict(compaction) for compaction in origin.compactions]
    return found


def saying(say, message: str, values: dict) -> str:
    """A catalog message in the reader's words, its whole numbers with thousands separators."""
    return say(message) % {name: f"{value:,}" if isinstance(value, int) else value for name, value in values.items()}


def replay_notes(result: Replay) -> list[tuple[str, dict]]:
    """What the replay made of the recorded usage, as (catalog message, values): the floor's part
    the log leaves out, and a warning when the recorded growth is far from the counted one."""
    unlogged, notes = result.unlogged, []
    if unlogged.tokens:
        notes.append((FLOOR_MEASURED, {"tokens": unlogged.tokens, "call": unlogged.at}))
    elif unlogged.at is not None:
        notes.append((FLOOR_NOTHING_ADDED, {"call": unlogged.at}))
    elif result.scenario.origin.format in LOGS_LEAVE_OUT:
        notes.append((FLOOR_NOT_COUNTED, {}))
    fit = usage_fit(result) if unlogged.at is not None else None
    if fit is not None and fit.ratio is not None and not 1 / RATIO_FAR <= fit.ratio <= RATIO_FAR:
        notes.append((COUNTS_CANNOT_MATCH, {"ratio": f"{fit.ratio:.2f}", "calls": fit.fit_calls}))
    return notes


def window_json(scenario: Scenario, settings: Settings, say=lambda message: message) -> dict[str, Any]:
    """Where the replay's window comes from: "file", "model", "small-chat", "settings" (set by
    hand) or "default" (nothing said it: `unknown` is the sentence that asks for it)."""
    origin = scenario.origin
    if settings.window != scenario.settings.window:
        where = "settings"
    else:
        where = (origin.window_from if origin else "") or ("default" if origin else "scenario")
    named = model_window(origin.model) if origin else None
    source = {"file": origin.window_source if origin else "", "model": named.source if named else ""}.get(where, "")
    asked = unknown_window(scenario, settings)
    return {"tokens": settings.window, "from": where, "source": source, "unknown": saying(say, *asked) if asked else None}


def billing_json(scenario: Scenario, pricing: Pricing, say=lambda message: message) -> dict[str, Any]:
    """Whose prices the bill uses (provider_prices.py), the prices, and the sentence that says it."""
    basis = session_basis(scenario)
    message, values = bill_basis(scenario, pricing)
    return {
        "provider": basis.provider,
        "model": basis.model,
        "session_default": pricing == basis.pricing,
        **pricing.model_dump(),
        "cached_share": pricing.share,
        "says": saying(say, message, values),
    }


def call_json(result: Replay, call: Call) -> dict[str, Any]:
    pinned = {status.id for status in call.pinned}
    return {
        "call": call.number,
        "request_number": call.request_number,
        "turn": call.turn,
        "tokens": call.tokens,
        "provider_tokens": call.provider_tokens,
        "window_share": round(call.tokens / result.settings.real_window, 4),
        "request": call.request(result.scenario.prefix),
        "blocks": [
            {
                "id": block.id,
                "role": block.role,
                "state": block.state,
                "tokens": round(result.block_tokens(block), 2),
                # An image given by a link is counted at an assumed size (docs/counting.md).
                "estimated": estimated(block.message),
                "in_keep": index >= call.keep_start,
                "layer": block.layer,
                "group": block.group,
                "pinned": block.id in pinned,
            }
            for index, block in enumerate(call.blocks)
        ],
        "layers": request_layers(result, call),
        "pinned": [{"id": status.id, "present": status.present, "unchanged": status.unchanged} for status in call.pinned],
        "gone": result.gone(call.number),
        "compaction": asdict(call.compaction) if call.compaction else None,
        "applied_edits": applied_edits(call),
        "events": [{"kind": e.kind, "call": e.call, **e.detail} for e in call.events],
        "sent_total": call.sent_total,
        "summarizer_output_total": call.summarizer_output_total,
        "overflow": call.overflow,
        "valid": call.valid,
        "problems": list(call.problems),
        "no_room_for_reply": call.no_room_for_reply,
        # What the provider counted for this call, when the session recorded it.
        "recorded": asdict(call.recorded) if call.recorded else None,
        # How `tokens` was counted: the counter alone, or built on a recorded call's input.
        "counted_by_counter": call.counted,
        "built_on_recorded_call": call.calibration.call if call.calibration else None,
        "facts": [
            {"text": f.fact.text, "label": f.fact.label, "present": f.present, "needed": f.needed, "lost_from": f.lost_from}
            for f in call.facts
        ],
    }


def applied_edits(call: Call) -> list[dict[str, Any]]:
    """What clear-tool-results did at this call, as Anthropic's response reports it
    (`context_management.applied_edits`)."""
    compaction = call.compaction
    if compaction is None or not compaction.cleared:
        return []
    return [
        {
            "type": "clear_tool_uses_20250919",
            "cleared_tool_uses": len(compaction.cleared),
            "cleared_input_tokens": compaction.cleared_tokens,
        }
    ]


def recorded_json(result: Replay) -> dict[str, Any] | None:
    """The recorded usage against the counts: the floor's part the log does not hold (in the
    counter's tokens, and the call it was measured at) and the ratio fit on the recorded calls
    (analysis/usage.py). None when the session recorded no usage."""
    fit = usage_fit(result)
    if fit is None:
        return None
    unlogged = result.unlogged
    return {"unlogged_tokens": unlogged.tokens, "measured_at_call": unlogged.at, **asdict(fit)}


def replay_json(result: Replay) -> dict[str, Any]:
    """The whole replay, each call with the manual's metrics at the default prices (the
    command line's `replay --json`)."""
    pricing = session_basis(result.scenario).pricing
    hits = replay_hits(result, pricing)
    return {
        "scenario": result.scenario.id,
        "title": result.scenario.text("title"),
        "read_as": origin_json(result),
        "settings": result.settings.model_dump(),
        "window": window_json(result.scenario, result.settings),
        "billing": billing_json(result.scenario, pricing),
        "floor_tokens": round(result.floor_tokens, 2),
        "recorded_usage": recorded_json(result),
        "tools": result.scenario.tools,
        "warnings": result.warnings,
        "calls": [
            {**call_json(result, call), "metrics": call_metrics(result, call.number, pricing, hits)} for call in result.calls
        ],
    }


def csv_text(rows: list[dict[str, Any]]) -> str:
    """Flat rows as CSV, a header of the first row's keys, one line per row (`\n`): the
    comparison's and the sweep's tables, on the pages and on the command line."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]) if rows else [], lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()
