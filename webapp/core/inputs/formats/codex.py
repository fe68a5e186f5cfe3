"""Codex rollouts: the JSON Lines file under ~/.codex/sessions/, each line
{"timestamp", "type", "payload"}. The `response_item` lines are the history the model sees
(Responses API items); `event_msg` lines repeat them for the app, and their `token_count`
says what the provider counted; `session_meta` holds the instructions, `turn_context` the
model, and `compacted` a compaction Codex did (docs/transcripts.md)."""

from __future__ import annotations

import json
from typing import Any

from ...i18n import N_
from ...model import RecordedCompaction, RecordedUsage
from .common import (
    Check, Format, FormatError, Imported, JsonLines, Message, call_number, record_objects, said,
    settle_calls,
)
from .openai_responses import REWRITTEN, read_item

CODEX_LINES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")

NOTES = {
    **REWRITTEN,
    "custom": N_("Freeform tool calls (custom_tool_call, such as apply_patch) and shell calls (local_shell_call): %(count)s, sent as tool calls with their input as the arguments."),
    "search": N_("Web searches left out: %(count)s. OpenAI's servers run them and their results are not in the log."),
    "moved": N_("Messages written between a call and its output: %(count)s (developer or user messages). They are sent after the outputs, as chat completions requires."),
    "unanswered": N_("Calls without an output in the file: %(count)s (the session stopped before they returned), left out."),
    "events": N_("App events skipped: %(count)s (event_msg lines repeat the history for the app; their token counts are kept as the recorded usage)."),
    "compacted": N_("Compactions recorded by Codex: %(count)s. The replay keeps the whole history; each summary and the call it came before are kept with the transcript."),
}


def _is_codex(raw: Any) -> bool:
    """JSON Lines of {"type", "payload"} records of Codex's own kinds."""
    records = record_objects(raw)
    return bool(records) and all(isinstance(record.get("payload"), dict) and record.get("type") in CODEX_LINES for record in records[:5])


def _as_responses_item(payload: dict, counts: dict[str, int]) -> dict | None:
    """A Codex item as the Responses item read_item knows, None for one the model's history
    does not hold as text (a web search)."""
    kind = payload.get("type")
    if kind == "custom_tool_call":
        counts["custom"] += 1
        return {"type": "function_call", "call_id": payload.get("call_id"), "name": payload.get("name"), "arguments": payload.get("input")}
    if kind == "custom_tool_call_output":
        return {"type": "function_call_output", "call_id": payload.get("call_id"), "output": payload.get("output")}
    if kind == "local_shell_call":
        counts["custom"] += 1
        arguments = json.dumps(payload.get("action"), ensure_ascii=False)
        return {"type": "function_call", "call_id": payload.get("call_id") or payload.get("id"), "name": "local_shell", "arguments": arguments}
    if kind == "function_call_output" and isinstance(payload.get("output"), dict):  # older rollouts: {"content", "metadata"}
        return {**payload, "output": payload["output"].get("content")}
    if kind == "web_search_call":
        counts["search"] += 1
        return None
    return payload


def _instructions(payload: dict) -> str | None:
    base = payload.get("base_instructions")
    text = base.get("text") if isinstance(base, dict) else payload.get("instructions")
    return text if isinstance(text, str) and text else None


def _read_codex(raw: JsonLines) -> Imported:
    """Long because it is one pass over the lines, each kind kept where it goes: history,
    instructions, model, usage by call, compactions."""
    check = Check()
    messages: list[Message] = []
    origins: list[str] = []
    counts = {key: 0 for key in ("reasoning", "builtin", "tools", "custom", "search", "moved", "unanswered", "events", "compacted", "instructions")}
    usage: dict[int, RecordedUsage] = {}
    compactions, model = [], None
    for number, record in raw.records:
        at = f"line {number}"
        payload = record.get("payload") if isinstance(record, dict) else None
        if not check.object(payload, f"{at}.payload", "an object"):
            continue
        kind = record.get("type")
        if kind == "session_meta" and (text := _instructions(payload)) and not messages:
            messages.append({"role": "system", "content": text})
            origins.append(f"{at}.payload.base_instructions")
            counts["instructions"] = 1
        elif kind == "turn_context" and isinstance(payload.get("model"), str):
            model = payload["model"]
        elif kind == "compacted":
            summary = payload.get("message")
            compactions.append(RecordedCompaction(call_number(messages), summary if isinstance(summary, str) else "", source=at))
        elif kind == "event_msg":
            counts["events"] += 1
            last = (payload.get("info") or {}).get("last_token_usage") if payload.get("type") == "token_count" else None
            call = call_number(messages) - 1
            if isinstance(last, dict) and isinstance(last.get("input_tokens"), int) and call:
                usage[call] = RecordedUsage(call, last["input_tokens"], last.get("output_tokens"), last.get("cached_input_tokens"), at)
        elif kind == "response_item" and (item := _as_responses_item(payload, counts)) is not None:
            read_item(check, item, f"{at}.payload", messages, origins, counts)
    if check.problems:
        raise FormatError(check.problems)
    messages, origins = settle_calls(messages, origins, counts)
    if not any(message["role"] == "user" for message in messages):
        raise FormatError([("", "the rollout has no user message (no response_item line with role user)")])
    counts["compacted"] = len(compactions)
    notes = said(counts, NOTES) + [(N_("A rollout does not hold the tool definitions."), {})]
    imported = Imported("codex", messages, [], "tools", origins, notes, model=model)
    imported.usage, imported.compactions = tuple(usage[call] for call in sorted(usage)), tuple(compactions)
    return imported


FORMAT = Format("codex", N_("Codex session (rollout)"), _is_codex, _read_codex, reads_keys=frozenset())
