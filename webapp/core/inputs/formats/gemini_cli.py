"""Gemini CLI sessions (~/.gemini/tmp/<project>/chats/): a JSON object {sessionId,
projectHash, messages}, or, in newer versions, JSON Lines of a header, message records and
{"$set": …} updates, where a message is written again under its id as its tool calls finish.
A "gemini" message holds its tool calls and their results (`toolCalls[].result`, Gemini API
functionResponse parts) and the tokens the API counted (docs/transcripts.md)."""

from __future__ import annotations

import json
from typing import Any

from ...i18n import N_
from ...model import RecordedUsage
from .common import Check, Format, FormatError, Imported, JsonLines, Message, call_number, record_objects, said
from .gemini_api import CallIds, read_parts, response_text

NOTES = {
    "tools": N_("Tool calls and their results, kept inside each Gemini message, became the assistant's tool calls and tool messages."),
    "rewritten": N_("Messages written again under the same id as their tool calls finished: %(count)s lines; the last version of each is read."),
    "skipped": N_("Lines that are not conversation left out: %(count)s (info and error messages, header updates)."),
    "thoughts": N_("Thought summaries left out: %(count)s. They are shown to the user, not sent back to the model."),
    "thought": N_("Thought parts left out: %(count)s. Gemini keeps only their signatures, which are not text."),
    "cancelled": N_("The request after the last reply was cancelled (the session says \"Request cancelled.\") and got no reply: what it would have sent (%(count)s messages: tool results or a prompt) is left out, and the last reply's tool calls with it; the replay ends at that reply."),
}
# The info message Gemini CLI records when the user stops a request before its reply
# (packages/cli/src/ui/hooks/useGeminiStream.ts, v0.39.0).
CANCELLED = "Request cancelled."
SESSION_KEYS = ("sessionId", "projectHash")


def _is_gemini_cli(raw: Any) -> bool:
    """A session object with messages of a "type", or JSON Lines whose header has a session's ids."""
    if isinstance(raw, dict):
        return isinstance(raw.get("messages"), list) and any(key in raw for key in SESSION_KEYS)
    records = record_objects(raw, 3)
    return bool(records) and all(key in records[0] for key in SESSION_KEYS) and "type" not in records[0]


def _messages(raw: Any, counts: dict[str, int]) -> list[tuple[str, Any]]:
    """The session's messages with their places; of JSON Lines, the last version of each id."""
    if isinstance(raw, dict):
        return [(f"messages[{index}]", message) for index, message in enumerate(raw["messages"])]
    by_id: dict[Any, tuple[str, Any]] = {}
    for number, record in raw.records:
        if isinstance(record, dict) and "type" in record:
            key = record.get("id", number)
            counts["rewritten"] += key in by_id
            by_id[key] = (f"line {number}", record)
        elif number != raw.records[0][0]:
            counts["skipped"] += 1
    return list(by_id.values())


def _content_parts(content: Any) -> list:
    return [{"text": content}] if isinstance(content, str) else content if isinstance(content, list) else []


def _gemini_message(check: Check, message: dict, at: str, ids: CallIds, counts: dict[str, int]) -> list[Message]:
    """A gemini message: its text and calls, then each call's result."""
    counts["thoughts"] += len(message.get("thoughts") or [])
    out = read_parts(check, _content_parts(message.get("content")), at, "model", ids, counts)
    results = []
    for position, call in enumerate(message.get("toolCalls") or []):
        where = f"{at}.toolCalls[{position}]"
        if not check.object(call, where, "a tool call object") or not check.string(call.get("name"), f"{where}.name", nonempty=True):
            continue
        counts["tools"] += 1
        call_id = ids.call(call["name"], call.get("id"))
        arguments = json.dumps(call.get("args") or {}, ensure_ascii=False)
        out[0].setdefault("tool_calls", []).append({"id": call_id, "type": "function", "function": {"name": call["name"], "arguments": arguments}})
        responses = [part["functionResponse"] for part in call.get("result") or [] if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict)]
        text = "\n".join(response_text(response.get("response")) for response in responses) if responses else str(call.get("resultDisplay") or "")
        results.append({"role": "tool", "tool_call_id": call_id, "content": text})
    return out + results


def _drop_cancelled_request(messages: list[Message], origins: list[str], counts: dict[str, int]) -> None:
    """One call per gemini message: the request cancelled after the last one got no reply
    and is not a call. What it would have sent goes (tool results, a prompt), and the last
    reply's calls with their results, as a transcript's calls are answered (like the
    unanswered calls of other formats)."""
    last_reply = max((index for index, message in enumerate(messages) if message["role"] == "assistant"), default=None)
    if last_reply is None or last_reply == len(messages) - 1:
        return
    counts["cancelled"] = len(messages) - last_reply - 1
    del messages[last_reply + 1 :], origins[last_reply + 1 :]
    reply = messages[last_reply]
    if reply.pop("tool_calls", None) is not None:
        reply["content"] = reply.get("content") or ""


def _read_gemini_cli(raw: dict | JsonLines) -> Imported:
    check = Check()
    counts = {key: 0 for key in NOTES} | {"unnamed": 0}
    messages: list[Message] = []
    origins: list[str] = []
    usage, models = [], []
    ids = CallIds(counts)
    cancelled = False  # since the last user or gemini message
    for at, message in _messages(raw, counts):
        if not check.object(message, at, "a message object"):
            continue
        kind = message.get("type")
        if kind == "user":
            rewritten = read_parts(check, _content_parts(message.get("content")), at, "user", ids, counts)
        elif kind == "gemini":
            tokens = message.get("tokens")
            if isinstance(tokens, dict) and isinstance(tokens.get("input"), int):
                usage.append(RecordedUsage(call_number(messages), tokens["input"], tokens.get("output"), tokens.get("cached"), at))
            models += [message["model"]] if isinstance(message.get("model"), str) else []
            rewritten = _gemini_message(check, message, at, ids, counts)
        else:
            counts["skipped"] += 1
            cancelled = cancelled or (kind == "info" and message.get("content") == CANCELLED)
            continue
        cancelled = False
        messages += rewritten
        origins += [at] * len(rewritten)
    if cancelled:
        _drop_cancelled_request(messages, origins, counts)
    if check.problems:
        raise FormatError(check.problems)
    if not messages:
        raise FormatError([("messages", "the session has no user or gemini message")])
    notes = said(counts, NOTES) + [(N_("A Gemini CLI session holds neither the system prompt nor the tool definitions."), {})]
    imported = Imported("gemini-cli", messages, [], "tools", origins, notes, model=models[-1] if models else None)
    imported.usage = tuple(usage)
    return imported


FORMAT = Format("gemini-cli", N_("Gemini CLI session"), _is_gemini_cli, _read_gemini_cli, reads_keys=frozenset(("messages", "sessionId", "projectHash")), shape='a session object with "messages" and "sessionId", or its JSON Lines')
