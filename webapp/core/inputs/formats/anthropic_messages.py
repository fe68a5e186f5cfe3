"""Anthropic Messages: an object with "messages" and "system", or messages whose content
blocks are Anthropic's (tool_use, tool_result, image with a source). tool_use blocks become
the assistant's tool calls and tool_result blocks tool messages; thinking is left out."""

from __future__ import annotations

import json
from typing import Any

from ...i18n import N_
from .common import BUILTIN_TOOLS_LEFT_OUT, Check, Format, FormatError, Imported, Message, function_tools, said
from .content_parts import text_part, typed_parts

# Said on every page of an Anthropic transcript, next to the counter's name.
NO_CLAUDE_TOKENIZER = N_(
    "Counted with %(counter)s, not with Claude's tokenizer: Anthropic publishes none that runs "
    "offline, so Claude's own count (its token-counting endpoint) differs."
)

# What rewriting content blocks did, said when its count is not 0 (Claude Code's reader too).
BLOCK_NOTES = {
    "split": N_("User turns holding tool results and text: %(count)s. The results are sent first, as tool messages, then the text as a user message."),
    "moved": N_("Images inside tool results: %(count)s. They are sent in the user message after the results, since a tool message carries only text."),
    "thinking": N_("Thinking blocks left out: %(count)s. Claude drops earlier turns' thinking from its context."),
}
ANTHROPIC_BLOCKS = ("tool_use", "tool_result", "thinking", "redacted_thinking", "document")
ANTHROPIC_USER_BLOCKS = ("text", "image", "tool_result")
ANTHROPIC_ASSISTANT_BLOCKS = ("text", "tool_use", "thinking", "redacted_thinking")


def _is_anthropic(raw: Any) -> bool:
    """Messages (a list, or an object's "messages") with a mark of Anthropic's: a system
    field, a tool with an input_schema, or one of its own content blocks."""
    if isinstance(raw, dict):
        return "messages" in raw and _anthropic_like(raw.get("messages"), raw)
    return isinstance(raw, list) and _anthropic_like(raw, {})


def _anthropic_like(messages: Any, top: dict) -> bool:
    if "system" in top:
        return True
    tools = top.get("tools")
    if isinstance(tools, list) and any(isinstance(t, dict) and "input_schema" in t for t in tools):
        return True
    for message in messages if isinstance(messages, list) else []:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and (
                block.get("type") in ANTHROPIC_BLOCKS or (block.get("type") == "image" and "source" in block)
            ):
                return True
    return False


def _read_anthropic(raw: Any) -> Imported:
    check = Check()
    top = raw if isinstance(raw, dict) else {"messages": raw}
    source = top.get("messages")
    if not check.array(source, "messages", "a list of messages") or not source:
        raise FormatError(check.problems or [("messages", "the transcript has no message: at least 1 is needed")])
    messages: list[Message] = []
    origins: list[str] = []
    counts = {"thinking": 0, "moved": 0, "builtin": 0, "split": 0, "tools": 0}
    system = top.get("system")
    if system is not None:
        text = _anthropic_system(check, system)
        if text:
            messages.append({"role": "system", "content": text})
            origins.append("system")
    for index, message in enumerate(source):
        at = f"messages[{index}]"
        if not check.object(message, at, "a message object") or not check.one_of(message.get("role"), ("user", "assistant"), f"{at}.role"):
            continue
        content = message.get("content")
        if isinstance(content, str):
            messages.append({"role": message["role"], "content": content})
            origins.append(at)
        elif check.array(content, f"{at}.content", "a string or a list of content blocks"):
            reader = user_blocks if message["role"] == "user" else assistant_blocks
            for rewritten in reader(check, content, at, counts):
                messages.append(rewritten)
                origins.append(at)
    tools = function_tools(check, top.get("tools", []), counts, "custom", "input_schema")
    if check.problems:
        raise FormatError(check.problems)
    counts["system"] = int(bool(system))
    notes = said(counts, {
        "tools": N_("tool_use blocks became the assistant's tool calls, tool_result blocks tool messages."),
        "system": N_("The system prompt is sent as the first message."),
        **BLOCK_NOTES,
        "builtin": BUILTIN_TOOLS_LEFT_OUT,
    })
    return Imported("anthropic-messages", messages, tools, "tools", origins, notes)


