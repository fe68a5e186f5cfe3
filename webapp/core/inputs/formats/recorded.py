"""Runs recorded by `compaction-playground record` (webapp/recorder/): an object
{"recorded_by": "compaction-playground record", "version": 1, "upstream", "calls": [...]}.
Each call keeps the API it went to ("chat", "responses", "messages"), the messages its
request added to the one before (`new`), the reply (`response`, as the history items the agent
sends back), the provider's usage (`usage`: prompt, cached, completion), and, where the
request was not the one before plus new messages, the agent's compaction (`compaction`: how
many messages it kept, removed, and what replaced them). The system prompt and the tools are
kept where they first appear or change (docs/transcripts.md, "Recorded runs").

The history is rebuilt in the API's own form (the first request, each reply, each request's
new messages) and read by that API's reader; a compaction becomes a RecordedCompaction, not
messages: the replay keeps the whole history, as the playground's strategies start from it."""

from __future__ import annotations

from typing import Any

from ...i18n import N_
from . import anthropic_messages, codex, openai_chat, openai_responses
from ...model import RecordedCompaction, RecordedUsage
from .common import Check, Format, FormatError, Imported, said, settle_calls

RECORDED_BY = "compaction-playground record"
# Per API: the reader of its request bodies, and the request fields of its history and system prompt.
READERS = {"chat": openai_chat.FORMAT, "responses": openai_responses.FORMAT, "messages": anthropic_messages.FORMAT}
HISTORY_FIELD = {"chat": "messages", "responses": "input", "messages": "messages"}
SYSTEM_FIELD = {"chat": None, "responses": "instructions", "messages": "system"}
# The Responses output items a reply is made of, besides an assistant message.
REPLY_ITEMS = ("function_call", "reasoning", "custom_tool_call", "local_shell_call", "web_search_call", "computer_call")

NOTES = {
    "calls": N_("Recorded by compaction-playground record: %(count)s calls answered, each with the provider's own usage where it sent one."),
    "compacted": N_("Compactions by the agent: %(count)s (a request that was not the one before it plus new messages). The replay keeps the whole history; what replaced it and the call it came before are kept with the transcript."),
    "failed": N_("Calls answered with an error or not at all: %(count)s. They have no reply and are not replayed; the upstream's answer is in the file."),
    "cut": N_("Calls cut short: %(count)s (the client disconnected or the upstream stopped mid-answer); the part that arrived is replayed."),
    "changed": N_("The system prompt or the tool definitions changed during the run: %(count)s times. The first call's are replayed."),
    # A run stopped after a reply that called tools, before their results were sent.
    "unanswered": codex.NOTES["unanswered"],
}


def history_role(item: Any) -> str | None:
    """A history item's role, the Responses items' too: a function_call_output is a tool
    result, a function call or reasoning item part of the assistant's reply."""
    if not isinstance(item, dict):
        return None
    if item.get("type") == "function_call_output":
        return "tool"
    return "assistant" if item.get("type") in REPLY_ITEMS else item.get("role")


def _is_recorded(raw: Any) -> bool:
    return isinstance(raw, dict) and raw.get("recorded_by") == RECORDED_BY


def _checked_calls(check: Check, raw: dict) -> list[dict]:
    calls = raw.get("calls")
    if not check.array(calls, "calls", "a list of calls"):
        raise FormatError(check.problems)
    for index, call in enumerate(calls):
        at = f"calls[{index}]"
        if check.object(call, at, "a call object") and check.one_of(call.get("api"), tuple(READERS), f"{at}.api"):
            for key in ("new", "response"):
                if key in call:
                    check.array(call[key], f"{at}.{key}", "a list of history items")
    if check.problems:
        raise FormatError(check.problems)
    apis = sorted({call["api"] for call in calls})
    if len(apis) > 1:
        raise FormatError([("calls", f"this run mixes APIs ({', '.join(apis)}); a transcript replays one: record one agent at a time")])
    if not any("response" in call for call in calls):
        raise FormatError([("calls", "no call of this recording was answered yet: there is nothing to replay")])
    return calls


