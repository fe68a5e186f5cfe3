"""Claude Code sessions: the JSON Lines file under ~/.claude/projects/, one record per line.

The conversation is a tree: each record names its parent (`parentUuid`), and a rewind or a
retry leaves branches. A resumed session continues from the last message and walks back to
the root, crossing a compaction by its `logicalParentUuid`; so does this reader. Each content
block of an API reply is its own line (sharing `message.id` and its `usage`), and a tool that
ran while the reply was still streaming has its result written between two of them: every line
of one `message.id` is merged back into one message, its results after it, then read as
Anthropic Messages blocks (docs/transcripts.md)."""

from __future__ import annotations

from typing import Any

from ...i18n import N_
from .anthropic_messages import BLOCK_NOTES, NO_CLAUDE_TOKENIZER, assistant_blocks, user_blocks
from ...model import RecordedCompaction, RecordedUsage
from ...triggers import CLAUDE_CODE_AUTOCOMPACT_BUFFER, CLAUDE_CODE_OLD_OUTPUT_RESERVE, CLAUDE_CODE_OUTPUT_RESERVE
from .common import (
    Check, Format, FormatError, Imported, JsonLines, Message, call_number, record_objects, said,
    settle_calls,
)

MESSAGE_RECORDS = ("user", "assistant")
# The user messages Claude Code writes when the user stops a request (cli.js of
# @anthropic-ai/claude-code 2.0.76 and 2.1.30): the request under way gets no reply, and the
# notice is sent with the next request, after what the stopped one carried.
INTERRUPTIONS = ("[Request interrupted by user]", "[Request interrupted by user for tool use]")
# The error results Claude Code writes itself for a tool call the user stopped or refused
# (same source): they are in the file and sent as written.
OWN_RESULTS = ("Interrupted by user", "The user doesn't want to proceed", "The user doesn't want to take this action")

NOTES = {
    "merged": N_(
        "Content blocks written one per line were merged back into their API messages: %(count)s lines. "
        "A reply is one call, with its tool results after it, even where a result was written between its lines."
    ),
    "skipped": N_("Lines skipped: %(count)s (progress, hooks, file snapshots, queue and system records). They are the app's bookkeeping, never sent to the model."),
    "sidechain": N_("Sub-agent lines left out: %(count)s. A sub-agent's conversation is sent in its own requests, not in this one."),
    "branch": N_("Lines on other branches left out: %(count)s (a rewind or a retry). The replay follows the chain a resumed session follows, back from the last message."),
    "compacted": N_("Compactions recorded by Claude Code: %(count)s. The replay keeps the whole history; each summary and the call it came before are kept with the transcript."),
    "partial": N_("The file starts in the middle of a session (its first message's parent is not in it). Tool results whose call is not in the file: %(count)s, left out."),
    "unanswered": N_("Calls without a result in the file: %(count)s (the session or the file stops before they returned), left out."),
    "relinked": N_(
        "Compactions whose history is taken from the lines written before them: %(count)s. The line their "
        "logicalParentUuid names is not in the file."
    ),
    "own_results": N_(
        "Tool calls the user stopped or refused: %(count)s. Claude Code answered each itself with an error result "
        "(\"Interrupted by user\", \"The user doesn't want to proceed…\"), sent as the file writes it."
    ),
    **BLOCK_NOTES,
}
INTERRUPTED = N_(
    "Requests the user interrupted: %(count)s, the first at line %(line)s. Claude Code recorded no reply and no usage "
    "for them: they are no calls of the replay, and what each carried goes with the next request, after the "
    "interruption notice, as Claude Code sends it."
)
INTERRUPTED_LAST = N_(
    "The file ends with a request the user interrupted (line %(line)s): it got no reply and no usage, so it is left "
    "out of the replay, with the tool results it carried (%(count)s) and their calls."
)
OLDER_LINE = N_(
    "Written by Claude Code %(version)s, which reserves the model's whole max output below the window, "
    "%(reserve)s tokens by default, besides a %(buffer)s-token buffer (2.1.21 and later reserve at most "
    "%(current)s). The claude-code strategy follows this version's line: its output reserve is %(reserve)s. "
    "Change it in the settings."
)
# The versions that reserved the whole max output (cli.js of 2.0.0, 2.0.76, 2.1.20; 2.1.21 caps it).
OLDER_LINE_VERSIONS = ((2, 0, 0), (2, 1, 21))
STARTS_MIDWAY = N_(
    "The file starts in the middle of a session (its first message's parent is not in it): the "
    "provider's count at call 1 holds the history before it."
)
NOT_IN_LOG = N_("Claude Code's log holds neither the system prompt nor the tool definitions.")


def _is_claude_code(raw: Any) -> bool:
    """JSON Lines whose message records carry Claude Code's envelope (uuid, parentUuid, sessionId)."""
    return any(
        record.get("type") in MESSAGE_RECORDS and "parentUuid" in record and "sessionId" in record for record in record_objects(raw)
    )