def _anthropic_system(check: Check, system: Any) -> str | list:
    if isinstance(system, str):
        return system
    parts = []
    if check.array(system, "system", "a string or a list of text blocks"):
        for block, where in typed_parts(check, system, "system", ("text",), "a text block"):
            if text := text_part(check, block, where):
                parts.append(text)
    return parts


def _anthropic_image(check: Check, block: dict, where: str) -> dict | None:
    source = block.get("source")
    if not check.object(source, f"{where}.source", "an object with type base64 or url"):
        return None
    if source.get("type") == "base64":
        if check.string(source.get("media_type"), f"{where}.source.media_type") & check.string(source.get("data"), f"{where}.source.data"):
            return {"type": "image_url", "image_url": {"url": f"data:{source['media_type']};base64,{source['data']}"}}
        return None
    if check.one_of(source.get("type"), ("base64", "url"), f"{where}.source.type") and check.string(source.get("url"), f"{where}.source.url", nonempty=True):
        return {"type": "image_url", "image_url": {"url": source["url"]}}
    return None


def user_blocks(check: Check, blocks: list, at: str, counts: dict[str, int]) -> list[Message]:
    results: list[Message] = []
    parts: list[dict] = []
    moved: list[dict] = []
    for block, where in typed_parts(check, blocks, f"{at}.content", ANTHROPIC_USER_BLOCKS, "a content block object"):
        if block["type"] == "text":
            if text := text_part(check, block, where):
                parts.append(text)
        elif block["type"] == "image":
            image = _anthropic_image(check, block, where)
            if image:
                parts.append(image)
        elif check.string(block.get("tool_use_id"), f"{where}.tool_use_id", nonempty=True):
            results.append({"role": "tool", "tool_call_id": block["tool_use_id"], "content": _tool_result_text(check, block.get("content"), where, moved)})
    counts["moved"] += len(moved)
    parts = moved + parts
    if results and parts:
        counts["split"] += 1
    return results + ([{"role": "user", "content": parts}] if parts or not results else [])


def _tool_result_text(check: Check, content: Any, where: str, moved: list[dict]) -> str | list:
    if content is None or isinstance(content, str):
        return content or ""
    parts = []
    if check.array(content, f"{where}.content", "a string or a list of text and image blocks"):
        for block, at in typed_parts(check, content, f"{where}.content", ("text", "image"), "a content block object"):
            if block["type"] == "text":
                if text := text_part(check, block, at):
                    parts.append(text)
            elif image := _anthropic_image(check, block, at):
                moved.append(image)
    return parts


def assistant_blocks(check: Check, blocks: list, at: str, counts: dict[str, int]) -> list[Message]:
    parts: list[dict] = []
    calls: list[dict] = []
    for block, where in typed_parts(check, blocks, f"{at}.content", ANTHROPIC_ASSISTANT_BLOCKS, "a content block object"):
        if block["type"] == "text":
            if text := text_part(check, block, where):
                parts.append(text)
        elif block["type"] in ("thinking", "redacted_thinking"):
            counts["thinking"] += 1
        elif (
            check.string(block.get("id"), f"{where}.id", nonempty=True)
            & check.string(block.get("name"), f"{where}.name", nonempty=True)
            & check.object(block.get("input", {}), f"{where}.input", "an object of arguments")
        ):
            counts["tools"] += 1
            arguments = json.dumps(block.get("input", {}), ensure_ascii=False)
            calls.append({"id": block["id"], "type": "function", "function": {"name": block["name"], "arguments": arguments}})
    message: Message = {"role": "assistant", "content": parts or None}
    if calls:
        message["tool_calls"] = calls
    return [message]


FORMAT = Format(
    "anthropic-messages", N_("Anthropic Messages"), _is_anthropic, _read_anthropic, notes=(NO_CLAUDE_TOKENIZER,),
    reads_keys=frozenset(("messages", "system", "tools")),
    shape='messages with Anthropic tool_use or tool_result blocks, a "system" field or tools with an "input_schema"',
)
