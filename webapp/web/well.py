"""The well's words: each block's label and accessible name, and each trace's, in the page's
language, over the pure layout of webapp/core/well.py (geometry, motion, label placement)."""

from __future__ import annotations

from flask_babel import format_number
from flask_babel import gettext as _

from ..core.history import Block
from ..core.replay import Replay
from ..core.well import Shape, Well, layout, tool_names


def draw(replay: Replay, number: int, selected: str | None = None) -> Well:
    """The well of call `number` with its labels written."""
    well = layout(replay, number, selected)
    names = tool_names(replay)
    for shape in well.shapes:
        shape.label = block_label(shape.block, names) if shape.block else _("floor: system prompt + tools")
        shape.name = accessible_name(shape)
    for trace in well.traces:
        trace.label = _("%(count)d dropped (%(tokens)s tokens)", count=len(trace.ids), tokens=format_number(round(trace.tokens)))
    return well


def block_label(block: Block, names: dict[str, str]) -> str:
    """What a block is, in words: its role, and the tool it calls or answers."""
    if block.state == "summary":
        return _("summary of %(count)d messages", count=len(block.replaces))
    if block.role == "tool":
        return _("tool result: %(name)s", name=names.get(block.message.get("tool_call_id", ""), "?"))
    if block.role == "function":
        return _("tool result: %(name)s", name=block.message.get("name", "?"))
    if block.role == "assistant":
        called = [(call.get("function") or {}).get("name", "") for call in block.message.get("tool_calls") or []]
        if called:
            return _("assistant → %(tools)s", tools=", ".join(called))
        return _("assistant")
    if block.role == "user":
        return _("user")
    return block.role or _("message")


def accessible_name(shape: Shape) -> str:
    tokens = format_number(round(shape.tokens))
    if shape.kind == "floor":
        return _("%(label)s, %(tokens)s tokens, never compacted", label=shape.label, tokens=tokens)
    where = _("in KEEP") if shape.in_keep else _("outside KEEP")
    state = {
        "original": _("kept as sent"),
        "truncated": _("truncated to a note (was %(was)s tokens)", was=format_number(round(shape.was or 0))),
        "cleared": _("cleared to a placeholder (was %(was)s tokens)", was=format_number(round(shape.was or 0))),
        "summary": _("a summary"),
    }.get(shape.state, shape.state)
    if shape.orphan:
        state += ", " + _("its call is gone: the API rejects the request")
    return _("%(label)s, %(tokens)s tokens, %(state)s, %(where)s", label=shape.label, tokens=tokens, state=state, where=where)