def _chain(raw: JsonLines, counts: dict[str, int]) -> tuple[list[tuple[int, dict]], dict[str, list[tuple[int, dict]]], bool]:
    """The records from the root to the last message, as a resumed session walks them; every
    line of each reply on it, by `message.id` (`_replies`); and whether the root's parent is
    missing from the file."""
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
        found = by_uuid.get(parent) if isinstance(parent, str) else None
        if found is None and isinstance(parent, str) and leaf[1].get("subtype") == "compact_boundary":
            found = _message_before(by_uuid, leaf[0])
            counts["relinked"] += found is not None
        leaf, partial = found, isinstance(parent, str) and found is None
    replies = _replies(by_uuid, seen)
    chain = _with_parallel_results(chain[::-1], by_uuid, seen, replies)
    counts["branch"] = sum(1 for number, record in by_uuid.values() if record.get("type") in MESSAGE_RECORDS and record["uuid"] not in seen)
    return chain, replies, partial


def _message_before(by_uuid: dict, number: int) -> tuple[int, dict] | None:
    """The last message written before line `number`: a compaction's history, when the line its
    logicalParentUuid names was never written (real 2.1.39 files have such boundaries)."""
    return max(
        ((line, record) for line, record in by_uuid.values() if line < number and record.get("type") in MESSAGE_RECORDS),
        key=lambda item: item[0], default=None,
    )


def _reply_id(record: dict) -> str | None:
    message_id = (record.get("message") or {}).get("id") if record.get("type") == "assistant" else None
    return message_id if isinstance(message_id, str) and message_id else None


def _replies(by_uuid: dict, seen: set) -> dict[str, list[tuple[int, dict]]]:
    """Every line of each API response on the chain, by `message.id`, in file order. A line
    written after a tool result (the tool ran while the reply streamed) or beside a parallel
    call hangs off the chain; it is still part of the reply, so it is taken in (`seen`)."""
    on_chain = {_reply_id(record) for number, record in by_uuid.values() if record["uuid"] in seen} - {None}
    replies: dict[str, list[tuple[int, dict]]] = {}
    for number, record in sorted(by_uuid.values(), key=lambda item: item[0]):
        reply_id = _reply_id(record)
        if reply_id in on_chain:
            replies.setdefault(reply_id, []).append((number, record))
            seen.add(record["uuid"])
    return replies


def _blocks(record: dict, kind: str) -> list[dict]:
    content = (record.get("message") or {}).get("content")
    return [block for block in content if isinstance(block, dict) and block.get("type") == kind] if isinstance(content, list) else []


def _with_parallel_results(chain: list[tuple[int, dict]], by_uuid: dict, seen: set, replies: dict) -> list[tuple[int, dict]]:
    """The chain with the results of parallel calls put back: each result's parent is its own
    tool_use line, so all but the last call's result hang off the chain on branches of their
    own. They go after the reply (all its lines, `replies`), before the chain's next user or
    system line."""
    off_chain = {
        block.get("tool_use_id"): (number, record)
        for number, record in by_uuid.values()
        if record["uuid"] not in seen and record.get("type") == "user"
        for block in _blocks(record, "tool_result")
    }
    out, pending, met = [], [], set()
    for number, record in chain:
        if record.get("type") in ("user", "system") and pending:
            out += sorted(pending, key=lambda item: item[0])
            pending = []
        out.append((number, record))
        reply_id = _reply_id(record)
        if reply_id is None or reply_id in met:
            continue
        met.add(reply_id)
        for block in (block for _line, line in replies[reply_id] for block in _blocks(line, "tool_use")):
            found = off_chain.pop(block.get("id"), None)
            if found is not None and found not in pending:
                pending.append(found)
                seen.add(found[1]["uuid"])
    return out + sorted(pending, key=lambda item: item[0])


def _content(record: dict) -> Any:
    content = record["message"].get("content")
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def _interruption(blocks: Any) -> bool:
    """The notice Claude Code writes when the user stops a request."""
    return isinstance(blocks, list) and any(isinstance(block, dict) and block.get("text") in INTERRUPTIONS for block in blocks)


def _own_results(blocks: Any) -> int:
    """Claude Code's own error results for tool calls the user stopped or refused."""
    return sum(
        1 for block in (blocks if isinstance(blocks, list) else [])
        if isinstance(block, dict) and block.get("type") == "tool_result" and block.get("is_error")
        and isinstance(block.get("content"), str) and block["content"].startswith(OWN_RESULTS)
    )


