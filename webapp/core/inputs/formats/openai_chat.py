"""OpenAI chat completions, the form every transcript ends in: a list of messages, or an
object with "messages" and "tools" (or the legacy "functions"), kept exactly as given. Its
checks (`chat_problems`) are what the chat-completions API would refuse, and run on every
format's rewritten messages."""

from __future__ import annotations

import unicodedata
from typing import Any

from ...i18n import N_
from .common import Check, Format, FormatError, Imported, Message, Problems, check_functions, check_tools, kind, relocate, show
from .content_parts import typed_parts

CHAT_ROLES = ("system", "developer", "user", "assistant", "tool", "function")
# The content parts the chat-completions API accepts, by role.
PARTS_BY_ROLE = {
    "system": ("text",),
    "developer": ("text",),
    "tool": ("text",),
    "function": ("text",),
    "user": ("text", "image_url", "input_audio", "file"),
    "assistant": ("text", "refusal"),
}
IMAGE_DETAILS = ("low", "high", "auto")


def _is_chat(raw: Any) -> bool:
    """Any list of messages, or an object with "messages": tried last, after the formats
    whose shapes are narrower."""
    return isinstance(raw, list) or (isinstance(raw, dict) and "messages" in raw)


def _read_chat(raw: Any) -> Imported:
    check = Check()
    top = raw if isinstance(raw, dict) else {"messages": raw}
    messages = top.get("messages")
    if messages is None:
        raise FormatError([("messages", "required field is missing")])
    if not check.array(messages, "messages", "a list of messages") or not messages:
        raise FormatError(check.problems or [("messages", "the transcript has no message: at least 1 is needed")])
    tools, tools_field = [], "tools"
    if "tools" in top and "functions" in top:
        check.add("functions", 'a request has either "tools" or the legacy "functions", not both')
    elif "functions" in top:
        tools, tools_field = top["functions"], "functions"
        check_functions(check, tools, "functions")
    elif "tools" in top:
        tools = top["tools"]
        check_tools(check, tools, "tools")
    if check.problems:
        raise FormatError(check.problems)
    notes = []
    if tools_field == "functions" or any(isinstance(m, dict) and ("function_call" in m or m.get("role") == "function") for m in messages):
        notes.append((N_("Legacy function calling (functions, function_call, role function) is kept as it is sent."), {}))
    # The model a request names picks its window and counter (transcripts.with_file_settings), as
    # every format's does: a vLLM or OpenRouter body names an open model there.
    model = top.get("model") if isinstance(top.get("model"), str) else None
    return Imported("openai-chat", messages, tools, tools_field, [f"messages[{i}]" for i in range(len(messages))], notes, model=model)


def chat_problems(imported: Imported) -> Problems:
    """What the chat-completions API would refuse in the messages' shapes, and tool call ids a
    reader cannot tell apart. Places are the input's own (`origins`)."""
    check = Check()
    for index, message in enumerate(imported.messages):
        _check_message(check, message, f"messages[{index}]")
    if not check.problems:
        _check_invisible_ids(check, imported.messages)
    if imported.format == "openai-chat":
        return check.problems
    return [relocate(where, what, imported.origins) for where, what in check.problems]