def _read_recorded(raw: dict) -> Imported:
    """Long because it is one pass over the calls, each part kept where it goes: the history
    and where each item came from, the reply of the call before, usage, compactions."""
    calls = _checked_calls(Check(), raw)
    api = calls[0]["api"]
    history: list[Any] = []
    places: list[str] = []
    first: dict[str, Any] = {}  # the system prompt and tools, and where they were found
    counts = {key: 0 for key in NOTES} | {"moved": 0}
    usage, compactions = [], []
    reply: list[tuple[Any, str]] = []  # the last reply, until the next request shows it was sent back
    for index, call in enumerate(calls):
        at = f"calls[{index}]"
        for key in ("system", "tools"):
            if key in call and key in first:  # the recorder writes them again only when they change
                counts["changed"] += 1
            elif key in call:
                first[key] = (call[key], f"{at}.{key}")
        new = call.get("new") or []
        if reply and (call.get("compaction") or not new or history_role(new[0]) != "assistant"):
            history += [item for item, _ in reply]
            places += [place for _, place in reply]
        reply = []
        if isinstance(call.get("compaction"), dict):
            compaction = call["compaction"]
            summary = compaction.get("summary") if isinstance(compaction.get("summary"), str) else ""
            compactions.append(RecordedCompaction(counts["calls"] + 1, summary, source=f"{at}.compaction"))
        history += new
        places += [f"{at}.new[{position}]" for position in range(len(new))]
        if "response" not in call or (call.get("status") or 0) >= 400:
            counts["failed"] += 1
            continue
        counts["calls"] += 1
        counts["cut"] += bool(call.get("cut_short"))
        reply = [(item, f"{at}.response[{position}]") for position, item in enumerate(call["response"])]
        figures = call.get("usage")
        if isinstance(figures, dict) and isinstance(figures.get("prompt"), int):
            usage.append(RecordedUsage(counts["calls"], figures["prompt"], figures.get("completion"), figures.get("cached"), f"{at}.usage"))
    history += [item for item, _ in reply]
    places += [place for _, place in reply]
    imported = _read_history(api, history, places, first)
    imported.messages, imported.origins = settle_calls(imported.messages, imported.origins, counts)
    counts["compacted"] = len(compactions)
    imported.notes = said(counts, NOTES) + imported.notes
    imported.model = next((call["model"] for call in calls if isinstance(call.get("model"), str)), None)
    imported.usage, imported.compactions = tuple(usage), tuple(compactions)
    return imported


def _read_history(api: str, history: list, places: list[str], first: dict[str, tuple[Any, str]]) -> Imported:
    """The rebuilt history read by its API's reader, every place named in the recording's terms."""
    field, system_field = HISTORY_FIELD[api], SYSTEM_FIELD[api]
    body: dict[str, Any] = {field: history, "tools": first.get("tools", ([], ""))[0] or []}
    if system_field and "system" in first:
        body[system_field] = first["system"][0]
    own = {"tools": first.get("tools", (None, "tools"))[1]}
    if system_field:
        own[system_field] = first.get("system", (None, system_field))[1]
    return read_rebuilt("recorded", READERS[api], body, field, places, own)


def read_rebuilt(name: str, reader: Format, body: dict[str, Any], field: str, places: list[str], own: dict[str, str]) -> Imported:
    """A request body rebuilt from a log of calls, read by `reader` as format `name`: its history
    under `field`, each item found at `places[i]` in the log, its other keys at `own[key]`; every
    place a problem or an origin names is the log's (`messages[3].content` of the body is
    `calls[2].new[0].content` of a recorded run)."""

    def place(where: str) -> str:
        head, bracket, rest = where.partition("[")
        number, _, tail = rest.partition("]")
        if head == field and bracket and number.isdigit() and int(number) < len(places):
            return places[int(number)] + tail
        key = where.split(".", 1)[0].split("[", 1)[0]
        return own[key] + where[len(key):] if own.get(key) else where

    try:
        imported = reader.read(body)
    except FormatError as error:
        raise FormatError([(place(where), what) for where, what in error.problems]) from None
    imported.format, imported.origins = name, [place(origin) for origin in imported.origins]
    return imported


FORMAT = Format("recorded", N_("Run recorded by compaction-playground record"), _is_recorded, _read_recorded, reads_keys=frozenset(("recorded_by", "calls")), shape='an object with "recorded_by" and "calls"')