def _api_messages(chain: list[tuple[int, dict]], replies: dict, counts: dict[str, int]) -> list[dict]:
    """The chain as API messages {role, content blocks, line, usage, model}: all the lines of
    one reply (one `message.id`) merged into one assistant message at its first line, with the
    usage of its last (the same input; the output complete), and the user lines after it
    (results, parallel or written between the reply's lines) into one turn. Compaction
    boundaries and summaries become {"compaction": …} markers. A user turn whose last line is an
    interruption notice says so ("interrupted": its line)."""
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
        if kind == "assistant":
            lines = replies.get(_reply_id(record) or "", [(number, record)])
            if lines[0][0] != number:
                continue  # merged into the reply at its first line
            parts = [(line, _content(part)) for line, part in lines]
            bad = next(((line, blocks) for line, blocks in parts if not isinstance(blocks, list)), None)
            line, blocks = bad or (number, [block for _line, part in parts for block in part])
            counts["merged"] += len(lines) - 1
            final = lines[-1][1]["message"]
            merged.append({"role": kind, "content": blocks, "line": line, "usage": final.get("usage"), "model": message.get("model")})
            continue
        blocks = _content(record)
        counts["own_results"] += _own_results(blocks)
        interrupted = number if _interruption(blocks) else None
        last = merged[-1] if merged else {}
        if last.get("role") == "user" and isinstance(blocks, list) and isinstance(last.get("content"), list):
            counts["merged"] += 1
            last["content"] = last["content"] + blocks
            last["interrupted"] = interrupted
            continue
        merged.append({"role": kind, "content": blocks, "line": number, "usage": None, "model": None, "interrupted": interrupted})
    return merged


def _without_interrupted_end(merged: list[dict]) -> tuple[list[dict], tuple[str, dict[str, int]] | None]:
    """The API messages without a last user turn that ends with an interruption notice: that
    request got no reply, so it is no call. The reply before it loses the calls whose results
    go with it. The note saying so, or None."""
    last = merged[-1] if merged else {}
    if not last.get("interrupted"):
        return merged, None
    results = {block.get("tool_use_id") for block in last["content"] if isinstance(block, dict) and block.get("type") == "tool_result"}
    reply = next((item for item in reversed(merged[:-1]) if item.get("role") == "assistant"), None)
    if reply is not None and isinstance(reply["content"], list):
        reply["content"] = [block for block in reply["content"] if not (isinstance(block, dict) and block.get("id") in results)]
    return merged[:-1], (INTERRUPTED_LAST, {"line": last["interrupted"], "count": len(results)})


def _older_version(chain: list[tuple[int, dict]]) -> str | None:
    """The version of Claude Code its last line names, when that version reserved the whole
    max output (OLDER_LINE_VERSIONS); None otherwise."""
    version = next((record["version"] for _number, record in reversed(chain) if isinstance(record.get("version"), str)), "")
    parts = tuple(int(part) for part in version.split(".")[:3] if part.isdigit())
    if len(parts) != 3 or not OLDER_LINE_VERSIONS[0] <= parts < OLDER_LINE_VERSIONS[1]:
        return None
    return version


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
    chain, replies, partial = _chain(raw, counts)
    counts["skipped"] = sum(
        1 for _number, record in raw.records
        if not (isinstance(record, dict) and (record.get("type") in MESSAGE_RECORDS or record.get("subtype") == "compact_boundary"))
    )
    check = Check()
    messages: list[Message] = []
    origins: list[str] = []
    usage, compactions, models = [], [], []
    api_messages, interrupted_end = _without_interrupted_end(_api_messages(chain, replies, counts))
    for item in api_messages:
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
    starts = [(NOTES["partial"], {"count": removed}) if removed else (STARTS_MIDWAY, {})] if partial else []
    notes = said(counts, NOTES) + starts
    interruptions = [
        number for number, record in chain
        if record.get("type") == "user" and isinstance(record.get("message"), dict) and _interruption(_content(record))
    ][: -1 if interrupted_end else None]
    notes += [(INTERRUPTED, {"count": len(interruptions), "line": interruptions[0]})] if interruptions else []
    notes += [interrupted_end] if interrupted_end else []
    older = _older_version(chain)
    if older:
        values = {"reserve": CLAUDE_CODE_OLD_OUTPUT_RESERVE, "buffer": CLAUDE_CODE_AUTOCOMPACT_BUFFER, "current": CLAUDE_CODE_OUTPUT_RESERVE}
        notes.append((OLDER_LINE, {"version": older, **values}))
    imported = Imported("claude-code", messages, [], "tools", origins, [*notes, (NOT_IN_LOG, {})])
    # The model of the last reply: a session switched with /model runs on it now, in its window.
    imported.model = models[-1] if models else None
    imported.usage, imported.compactions = tuple(usage), tuple(compactions)
    imported.harness_settings = {"output_reserve": CLAUDE_CODE_OLD_OUTPUT_RESERVE} if older else {}
    return imported


FORMAT = Format("claude-code", N_("Claude Code session"), _is_claude_code, _read_claude_code, notes=(NO_CLAUDE_TOKENIZER,), reads_keys=frozenset(), shape='JSON Lines of "user" and "assistant" records with "parentUuid" and "sessionId"')
