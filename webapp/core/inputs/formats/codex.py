"""Codex rollouts: the JSON Lines file under ~/.codex/sessions/, each line
{"timestamp", "type", "payload"}. The `response_item` lines are the history the model sees
(Responses API items); `event_msg` lines repeat them for the app, and their `token_count`
says what the provider counted; `session_meta` holds the instructions, `turn_context` the
model, and `compacted` a compaction Codex did (docs/transcripts.md)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from ...counting.windows import model_window
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
    "moved": N_("Messages written between calls and their outputs: %(count)s (developer or user messages). Outputs are paired with their calls by call_id, and these messages sent after the last output, as chat completions requires."),
    "aborted": N_("Calls without an output that a later request follows: %(count)s (the user interrupted them), answered \"aborted\" as Codex itself sends them."),
    "unanswered": N_("Calls without an output in the file: %(count)s (the session stopped before they returned), left out."),
    "prompts": N_("Prompts read from the app's user_message events: %(count)s (Codex Desktop writes them there only)."),
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


# What the model writes in a response; every other item (messages of the user or developer,
# tool outputs) is input that Codex adds to the history (codex-rs
# core/src/context_manager/history.rs, `is_model_generated_item`).
MODEL_ITEMS = frozenset(("message", "reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call"))


def _is_model_item(payload: dict) -> bool:
    return payload.get("type") in MODEL_ITEMS and (payload.get("type") != "message" or payload.get("role") == "assistant")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict)) if isinstance(content, list) else ""


def _item_prompts(raw: JsonLines) -> set[str]:
    """The texts of the user messages the history holds (response_item lines): a prompt also
    written as a `user_message` event is read once, from here."""
    return {
        _text(payload.get("content")).strip()
        for _number, record in raw.records
        if isinstance(record, dict) and record.get("type") == "response_item"
        and isinstance(payload := record.get("payload"), dict) and payload.get("type") == "message" and payload.get("role") == "user"
    }


def _merge_reply(reply: Message, part: Message) -> None:
    """One more item of the same model response (text, or a call) into its assistant message."""
    content = part.get("content")
    if content:
        texts = reply["content"] if isinstance(reply["content"], list) else []
        reply["content"] = texts + (content if isinstance(content, list) else [{"type": "text", "text": content}])
    if part.get("tool_calls"):
        reply.setdefault("tool_calls", []).extend(part["tool_calls"])


class _Requests:
    """The model requests of a rollout, one per `token_count` event that records a new
    `last_token_usage` (an event that repeats the last total is the same request, sent again
    with new rate limits), each on the assistant message of its response. Rollouts of cli
    0.39 and 0.40 write the event ahead of the response's items; later ones after them, and
    after the tools' outputs when the tools ran while the response streamed (cli 0.142).
    Whether the first such event comes before any reply tells which."""

    def __init__(self):
        self.usage: dict[int, RecordedUsage] = {}
        self.reply: Message | None = None  # the assistant message of the response being read
        self.reply_call = 0  # its number as a call
        self.ahead: bool | None = None  # whether the events come ahead of their response
        self.pending: RecordedUsage | None = None
        self.last_total: Any = None

    def model_item(self, part: Message, at: str, messages: list[Message], origins: list[str]) -> None:
        if self.reply is None:
            self.reply, self.reply_call = {"role": "assistant", "content": None}, call_number(messages)
            messages.append(self.reply)
            origins.append(at)
            if self.pending is not None:
                self.usage[self.reply_call], self.pending = replace(self.pending, call=self.reply_call), None
        _merge_reply(self.reply, part)

    def token_count(self, info: dict, at: str) -> None:
        last = info.get("last_token_usage")
        if not isinstance(last, dict) or not isinstance(last.get("input_tokens"), int) or info.get("total_token_usage") == self.last_total:
            return
        self.last_total = info.get("total_token_usage")
        recorded = RecordedUsage(0, last["input_tokens"], last.get("output_tokens"), last.get("cached_input_tokens"), at)
        if self.ahead is None:
            self.ahead = not self.reply_call
        if not self.ahead and self.reply_call and self.reply_call not in self.usage:
            self.usage[self.reply_call] = replace(recorded, call=self.reply_call)
        elif self.ahead:
            self.pending = recorded
        self.reply = None


def _read_codex(raw: JsonLines) -> Imported:
    """Long because it is one pass over the lines, each kind kept where it goes: history,
    instructions, model, window, usage by call, compactions."""
    check = Check()
    messages: list[Message] = []
    origins: list[str] = []
    counts = {key: 0 for key in ("reasoning", "builtin", "tools", "custom", "search", "moved", "aborted", "unanswered", "events", "prompts", "compacted", "instructions")}
    requests = _Requests()
    prompts = _item_prompts(raw)
    compactions, model, window = [], None, None
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
            requests.reply = None
        elif kind == "event_msg":
            counts["events"] += 1
            info = payload.get("info") if payload.get("type") == "token_count" else payload if payload.get("type") == "task_started" else None
            if isinstance(info, dict) and window is None and isinstance(info.get("model_context_window"), int) and info["model_context_window"] > 0:
                window = (info["model_context_window"], f"model_context_window ({at})")
            if payload.get("type") == "token_count" and isinstance(info, dict):
                requests.token_count(info, at)
            elif payload.get("type") == "user_message" and isinstance(payload.get("message"), str) and payload["message"].strip() not in prompts:
                messages.append({"role": "user", "content": payload["message"]})  # Codex Desktop writes some prompts only here
                origins.append(f"{at}.payload.message")
                counts["prompts"] += 1
                requests.reply = None
        elif kind == "response_item" and (item := _as_responses_item(payload, counts)) is not None:
            if _is_model_item(payload):
                part: list[Message] = []
                read_item(check, item, f"{at}.payload", part, [], counts)
                for message in part:
                    requests.model_item(message, at, messages, origins)
            else:
                read_item(check, item, f"{at}.payload", messages, origins, counts)
                requests.reply = None
    if check.problems:
        raise FormatError(check.problems)
    messages, origins = settle_calls(*_aborted_outputs(messages, origins, counts), counts)
    if not any(message["role"] == "user" for message in messages):
        raise FormatError([("", "the rollout has no user message (no response_item line with role user, no user_message event)")])
    counts["compacted"] = len(compactions)
    notes = said(counts, NOTES) + [(N_("A rollout does not hold the tool definitions."), {})]
    imported = Imported("codex", messages, [], "tools", origins, notes, model=model)
    imported.usage, imported.compactions = tuple(requests.usage[call] for call in sorted(requests.usage)), tuple(compactions)
    if window:
        imported.window, imported.window_source = _full_window(model, *window)
    return imported


# Codex records as model_context_window the share of the model's window it lets a request use
# (ModelInfo.effective_context_window_percent, 95, codex-rs core/src/models_manager/model_info.rs
# @ 0666e95; cli 0.114 to 0.142 write 258,400 for gpt-5.x's 272,000, cli 0.40 still 272,000),
# and compacts at 90% of the whole window: the whole window is the model's.
EFFECTIVE_SHARE = 0.95


def _full_window(model: str | None, recorded: int, source: str) -> tuple[int, str]:
    """The model's whole window, where the recorded one is Codex's 95% of it (of the model's
    window in the table, or of a whole number of thousands, as Codex's own windows are: gpt-5.4
    runs in Codex at 272,000 though its API takes more); else the recorded one."""
    named = model_window(model)
    whole = round(recorded / EFFECTIVE_SHARE)
    if named is not None and recorded == int(named.window * EFFECTIVE_SHARE):
        whole = named.window
    elif int(whole * EFFECTIVE_SHARE) != recorded or whole % 1000:
        return recorded, source
    return whole, f"{source}: {recorded:,}, {EFFECTIVE_SHARE:.0%} of {model}'s {whole:,}, the share Codex lets a request use"


def _aborted_outputs(messages: list[Message], origins: list[str], counts: dict[str, int]) -> tuple[list[Message], list[str]]:
    """A call that has no output in the file but is followed by a later reply gets the output
    Codex sends for it, "aborted", right after its call (codex-rs
    core/src/context_manager/normalize.rs, `ensure_call_outputs_present`); the calls of the
    last reply, which no request follows, stay unanswered."""
    answered = {message.get("tool_call_id") for message in messages if message["role"] == "tool"}
    replies = [index for index, message in enumerate(messages) if message["role"] == "assistant"]
    out, out_origins = [], []
    for index, (message, origin) in enumerate(zip(messages, origins)):
        out.append(message)
        out_origins.append(origin)
        if message["role"] == "assistant" and replies and index != replies[-1]:
            for call in message.get("tool_calls") or []:
                if call["id"] not in answered:
                    out.append({"role": "tool", "tool_call_id": call["id"], "content": "aborted"})
                    out_origins.append(origin)
                    counts["aborted"] += 1
    return out, out_origins


FORMAT = Format("codex", N_("Codex session (rollout)"), _is_codex, _read_codex, reads_keys=frozenset(), shape='rollout JSON Lines of {"type", "payload"} records')
