"""Ollama /api/chat request bodies: {"model", "messages", "tools", "stream", "options"}. Tool
calls carry their arguments as an object and no id; a tool result names at most its tool
(`tool_name`), so calls and results are paired in order; a null where a field is optional is
accepted (docs/transcripts.md, from Ollama's docs/api.md). `options.num_ctx`, the context Ollama
runs the model at, is the `ollama` strategy's setting."""

from __future__ import annotations

import json
from typing import Any

from ...i18n import N_
from .common import Check, Format, FormatError, Imported, Message, check_tools, said

# Request fields of Ollama's own ("stream" is OpenAI's too).
OLLAMA_KEYS = ("options", "keep_alive", "format", "think")
OLLAMA_ROLES = ("system", "user", "assistant", "tool")
NOTES = {
    "paired": N_("Ollama's tool calls have no id: %(count)s calls were paired with their results in order (a result naming its tool takes the oldest open call of that name)."),
    "thinking": N_("Thinking left out: %(count)s messages."),
    "images": N_("Images: %(count)s, sent as image parts."),
}


def _is_ollama(raw: Any) -> bool:
    """An object with "messages" and a mark of Ollama's (its request fields, arguments as an
    object, a tool result's tool_name), or a /api/chat response ({"message", "done"})."""
    if not isinstance(raw, dict):
        return False
    if "message" in raw and "done" in raw:
        return True
    messages = raw.get("messages")
    if not isinstance(messages, list):
        return False
    if any(key in raw for key in OLLAMA_KEYS):
        return True
    for message in messages:
        if isinstance(message, dict) and ("tool_name" in message or "images" in message):
            return True
        for call in (message.get("tool_calls") or []) if isinstance(message, dict) else []:
            if isinstance(call, dict) and isinstance((call.get("function") or {}).get("arguments"), dict):
                return True
    return False


def _without_nulls(value: Any) -> Any:
    """A tool definition with its null fields left out, as Ollama reads them."""
    if isinstance(value, dict):
        return {key: _without_nulls(item) for key, item in value.items() if item is not None}
    return [_without_nulls(item) for item in value] if isinstance(value, list) else value


def _calls(check: Check, message: dict, at: str) -> list[dict]:
    """The assistant's tool calls, chat-completions style: the arguments as a JSON string, the
    id Ollama may give (else None, for the caller to number)."""
    calls = []
    for position, call in enumerate(message.get("tool_calls") or []):
        where = f"{at}.tool_calls[{position}].function"
        function = call.get("function") if isinstance(call, dict) else None
        if not check.object(function, where, "an object with name and arguments") or not check.string(function.get("name"), f"{where}.name", nonempty=True):
            continue
        arguments = function.get("arguments") or {}
        calls.append({"id": call.get("id") or None, "type": "function", "function": {"name": function["name"], "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)}})
    return calls


def _read_ollama(raw: dict) -> Imported:
    """Long because pairing in order walks the messages once, with the calls still open."""
    if "message" in raw and "messages" not in raw:
        raise FormatError([("message", "this is a response: it holds only the model's reply; paste the request body, with its \"messages\" (and \"tools\")")])
    check = Check()
    counts = {key: 0 for key in NOTES}
    messages: list[Message] = []
    origins: list[str] = []
    open_calls: list[tuple[str, str]] = []  # (name, id) of calls without their result yet
    made = 0
    for index, message in enumerate(raw["messages"]):
        at = f"messages[{index}]"
        if not check.object(message, at, "a message object") or not check.one_of(message.get("role"), OLLAMA_ROLES, f"{at}.role"):
            continue
        role, content = message["role"], message.get("content") or ""
        if not check.string(content, f"{at}.content"):
            continue
        counts["thinking"] += bool(message.get("thinking"))
        if role == "tool":
            named = message.get("tool_name") or message.get("name")
            match = next((pair for pair in open_calls if pair[0] == named), open_calls[0] if open_calls else None)
            if match is None:
                check.add(at, "a tool result with no call before it that it could answer")
                continue
            open_calls.remove(match)
            messages.append({"role": "tool", "tool_call_id": match[1], "content": content})
            origins.append(at)
            continue
        rewritten: Message = {"role": role, "content": content}
        images = message.get("images") or []
        if images and role == "user" and check.array(images, f"{at}.images", "a list of base64 images"):
            counts["images"] += len(images)
            rewritten["content"] = [{"type": "text", "text": content}] + [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{image}"}} for image in images]
        if role == "assistant" and message.get("tool_calls"):
            calls = _calls(check, message, at)
            for call in calls:
                made += call["id"] is None
                call["id"] = call["id"] or f"call_{made}"
                open_calls.append((call["function"]["name"], call["id"]))
            rewritten |= {"content": content or None, "tool_calls": calls}
        messages.append(rewritten)
        origins.append(at)
    tools = _without_nulls(raw.get("tools") or [])
    check_tools(check, tools, "tools")
    if check.problems:
        raise FormatError(check.problems)
    counts["paired"] = made
    model = raw.get("model") if isinstance(raw.get("model"), str) else None
    num_ctx = num_ctx_of(raw)
    settings = {"num_ctx": num_ctx} if num_ctx else {}
    return Imported("ollama", messages, tools, "tools", origins, said(counts, NOTES), model=model, harness_settings=settings)


def num_ctx_of(request: dict) -> int | None:
    """The context a request asks Ollama to run at (`options.num_ctx`), when it is a number the
    `num_ctx` setting takes (Ollama raises one under 4 to 4)."""
    options = request.get("options") if isinstance(request.get("options"), dict) else {}
    value = options.get("num_ctx")
    return value if type(value) is int and 4 <= value <= 10_000_000 else None


FORMAT = Format("ollama", N_("Ollama /api/chat body"), _is_ollama, _read_ollama, reads_keys=frozenset(("message", "done", "messages", "options", "keep_alive", "format", "think", "tools", "model")), shape='an /api/chat request with "messages" and Ollama fields such as "options" or "keep_alive", or its response with "message" and "done"')
