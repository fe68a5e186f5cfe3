"""Plain data (JSON-ready) views of a replay, shared by the CLI and the JSON twins of pages."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ..analysis.layers import request_layers
from ..analysis.metrics import call_metrics, replay_hits
from ..analysis.pricing import Pricing
from ..analysis.usage import usage_fit
from ..engine.calls import Call, Replay
from ..model import Scenario
from ..counting.tokens import estimated, get_counter
from ..inputs.formats import format_named


def request_body(result: Replay, call: Call) -> dict[str, Any]:
    """The request exactly as the chat-completions API receives it at this call: the
    messages, and the tool definitions in the field the transcript used."""
    body: dict[str, Any] = {"messages": call.request(result.scenario.prefix)}
    if result.scenario.tools:
        body[result.scenario.tools_field] = result.scenario.tools
    return body


def origin_json(scenario: Scenario, counter: str, say=lambda message: message) -> dict[str, Any] | None:
    """Which format a transcript was read as and what reading it rewrote; `say` translates a
    catalog message (the web passes gettext, the CLI keeps English)."""
    origin = scenario.origin
    if origin is None:
        return None
    notes = [say(message) % {name: f"{value:,}" if isinstance(value, int) else value for name, value in values.items()} for message, values in origin.notes]
    read_as = format_named(origin.format)
    notes += [say(note) % {"counter": say(get_counter(counter).label)} for note in read_as.notes]
    found = {"format": origin.format, "label": say(read_as.label), "notes": notes, "settings_from_file": list(origin.settings_from_file)}
    # What the session recorded, for a reader to set beside the replay's own counts.
    if origin.usage:
        found["recorded_usage"] = [asdict(usage) for usage in origin.usage]
    if origin.compactions:
        found["recorded_compactions"] = [asdict(compaction) for compaction in origin.compactions]
    return found


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
    pricing = Pricing()
    hits = replay_hits(result, pricing)
    return {
        "scenario": result.scenario.id,
        "title": result.scenario.text("title"),
        "read_as": origin_json(result.scenario, result.settings.counter),
        "settings": result.settings.model_dump(),
        "floor_tokens": round(result.floor_tokens, 2),
        "recorded_usage": recorded_json(result),
        "tools": result.scenario.tools,
        "warnings": result.warnings,
        "calls": [
            {**call_json(result, call), "metrics": call_metrics(result, call.number, pricing, hits)} for call in result.calls
        ],
    }
