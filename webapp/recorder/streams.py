"""What the provider answered, read from the bytes the recorder passed on: the reply as the
history items the agent sends back (a chat message, Responses output items, an Anthropic
message) and the provider's usage, from a JSON body or from a stream of server-sent events.

The shapes come from the providers' API references: chat completions' streamed chunks carry
`choices[].delta` and, with `stream_options.include_usage`, a last chunk with `usage`
(platform.openai.com/docs/api-reference/chat-streaming); a Responses stream ends with a
`response.completed` event holding the whole response (…/responses-streaming); an Anthropic
stream is `message_start`, `content_block_*` and `message_delta` events, the usage split
between the first and the last (docs.anthropic.com/en/docs/build-with-claude/streaming).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Answer:
    """The reply as history items, the provider's usage as it sent it, and whether the reply
    is all there (a stream cut short keeps what arrived)."""

    output: list[dict] = field(default_factory=list)
    usage: dict | None = None
    complete: bool = True


def events(data: bytes) -> list[dict]:
    """The JSON payloads of a server-sent event stream, in order; `[DONE]` and a last event
    cut short are left out. An event's name (`event:` line) is kept as "event" when its payload
    has no "type"."""
    found = []
    text = data.decode("utf-8", "replace").replace("\r\n", "\n")
    for block in text.split("\n\n"):
        name, lines = None, []
        for line in block.split("\n"):
            if line.startswith("data:"):
                lines.append(line[5:].removeprefix(" "))
            elif line.startswith("event:"):
                name = line[6:].strip()
        payload = "\n".join(lines)
        if not lines or payload.strip() == "[DONE]":
            continue
        try:
            value = json.loads(payload)
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append(value if "type" in value or name is None else {"event": name, **value})
    return found


def answer(api: str, data: bytes, streamed: bool) -> Answer:
    """The reply and usage of one call of `api` ("chat", "responses", "messages")."""
    if streamed:
        return {"chat": _chat_stream, "responses": _responses_stream, "messages": _messages_stream}[api](events(data))
    try:
        body = json.loads(data)
    except ValueError:
        return Answer(complete=False)
    if not isinstance(body, dict):
        return Answer(complete=False)
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else None
    if api == "chat":
        choices = body.get("choices") or [{}]
        message = choices[0].get("message") if isinstance(choices[0], dict) else None
        return Answer([message] if isinstance(message, dict) else [], usage)
    if api == "responses":
        output = body.get("output")
        return Answer([item for item in output if isinstance(item, dict)] if isinstance(output, list) else [], usage)
    content = body.get("content")
    return Answer([{"role": "assistant", "content": content}] if isinstance(content, list) else [], usage)


def _chat_stream(chunks: list[dict]) -> Answer:
    """The assistant message the deltas of the first choice add up to, and the usage the
    chunks carry (the last one that has it)."""
    message: dict[str, Any] = {"role": "assistant", "content": None}
    calls: dict[int, dict] = {}
    usage, finished = None, False
    for chunk in chunks:
        usage = chunk["usage"] if isinstance(chunk.get("usage"), dict) else usage
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            finished = finished or bool(choice.get("finish_reason"))
            delta = choice.get("delta") or {}
            for key in ("content", "refusal"):
                if isinstance(delta.get(key), str):
                    message[key] = (message.get(key) or "") + delta[key]
            for call in delta.get("tool_calls") or []:
                built = calls.setdefault(call.get("index", len(calls)), {"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
                built["id"] = call.get("id") or built["id"]
                function = call.get("function") or {}
                built["function"]["name"] += function.get("name") or ""
                built["function"]["arguments"] += function.get("arguments") or ""
    if calls:
        message["tool_calls"] = [calls[index] for index in sorted(calls)]
    return Answer([message], usage, finished)


def _responses_stream(stream: list[dict]) -> Answer:
    """The response of the last `response.completed` (or incomplete, failed) event; cut short,
    the output items that were done."""
    for event in reversed(stream):
        response = event.get("response")
        if event.get("type") in ("response.completed", "response.incomplete", "response.failed") and isinstance(response, dict):
            output = response.get("output") if isinstance(response.get("output"), list) else []
            return Answer(output, response.get("usage"), event["type"] == "response.completed")
    done = [event["item"] for event in stream if event.get("type") == "response.output_item.done" and isinstance(event.get("item"), dict)]
    return Answer(done, None, False)


def _messages_stream(stream: list[dict]) -> Answer:
    """The assistant message the content blocks add up to (a tool_use's input is its JSON
    deltas joined), the usage of message_start updated by message_delta."""
    blocks: dict[int, dict] = {}
    inputs: dict[int, str] = {}
    usage: dict | None = None
    stopped = False
    for event in stream:
        kind, index = event.get("type"), event.get("index", 0)
        if kind == "message_start":
            usage = dict((event.get("message") or {}).get("usage") or {})
        elif kind == "content_block_start" and isinstance(event.get("content_block"), dict):
            blocks[index] = dict(event["content_block"])
        elif kind == "content_block_delta" and index in blocks:
            delta = event.get("delta") or {}
            for key, target in (("text", "text"), ("thinking", "thinking"), ("signature", "signature")):
                if isinstance(delta.get(key), str):
                    blocks[index][target] = blocks[index].get(target, "") + delta[key]
            if isinstance(delta.get("partial_json"), str):
                inputs[index] = inputs.get(index, "") + delta["partial_json"]
        elif kind == "message_delta":
            usage = {**(usage or {}), **{key: value for key, value in (event.get("usage") or {}).items() if value is not None}}
        stopped = stopped or kind == "message_stop"
    for index, text in inputs.items():
        try:
            blocks[index]["input"] = json.loads(text) if text else {}
        except ValueError:
            blocks[index]["input"] = {}
    content = [blocks[index] for index in sorted(blocks)]
    return Answer([{"role": "assistant", "content": content}] if content or stopped else [], usage, stopped)


def usage_figures(api: str, usage: dict | None) -> dict[str, int | None] | None:
    """The provider's usage as three figures: prompt (the request as counted, cached tokens
    included), cached (of the prompt, read from the cache) and completion."""
    if not isinstance(usage, dict):
        return None
    if api == "chat":
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    elif api == "responses":
        prompt, completion = usage.get("input_tokens"), usage.get("output_tokens")
        cached = (usage.get("input_tokens_details") or {}).get("cached_tokens")
    else:  # Anthropic counts the cached and cache-written tokens apart from input_tokens
        parts = [usage.get(key) for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
        prompt = sum(part for part in parts if isinstance(part, int)) if isinstance(parts[0], int) else None
        cached, completion = usage.get("cache_read_input_tokens"), usage.get("output_tokens")
    if not isinstance(prompt, int):
        return None
    return {"prompt": prompt, "cached": cached if isinstance(cached, int) else None, "completion": completion if isinstance(completion, int) else None}
