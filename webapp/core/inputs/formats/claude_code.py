"""Claude Code sessions: the JSON Lines file under ~/.claude/projects/, one record per line.

The conversation is a tree: each record names its parent (`parentUuid`), and a rewind or a
retry leaves branches. A resumed session continues from the last message and walks back to
the root, crossing a compaction by its `logicalParentUuid`; so does this reader. Each content
block of an API reply is its own line (sharing `message.id` and its `usage`): they are merged
back into one message, then read as Anthropic Messages blocks (docs/transcripts.md)."""

from __future__ import annotations

from typing import Any

from ...i18n import N_
from .anthropic_messages import BLOCK_NOTES, NO_CLAUDE_TOKENIZER, assistant_blocks, user_blocks
from ...model import RecordedCompaction, RecordedUsage
from .common import (
    Check, Format, FormatError, Imported, JsonLines, Message, call_number, record_objects, said,
    settle_calls,
)

MESSAGE_RECORDS = ("user", "assistant")

NOTES = {
    "merged": N_("Content blocks written one per line were merged back into their API messages: %(count)s lines."),
    "skipped": N_("Lines skipped: %(count)s (progress, hooks, file snapshots, queue and system records). They are the app's bookkeeping, never sent to the model."),
    "sidechain": N_("Sub-agent lines left out: %(count)s. A sub-agent's conversation is sent in its own requests, not in this one."),
    "branch": N_("Lines on other branches left out: %(count)s (a rewind or a retry). The replay follows the chain a resumed session follows, back from the last message."),
    "compacted": N_("Compactions recorded by Claude Code: %(count)s. The replay keeps the whole history; each summary and the call it came before are kept with the transcript."),
    "partial": N_("The file starts in the middle of a session (its first message's parent is not in it). Tool results whose call is not in the file: %(count)s, left out."),
    "unanswered": N_("Calls without a result in the file: %(count)s (the session or the file stops before they returned), left out."),
    **BLOCK_NOTES,
}
NOT_IN_LOG = N_("Claude Code's log holds neither the system prompt nor the tool definitions.")


def _is_claude_code(raw: Any) -> bool:
    """JSON Lines whose message records carry Claude Code's envelope (uuid, parentUuid, sessionId)."""
    return any(
        record.get("type") in MESSAGE_RECORDS and "parentUuid" in record and "sessionId" in record for record in record_objects(raw)
    )


def _chain(raw: JsonLines, counts: dict[str, int]) -> tuple[list[tuple[int, dict]], bool]:
    """The records from the root to the last message, as a resumed session walks them, and
    whether the root's parent is missing from the file."""
    by_uuid: dict[str, tuple[int, dict]] = {}
    leaf = None
    # A sub-agent's own file (subagents/agent-*.jsonl) is all sidechain: then it is the conversation.
    own = any(isinstance(record, dict) and "uuid" in record and not record.get("isSidechain") for _number, record in raw.records)
    for number, record in raw.records:
        if not isinstance(record, dict) or not isinstance(record.get("uuid"), str):
            continue
        if record.get("isSidechain") and own:
            counts["sidechain"] += 1
            continue
        by_uuid[record["uuid"]] = (number, record)
        if record.get("type") in (*MESSAGE_RECORDS, "system"):
            leaf = (number, record)
    chain, seen, partial = [], set(), False
    while leaf is not None and leaf[1]["uuid"] not in seen:
        seen.add(leaf[1]["uuid"])
        chain.append(leaf)
        parent = leaf[1].get("parentUuid") or leaf[1].get("logicalParentUuid")
        leaf = by_uuid.get(parent) if isinstance(parent, str) else None
        partial = isinstance(parent, str) and leaf is None
    chain = _with_parallel_results(chain[::-1], by_uuid, seen)
    counts["branch"] = sum(1 for number, record in by_uuid.values() if record.get("type") in MESSAGE_RECORDS and record["uuid"] not in seen)
    return chain, partial


def _blocks(record: dict, kind: str) -> list[dict]:
    content = (record.get("message") or {}).get("content")
    return [block for block in content if isinstance(block, dict) and block.get("type") == kind] if isinstance(content, list) else []


def _with_parallel_results(chain: list[tuple[int, dict]], by_uuid: dict, seen: set) -> list[tuple[int, dict]]:
    """The chain with the results of parallel calls put back: each result's parent is its own
    tool_use line, so all but the last call's result hang off the chain on branches of their
    own. They go right after the reply, before the chain's next user or system line."""
    off_chain = {
        block.get("tool_use_id"): (number, record)
        for number, record in by_uuid.values()
        if record["uuid"] not in seen and record.get("type") == "user"
        for block in _blocks(record, "tool_result")
    }
    out, pending = [], []
    for number, record in chain:
        if record.get("type") in ("user", "system") and pending:
            out += sorted(pending, key=lambda item: item[0])
            pending = []
        out.append((number, record))
        for block in _blocks(record, "tool_use") if record.get("type") == "assistant" else []:
            found = off_chain.pop(block.get("id"), None)
            if found is not None and found not in pending:
                pending.append(found)
                seen.add(found[1]["uuid"])
    return out + sorted(pending, key=lambda item: item[0])


