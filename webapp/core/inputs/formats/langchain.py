"""LangChain and LangGraph messages as a program saves them: `messages_to_dict`'s
`{"type": "human", "data": {...}}`, a message's own dump (`{"type": "ai", "content", "tool_calls"}`,
as a LangGraph state holds it under "messages"), or LangChain's serialization
(`{"lc": 1, "type": "constructor", "id": [..., "AIMessage"], "kwargs": {...}}`).

A message's `type` (human, ai, system, tool) is its role; an AI message's `tool_calls` carry
their arguments as an object (`args`); `usage_metadata` is what the provider counted for that
reply (docs/transcripts.md, from langchain-core's messages module).
"""

from __future__ import annotations

import json
from typing import Any

from ...i18n import N_
from ...model import RecordedUsage
from .common import Format, Imported
from .openai_chat import FORMAT as CHAT

ROLES = {"human": "user", "ai": "assistant", "AIMessageChunk": "assistant", "system": "system", "tool": "tool"}
# The class names LangChain's serialization gives in its "id" path.
CLASSES = {"HumanMessage": "human", "AIMessage": "ai", "AIMessageChunk": "ai", "SystemMessage": "system", "ToolMessage": "tool"}


def _fields(item: Any) -> tuple[str, dict] | None:
    """(LangChain type, the message's fields) of one saved message, in any of the three forms."""
    if not isinstance(item, dict):
        return None
    if item.get("lc") == 1 and isinstance(item.get("id"), list) and isinstance(item.get("kwargs"), dict):
        kind = CLASSES.get(str(item["id"][-1]))
        return (kind, item["kwargs"]) if kind else None
    kind = item.get("type")
    if kind not in ROLES or "role" in item:
        return None
    data = item.get("data")
    return (kind, data) if isinstance(data, dict) else (kind, item)


def _messages(raw: Any) -> list | None:
    listed = raw.get("messages") if isinstance(raw, dict) else raw
    return listed if isinstance(listed, list) else None


def _is_langchain(raw: Any) -> bool:
    listed = _messages(raw)
    return bool(listed) and all(_fields(item) is not None for item in listed)


def _text(content: Any) -> Any:
    """A message's content as chat completions takes it: a string, or its text parts."""
    if isinstance(content, list):
        texts = [part if isinstance(part, str) else part.get("text", "") for part in content if isinstance(part, str) or (isinstance(part, dict) and part.get("type") == "text")]
        return "\n".join(texts)
    return content


def _message(kind: str, fields: dict) -> dict:
    message: dict[str, Any] = {"role": ROLES[kind], "content": _text(fields.get("content"))}
    if kind == "tool":
        message["tool_call_id"] = fields.get("tool_call_id")
    calls = fields.get("tool_calls") or []
    if kind == "ai" and calls:
        message["content"] = message["content"] or None
        message["tool_calls"] = [
            {
                "id": call.get("id") if isinstance(call, dict) else None,
                "type": "function",
                "function": {
                    "name": call.get("name") if isinstance(call, dict) else None,
                    "arguments": json.dumps(call.get("args") or {}, ensure_ascii=False) if isinstance(call, dict) else None,
                },
            }
            for call in calls
        ]
    return message


def _read_langchain(raw: Any) -> Imported:
    saved = [_fields(item) for item in _messages(raw)]
    messages = [_message(kind, fields) for kind, fields in saved]
    # Its problems name the input's places: the saved messages keep their order (messages[3]).
    imported = CHAT.read({"messages": messages})
    usage, replies, model = [], 0, None
    for kind, fields in saved:
        if kind != "ai":
            continue
        replies += 1
        counted = fields.get("usage_metadata")
        if isinstance(counted, dict) and isinstance(counted.get("input_tokens"), int):
            cached = (counted.get("input_token_details") or {}).get("cache_read")
            usage.append(RecordedUsage(replies, counted["input_tokens"], counted.get("output_tokens"), cached, f"messages: reply {replies}"))
        model = model or (fields.get("response_metadata") or {}).get("model_name")
    imported.format = "langchain"
    imported.notes = [(N_("LangChain messages read as chat completions: their type is the role, and a tool call's arguments object is written as JSON text."), {}), *imported.notes]
    imported.usage = tuple(usage)
    imported.model = model if isinstance(model, str) else None
    return imported


FORMAT = Format("langchain", N_("LangChain / LangGraph messages"), _is_langchain, _read_langchain, reads_keys=frozenset(("messages",)), shape='messages with a "type" of human, ai or tool and no "role"')
