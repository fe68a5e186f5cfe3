"""The parts of a chat message that every counter reads (OpenAI chat-completions JSON)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Message = dict[str, Any]

# Real chats nest a few levels (a JSON schema a dozen). Python's JSON reader and writer recurse
# once a level, and a page renders or re-encodes a chat from deep in a request's stack: a
# transcript nested deeper is refused at load (inputs/scenarios.py), and a call's arguments
# nested deeper are counted as their text (chat_render.py).
MAX_NESTING = 64


def nests_deeper(value: Any, limit: int = MAX_NESTING) -> bool:
    """Whether lists and objects nest more than `limit` levels deep in `value` (walked without
    recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            if depth > limit:
                return True
            stack += [(child, depth + 1) for child in (item.values() if isinstance(item, dict) else item)]
    return False


def content_text(content: Any) -> str:
    """The text a model reads in a message's content: a string, or the text (and refusal) parts of a list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text") or part.get("refusal") or "") for part in content if isinstance(part, dict))
    return str(content)


def tool_call_texts(message: Message) -> list[tuple[str, str]]:
    """(function name, arguments) of each tool call of an assistant message."""
    calls = message.get("tool_calls") or []
    out = []
    for call in calls:
        function = call.get("function") or {}
        out.append((str(function.get("name", "")), str(function.get("arguments", ""))))
    return out


def call_names(messages: Iterable[Message]) -> dict[str, str]:
    """Function name of each tool call id in these messages."""
    names = {}
    for message in messages:
        for call in message.get("tool_calls") or []:
            if isinstance(call, dict) and isinstance(call.get("function"), dict):
                names[str(call.get("id"))] = str(call["function"].get("name", ""))
    return names
