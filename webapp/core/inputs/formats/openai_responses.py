"""OpenAI Responses API input items: a list of items, or an object with "input" (and
"instructions", "tools"). Messages stay messages; function_call items become the assistant's
tool calls and function_call_output items tool messages; reasoning items, whose content the
caller cannot see, are left out."""

from __future__ import annotations

from typing import Any

from ...i18n import N_
from .common import BUILTIN_TOOLS_LEFT_OUT, Check, Format, FormatError, Imported, Message, function_tools, said
from .content_parts import text_part, typed_parts

RESPONSES_ITEMS = ("message", "function_call", "function_call_output", "reasoning")
RESPONSES_ROLES = ("user", "assistant", "system", "developer")
RESPONSES_PARTS = ("input_text", "output_text", "refusal", "input_image")
# What reading rewrote, said when its count (`%(count)s`) is not 0.
REWRITTEN = {
    "tools": N_("function_call items became the assistant's tool calls, function_call_output items tool messages."),
    "instructions": N_("The instructions are sent as a system message ahead of the first item."),
    "reasoning": N_("Reasoning items left out: %(count)s. Their content is hidden from the caller (encrypted or summarised), so their tokens cannot be counted here."),
    "builtin": BUILTIN_TOOLS_LEFT_OUT,
    "output_images": N_("Tool outputs holding images: %(count)s. Each output's images are sent in a user message after it, since a chat-completions tool message holds only text."),
}


def _is_responses(raw: Any) -> bool:
    """An object with "input" (and neither the "messages" of a chat nor the "history" of a
    trajectory), or a list holding an item with a type (a message item has a role too)."""
    if isinstance(raw, dict):
        return "input" in raw and "messages" not in raw and "history" not in raw
    items = [item for item in raw if isinstance(item, dict)] if isinstance(raw, list) else []
    return any(item.get("type") in RESPONSES_ITEMS or ("type" in item and "role" not in item) for item in items)


def _read_responses(raw: Any) -> Imported:
    check = Check()
    top = raw if isinstance(raw, dict) else {"input": raw}
    items = top.get("input")
    if isinstance(items, str):  # the API's shorthand for one user message
        items = [{"role": "user", "content": items}]
    if not check.array(items, "input", "a list of input items") or not items:
        raise FormatError(check.problems or [("input", "the transcript has no item: at least 1 is needed")])
    messages: list[Message] = []
    origins: list[str] = []
    counts = {"reasoning": 0, "builtin": 0, "tools": 0}
    instructions = top.get("instructions")
    if instructions is not None and check.string(instructions, "instructions") and instructions:
        messages.append({"role": "system", "content": instructions})
        origins.append("instructions")
    for index, item in enumerate(items):
        read_item(check, item, f"input[{index}]", messages, origins, counts)
    tools = function_tools(check, top.get("tools", []), counts, "function", "parameters")
    if check.problems:
        raise FormatError(check.problems)
    counts["instructions"] = int(bool(instructions))
    return Imported("openai-responses", messages, tools, "tools", origins, said(counts, REWRITTEN))


def read_item(check: Check, item: Any, at: str, messages: list[Message], origins: list[str], counts: dict[str, int]) -> None:
    """One input item, appended to the messages (with its origin) as chat completions has it."""
    if not check.object(item, at, "an input item object"):
        return
    item_type = item.get("type", "message" if "role" in item else None)
    if not check.one_of(item_type, RESPONSES_ITEMS, f"{at}.type"):
        return
    if item_type == "reasoning":
        counts["reasoning"] += 1
    elif item_type == "message":
        message = _responses_message(check, item, at)
        if message is not None:
            messages.append(message)
            origins.append(at)
    elif item_type == "function_call":
        counts["tools"] += 1
        if not (
            check.string(item.get("call_id"), f"{at}.call_id", nonempty=True)
            & check.string(item.get("name"), f"{at}.name", nonempty=True)
            & check.string(item.get("arguments"), f"{at}.arguments")
        ):
            return
        call = {"id": item["call_id"], "type": "function", "function": {"name": item["name"], "arguments": item["arguments"]}}
        # The calls of one model turn follow its text: together they are one assistant message.
        if messages and messages[-1]["role"] == "assistant" and origins[-1] != "instructions":
            messages[-1].setdefault("tool_calls", []).append(call)
        else:
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            origins.append(at)
    elif check.string(item.get("call_id"), f"{at}.call_id", nonempty=True):  # function_call_output
        images: list[dict] = []
        output = _responses_output(check, item.get("output"), f"{at}.output", images)
        if output is not None:
            messages.append({"role": "tool", "tool_call_id": item["call_id"], "content": output})
            origins.append(at)
        if images:  # a chat-completions tool message holds only text
            messages.append({"role": "user", "content": images})
            origins.append(at)
            counts["output_images"] = counts.get("output_images", 0) + 1


def _responses_message(check: Check, item: dict, at: str) -> Message | None:
    role = item.get("role")
    if not check.one_of(role, RESPONSES_ROLES, f"{at}.role"):
        return None
    content = item.get("content")
    if isinstance(content, str):
        return {"role": role, "content": content}
    if not check.array(content, f"{at}.content", "a string or a list of content parts"):
        return None
    parts = []
    for part, where in typed_parts(check, content, f"{at}.content", RESPONSES_PARTS, "a content part object"):
        if part["type"] == "refusal":
            if check.string(part.get("refusal"), f"{where}.refusal"):
                parts.append({"type": "refusal", "refusal": part["refusal"]})
        elif part["type"] == "input_image":
            if check.string(part.get("image_url"), f"{where}.image_url", nonempty=True):
                image = {"url": part["image_url"]}
                if part.get("detail") is not None:
                    image["detail"] = part["detail"]
                parts.append({"type": "image_url", "image_url": image})
        elif text := text_part(check, part, where):
            parts.append(text)
    return {"role": role, "content": parts}


def _responses_output(check: Check, output: Any, at: str, images: list[dict]) -> str | list | None:
    """A function_call_output's text; its images (a screenshot the tool took) go to `images`."""
    if isinstance(output, str):
        return output
    if not check.array(output, at, "a string or a list of input_text and input_image parts"):
        return None
    parts = []
    for part, where in typed_parts(check, output, at, ("input_text", "input_image"), "a content part object"):
        if part["type"] == "input_image":
            if check.string(part.get("image_url"), f"{where}.image_url", nonempty=True):
                images.append({"type": "image_url", "image_url": {"url": part["image_url"]}})
        elif text := text_part(check, part, where):
            parts.append(text)
    return parts


FORMAT = Format("openai-responses", N_("OpenAI Responses API input items"), _is_responses, _read_responses, reads_keys=frozenset(("input", "messages", "history", "instructions", "tools")), shape='an object with "input", or a list of typed items')