def _check_message(check: Check, message: Any, at: str) -> None:
    if not check.object(message, at, "a message object"):
        return
    role = message.get("role")
    if not check.one_of(role, CHAT_ROLES, f"{at}.role"):
        return
    content = message.get("content")
    if content is None:
        if role != "assistant" and "content" in message:
            check.add(f"{at}.content", f"a {role} message needs content, got null")
        elif role != "assistant":
            check.add(f"{at}.content", "required field is missing")
    elif isinstance(content, list):
        for part, where in typed_parts(check, content, f"{at}.content", PARTS_BY_ROLE[role], "a content part object"):
            _check_part(check, part, where)
    elif not isinstance(content, str):
        check.add(f"{at}.content", f"expected a string or a list of content parts, got {kind(content)}")
    if "name" in message:
        check.string(message["name"], f"{at}.name")
    if message.get("refusal") is not None:
        check.string(message["refusal"], f"{at}.refusal")
    if role == "tool":
        check.string(message.get("tool_call_id"), f"{at}.tool_call_id", nonempty=True)
    if role == "function":
        check.string(message.get("name"), f"{at}.name", nonempty=True)
    if message.get("tool_calls") is not None:
        if role != "assistant":
            check.add(f"{at}.tool_calls", "only an assistant message calls tools")
        elif check.array(message["tool_calls"], f"{at}.tool_calls", "a list of tool calls"):
            for position, call in enumerate(message["tool_calls"]):
                _check_call(check, call, f"{at}.tool_calls[{position}]")
    if message.get("function_call") is not None:
        call = message["function_call"]
        where = f"{at}.function_call"
        if role != "assistant":
            check.add(where, "only an assistant message calls a function")
        elif check.object(call, where, "an object with name and arguments"):
            check.string(call.get("name"), f"{where}.name", nonempty=True)
            check.string(call.get("arguments"), f"{where}.arguments")


def _check_part(check: Check, part: dict, at: str) -> None:
    """The fields of a content part of an accepted type."""
    part_type = part["type"]
    if part_type == "text":
        check.string(part.get("text"), f"{at}.text")
    elif part_type == "refusal":
        check.string(part.get("refusal"), f"{at}.refusal")
    elif part_type == "image_url":
        image = part.get("image_url")
        if check.object(image, f"{at}.image_url", "an object with url"):
            check.string(image.get("url"), f"{at}.image_url.url", nonempty=True)
            if "detail" in image:
                check.one_of(image["detail"], IMAGE_DETAILS, f"{at}.image_url.detail")
    else:  # input_audio, file
        check.object(part.get(part_type), f"{at}.{part_type}")


def _check_call(check: Check, call: Any, at: str) -> None:
    if not check.object(call, at, "a tool call object"):
        return
    check.string(call.get("id"), f"{at}.id", nonempty=True)
    if "type" in call:
        check.one_of(call["type"], ("function",), f"{at}.type")
    function = call.get("function")
    if check.object(function, f"{at}.function", "an object with name and arguments"):
        check.string(function.get("name"), f"{at}.function.name", nonempty=True)
        if not isinstance(function.get("arguments", ""), str):
            check.add(f"{at}.function.arguments", f"the arguments must be a JSON string, as the API sends them, got {kind(function['arguments'])}")


def _visible(text: str) -> str:
    """The text as a reader sees it: without format characters (zero-width spaces and joiners,
    direction marks, the byte-order mark)."""
    return "".join(c for c in text if unicodedata.category(c) != "Cf")


def _check_invisible_ids(check: Check, messages: list[Message]) -> None:
    """Two tool call ids that differ only by invisible characters are different calls for an
    API but the same for anyone reading the replay: refused, naming both."""
    seen: dict[str, tuple[str, str]] = {}
    for index, message in enumerate(messages):
        for position, call in enumerate(message.get("tool_calls") or []):
            call_id = call["id"]
            visible = _visible(call_id)
            where = f"messages[{index}].tool_calls[{position}].id"
            if visible in seen and seen[visible][0] != call_id:
                first, first_at = seen[visible]
                hidden = sorted({f"U+{ord(c):04X} {unicodedata.name(c, '?')}" for c in call_id + first if unicodedata.category(c) == "Cf"})
                check.add(
                    where,
                    f"{show(call_id)} differs from {show(first)} ({first_at}) only by invisible characters "
                    f"({', '.join(hidden)}): give the calls ids a reader can tell apart",
                )
            seen.setdefault(visible, (call_id, where))


FORMAT = Format("openai-chat", N_("OpenAI chat completions"), _is_chat, _read_chat, reads_keys=frozenset(("messages", "tools", "functions", "model")), shape='a JSON list of messages, or an object with "messages"')
