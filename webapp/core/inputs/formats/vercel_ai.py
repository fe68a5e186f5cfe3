"""Vercel AI SDK messages (`ModelMessage`, the `messages` of generateText and streamText): a
role and a content that is a string or a list of parts; the assistant's `tool-call` parts
(`toolCallId`, `toolName`, the arguments as an object: `input`, or `args` before v5) and the
tool message's `tool-result` parts (`output`, or `result` before v5), each result its own
message here (docs/transcripts.md, from the AI SDK's ModelMessage reference).
"""

from __future__ import annotations

import json
from typing import Any

from ...i18n import N_
from .common import Format, FormatError, Imported, relocate
from .openai_chat import FORMAT as CHAT

TOOL_PARTS = ("tool-call", "tool-result")


def _messages(raw: Any) -> list | None:
    listed = raw.get("messages") if isinstance(raw, dict) else raw
    return listed if isinstance(listed, list) else None


def _parts(message: Any) -> list:
    content = message.get("content") if isinstance(message, dict) else None
    return [part for part in content if isinstance(part, dict)] if isinstance(content, list) else []


def _is_vercel(raw: Any) -> bool:
    """Messages with a role, one of whose parts is a tool call or a tool result in the SDK's
    own spelling (a chat without tools reads the same as chat completions)."""
    listed = _messages(raw)
    return bool(listed) and any(part.get("type") in TOOL_PARTS for message in listed for part in _parts(message))


def _text(parts: list) -> str:
    """The text parts (reasoning parts are the model's own notes, not sent back as text)."""
    return "\n".join(part.get("text", "") for part in parts if part.get("type") == "text")


def _output(part: dict) -> str:
    """A tool result's output as the text the model reads: v5's {type, value}, or the value."""
    output = part.get("output", part.get("result"))
    if isinstance(output, dict) and "value" in output and output.get("type") in ("text", "json", "error-text", "error-json", "content"):
        output = output["value"]
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)


def _converted(message: dict) -> list[dict]:
    """One SDK message as chat-completions messages (a tool message holds several results)."""
    role, parts = message.get("role"), _parts(message)
    if not parts:
        return [message]
    if role == "tool":
        return [{"role": "tool", "tool_call_id": part.get("toolCallId"), "content": _output(part)} for part in parts if part.get("type") == "tool-result"]
    converted: dict[str, Any] = {"role": role, "content": _text(parts)}
    calls = [part for part in parts if part.get("type") == "tool-call"]
    if calls:
        converted["content"] = converted["content"] or None
        converted["tool_calls"] = [
            {"id": part.get("toolCallId"), "type": "function", "function": {"name": part.get("toolName"), "arguments": json.dumps(part.get("input", part.get("args")) or {}, ensure_ascii=False)}}
            for part in calls
        ]
    return [converted]


def _read_vercel(raw: Any) -> Imported:
    messages, places = [], []
    for index, message in enumerate(_messages(raw)):
        converted = _converted(message)
        messages += converted
        places += [f"messages[{index}]"] * len(converted)
    try:
        imported = CHAT.read({"messages": messages})
    except FormatError as error:  # named by the input's own places: a tool message may hold several results
        raise FormatError([(relocate(where, what, places)) for where, what in error.problems]) from None
    imported.origins = places
    imported.format = "vercel-ai"
    imported.notes = [(N_("Vercel AI SDK messages read as chat completions: each tool result is its own message, and a tool call's arguments object is written as JSON text."), {}), *imported.notes]
    return imported


FORMAT = Format("vercel-ai", N_("Vercel AI SDK messages"), _is_vercel, _read_vercel, reads_keys=frozenset(("messages",)), shape='messages whose parts include "tool-call" or "tool-result"')