def _api_messages(chain: list[tuple[int, dict]], counts: dict[str, int]) -> list[dict]:
    """The chain as API messages {role, content blocks, line, usage, model}: an assistant
    reply's lines merged by message.id, consecutive user lines (parallel results) into one
    turn. Compaction boundaries and summaries become {"compaction": …} markers."""
    merged: list[dict] = []
    for number, record in chain:
        kind = record.get("type")
        message = record.get("message")
        if kind == "system" and record.get("subtype") == "compact_boundary":
            metadata = record.get("compactMetadata") or {}
            merged.append({"compaction": {"line": number, "trigger": metadata.get("trigger"), "tokens": metadata.get("preTokens"), "summary": ""}})
            continue
        if kind not in MESSAGE_RECORDS or not isinstance(message, dict):
            continue
        if record.get("isCompactSummary"):
            summary = message.get("content")
            marker = next((item for item in reversed(merged) if "compaction" in item), None)
            if marker is None:  # older versions wrote the summary without a boundary
                marker = {"compaction": {"line": number, "trigger": None, "tokens": None, "summary": ""}}
                merged.append(marker)
            marker["compaction"]["summary"] = summary if isinstance(summary, str) else ""
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        last = merged[-1] if merged else {}
        same_reply = kind == "assistant" and last.get("role") == "assistant" and last.get("id") and last["id"] == message.get("id")
        if (same_reply or (kind == "user" == last.get("role"))) and isinstance(blocks, list) and isinstance(last.get("content"), list):
            counts["merged"] += 1
            last["content"] = last["content"] + blocks
            last["usage"] = message.get("usage") or last.get("usage")
            continue
        merged.append({"role": kind, "content": blocks, "line": number, "id": message.get("id"), "usage": message.get("usage"), "model": message.get("model")})
    return merged


def _usage(usage: Any, call: int, line: int) -> RecordedUsage | None:
    """Anthropic's usage: the request is its input plus what was written to and read from the cache."""
    if not isinstance(usage, dict) or not isinstance(usage.get("input_tokens"), int):
        return None
    parts = [usage.get(key) for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
    cached = usage.get("cache_read_input_tokens")
    return RecordedUsage(call, sum(part for part in parts if isinstance(part, int)), usage.get("output_tokens"), cached if isinstance(cached, int) else None, f"line {line}")


def _read_claude_code(raw: Any) -> Imported:
    """Long because it is one walk: the chain, its API messages, then each as chat messages
    with the usage of each call and the compactions between them."""
    counts = {key: 0 for key in NOTES} | {"tools": 0, "moved": 0}
    chain, partial = _chain(raw, counts)
    counts["skipped"] = sum(
        1 for _number, record in raw.records
        if not (isinstance(record, dict) and (record.get("type") in MESSAGE_RECORDS or record.get("subtype") == "compact_boundary"))
    )
    check = Check()
    messages: list[Message] = []
    origins: list[str] = []
    usage, compactions, models = [], [], []
    for item in _api_messages(chain, counts):
        if "compaction" in item:
            marker = item["compaction"]
            compactions.append(RecordedCompaction(call_number(messages), marker["summary"], marker["trigger"], marker["tokens"], f"line {marker['line']}"))
            continue
        at = f"line {item['line']}"
        if not check.array(item["content"], f"{at}.message.content", "a string or a list of content blocks"):
            continue
        if item["role"] == "assistant":
            recorded = _usage(item["usage"], call_number(messages), item["line"])
            usage += [recorded] if recorded else []
            models += [item["model"]] if isinstance(item["model"], str) else []
        reader = user_blocks if item["role"] == "user" else assistant_blocks
        for message in reader(check, item["content"], f"{at}.message", counts):
            messages.append(message)
            origins.append(at)
    removed = 0
    if partial:
        known = {call["id"] for message in messages for call in message.get("tool_calls") or []}
        kept = [i for i, message in enumerate(messages) if message["role"] != "tool" or message.get("tool_call_id") in known]
        removed = len(messages) - len(kept)
        messages, origins = [messages[i] for i in kept], [origins[i] for i in kept]
    if check.problems:
        raise FormatError(check.problems)
    messages, origins = settle_calls(messages, origins, counts)
    if not messages:
        raise FormatError([("", "the session has no user or assistant message")])
    counts["compacted"] = len(compactions)
    notes = said(counts, NOTES) + ([(NOTES["partial"], {"count": removed})] if partial else [])
    imported = Imported("claude-code", messages, [], "tools", origins, [*notes, (NOT_IN_LOG, {})])
    imported.model = max(set(models), key=models.count) if models else None
    imported.usage, imported.compactions = tuple(usage), tuple(compactions)
    return imported


FORMAT = Format("claude-code", N_("Claude Code session"), _is_claude_code, _read_claude_code, notes=(NO_CLAUDE_TOKENIZER,), reads_keys=frozenset())
