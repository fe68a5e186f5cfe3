"""The selected block's detail: its whole content, its tool calls, its images, and its tokens
under every counter."""

from __future__ import annotations

from flask_babel import get_translations
from flask_babel import gettext as _

from ....core.counting.images import REMOTE_IMAGE_SIZE, image_parts, inline_image_size
from ....core.counting.template_counter import TemplateCounter
from ....core.counting.tokens import COUNTERS, content_text, estimated, get_counter
from ....core.drawing.block_versions import latest_version, tool_names
from ....core.drawing.well_parts import block_kind
from ....core.engine.history import searchable
from ....core.engine.calls import Replay, script_call_names
from ...languages import whole_numbers
from ...state_error import StateError
from ...story import message_name
from .well import block_label


def prefix_text(prefix) -> str:
    """The floor's messages as a reader reads them: a lone system prompt as its text, several
    messages (examples, an opening reply) each under its role and name."""
    if len(prefix) == 1 and prefix[0].get("role") == "system" and not prefix[0].get("name"):
        return content_text(prefix[0].get("content"))
    return "\n\n".join(
        f"[{' '.join(filter(None, [str(m.get('role', '')), str(m.get('name') or '')]))}]\n{searchable(m)}" for m in prefix
    )


def block_detail(result: Replay, number: int, block_id: str) -> dict:
    """Everything about one block: its whole content and its tokens under each counter."""
    call = result.calls[number - 1]
    if block_id == "floor":
        prefix = result.scenario.prefix
        tools = result.scenario.tools
        return {
            "id": "floor",
            "label": _("floor: system prompt + tools"),
            "present": True,
            "content": prefix_text(prefix),
            "tools": [t.get("function", t).get("name", "") for t in tools],
            "tool_calls": [],
            "counts": [
                (name, _(counter.label), round(counter.block_tokens(result.scenario.floor_units(counter))))
                for name, counter in block_counters(result)
            ],
            "note": _("The estimate counter, like the compact() code of the Compaction pattern page this playground follows, counts the system prompt only, not the tool definitions."),
            "template": template_part(result),
            "estimated": "",
            "images": [],
        }
    current = {b.id: b for b in call.blocks}
    block = current.get(block_id) or latest_version(result, block_id, number)
    if block is None:
        known = any(item.id == block_id for item in result.scenario.script) or block_id[:1] in ("s", "n")
        if not known:
            raise StateError(400, [_("block: got %(got)r, this scenario has no such block", got=block_id)])
        return {"id": block_id, "label": message_name(block_id), "present": False, "content": "", "counts": [], "tools": [], "tool_calls": [], "note": _("This message has not entered the history yet at this call."), "estimated": "", "images": []}
    kind, label = block_kind(block), block_label(block, tool_names(result), get_translations().gettext)
    calls = [
        f"{(c.get('function') or {}).get('name', '')}({(c.get('function') or {}).get('arguments', '')})"
        for c in block.message.get("tool_calls") or []
    ]
    note = ""
    if block_id not in current:
        note = _("Not sent at this call: compaction removed it. This is its last version.")
    return {
        "id": block.id,
        "kind": kind,
        "label": label,
        "state": block.state,
        "present": block_id in current,
        "content": block.text,
        "tool_calls": calls,
        "tools": [],
        "counts": [(name, _(counter.label), round(counter.block_tokens(counter.measure(block.message)))) for name, counter in block_counters(result)],
        "note": note,
        "estimated": estimate_note(block.message),
        "images": [image_caption(url, detail) for url, detail in image_parts(block.message)],
    }


def image_caption(url: str, detail: str) -> str:
    """An image part in a few words: its link, or the kind and size of an inline image."""
    size = inline_image_size(url)
    if url.startswith("data:"):
        kind = url[5:].split(";", 1)[0].split(",", 1)[0] or "data"
        text = f"{kind} {size[0]} × {size[1]}" if size else kind
    else:
        text = url if len(url) <= 80 else url[:79] + "…"
    return text if detail == "auto" else f"{text} (detail: {detail})"


def estimate_note(message: dict) -> str:
    """Why a block's count is marked ≈, or "" when it is not an estimate."""
    if not estimated(message):
        return ""
    width, height = REMOTE_IMAGE_SIZE
    return _(
        "≈ estimated: this message holds an image given by a link, which the playground never downloads. It is counted as a %(width)s × %(height)s picture, by OpenAI's image rule.",
        width=width,
        height=height,
    )


def template_part(result: Replay) -> str:
    """For an open model's counter, how much of the floor is its chat template's own text."""
    counter = get_counter(result.settings.counter)
    if not isinstance(counter, TemplateCounter):
        return ""
    scenario, tokens = result.scenario, whole_numbers()
    return _(
        "With %(counter)s, %(tokens)s of the floor's %(floor)s tokens are the chat template's own text, which the model reads around the system prompt and the tools: turn headers, the tools' preamble, the prompt of the reply.",
        counter=counter.name,
        tokens=tokens(counter.template_tokens(scenario.prefix, scenario.tools)),
        floor=tokens(counter.block_tokens(scenario.floor_units(counter))),
    )


def block_counters(result: Replay) -> list[tuple[str, object]]:
    """The built-in counters, and the replay's own when it is an open model's (each of those
    loads a vocabulary of its own, seconds the first time), reading tool results under their
    function's name as the replay does."""
    names = script_call_names(result.scenario)
    chosen = result.settings.counter
    counters = {**COUNTERS, **({} if chosen in COUNTERS else {chosen: get_counter(chosen)})}
    return [(name, counter.with_call_names(names)) for name, counter in counters.items()]
