"""Ollama /api/chat exchanges as a program logs them: each request body ({"model", "messages",
"tools", "options"}) followed by its response, one JSON value a line (or a JSON list), a
streamed response as its chunks ({"message", "done": false} ... then the one with "done": true
and the counts), or each exchange as {"request": …, "response": …}. The last response of an
exchange carries `prompt_eval_count` (the prompt's tokens, as Ollama counted them) and
`eval_count` (the reply's).

The history is rebuilt (the first request, each reply unless the next request sends it back, the
messages each request adds) and read by the Ollama request reader (ollama.py); each answered
request is a call, its `prompt_eval_count` the recorded usage. Ollama 0.3.x and earlier, and
0.30.0, counted only the prompt's tokens its KV cache did not hold (docs/harnesses.md, "Ollama"):
a file whose count falls below half the one before while its requests only grew was written by
one of them, and its counts are left out, said in a note. A request that is not the one before
plus new messages is the agent's compaction; `options.num_ctx` is the context Ollama ran at."""

from __future__ import annotations

from typing import Any

from ...i18n import N_
from ...model import RecordedCompaction, RecordedUsage
from . import ollama
from .common import Format, FormatError, Imported, JsonLines, said
from .recorded import read_rebuilt

NOTES = {
    "calls": N_("Ollama /api/chat exchanges: %(count)s requests answered, each with Ollama's own count of its prompt (prompt_eval_count)."),
    "new_only": N_(
        "These counts are of the tokens Ollama's cache did not hold, not of the whole prompt (Ollama 0.3.x and earlier, "
        "and 0.30.0, counted so): a count fell below half the one before while the requests only grew. "
        "The %(count)s counts are left out."
    ),
    "compacted": N_("Requests that were not the one before plus new messages (the agent compacted): %(count)s. The replay keeps the whole history."),
    "failed": N_("Requests answered with an error or not at all: %(count)s. They are not replayed."),
    "num_ctx": N_("The requests set Ollama's num_ctx to %(count)s tokens: the ollama strategy runs at it."),
}


def _items(raw: Any) -> list[tuple[str, Any]]:
    """The file's values with their places: `line N` of JSON Lines, `[i]` of a JSON list."""
    if isinstance(raw, JsonLines):
        return [(f"line {number}", value) for number, value in raw.records]
    return [(f"[{index}]", value) for index, value in enumerate(raw)] if isinstance(raw, list) else []


def _is_request(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("messages"), list) and "message" not in value


def _is_response(value: Any) -> bool:
    return isinstance(value, dict) and "done" in value and ("message" in value or "error" in value)


def _is_exchanges(raw: Any) -> bool:
    """Requests each followed by a response (or {"request", "response"} pairs): both kinds present."""
    values = [value for _place, value in _items(raw)[:50]]
    pairs = [value for value in values if isinstance(value, dict) and _is_request(value.get("request"))]
    return bool(pairs) or (any(map(_is_request, values)) and any(map(_is_response, values)))


def _exchanges(raw: Any) -> list[tuple[str, dict, list[tuple[str, dict]]]]:
    """Each request with its place and the response values that answered it (a stream's chunks)."""
    found: list[tuple[str, dict, list[tuple[str, dict]]]] = []
    for place, value in _items(raw):
        if isinstance(value, dict) and _is_request(value.get("request")):
            answer = value.get("response")
            chunks = answer if isinstance(answer, list) else [answer] if isinstance(answer, dict) else []
            found.append((f"{place}.request", value["request"], [(f"{place}.response", chunk) for chunk in chunks]))
        elif _is_request(value):
            found.append((place, value, []))
        elif _is_response(value) and found:
            found[-1][2].append((place, value))
        else:
            raise FormatError([(place, "expected an /api/chat request (with \"messages\") or its response (with \"message\" and \"done\")")])
    return found


def _reply(chunks: list[tuple[str, dict]]) -> tuple[dict | None, dict, str]:
    """The assistant message the chunks add up to (None: no answer, or an error), the last
    chunk (its counts) and its place."""
    if not chunks or any("error" in chunk for _place, chunk in chunks) or not chunks[-1][1].get("done"):
        return None, {}, ""
    content, thinking, calls = "", "", []
    for _place, chunk in chunks:
        message = chunk.get("message") if isinstance(chunk.get("message"), dict) else {}
        content += message.get("content") or ""
        thinking += message.get("thinking") or ""
        calls += message.get("tool_calls") or []
    reply: dict[str, Any] = {"role": "assistant", "content": content}
    if thinking:
        reply["thinking"] = thinking
    if calls:
        reply["tool_calls"] = calls
    place, last = chunks[-1]
    return reply, last, place


def _read_exchanges(raw: Any) -> Imported:
    """Long because it is one pass over the exchanges, each part kept where it goes: the
    history and where each message came from, the reply of the call before, usage, compactions."""
    counts = {key: 0 for key in NOTES}
    history: list[Any] = []
    places: list[str] = []
    usage: list[tuple[int, int, int | None, str]] = []  # call, prompt, output, source
    compactions: list[RecordedCompaction] = []
    sent: list[Any] = []  # the last answered request's messages, then its reply
    sent_place = ""
    first: dict[str, tuple[Any, str]] = {}
    for place, request, chunks in _exchanges(raw):
        reply, last, last_place = _reply(chunks)
        if reply is None:
            counts["failed"] += 1
            continue
        messages = request["messages"]
        for key in ("tools", "model"):
            first.setdefault(key, (request.get(key), f"{place}.{key}"))
        counts["num_ctx"] = ollama.num_ctx_of(request) or counts["num_ctx"]
        before = sent[:-1]  # the request before, without its reply
        start, compacted = len(before), bool(sent) and messages[: len(before)] != before
        if compacted:
            kept = next(i for i, (now, then) in enumerate(zip([*messages, None], before)) if now != then)
            replies = [i for i, message in enumerate(messages) if isinstance(message, dict) and message.get("role") == "assistant"]
            start = max([kept, *(i + 1 for i in replies)])
            replaced = "\n".join(str(message.get("content") or "") for message in messages[kept:start] if isinstance(message, dict))
            compactions.append(RecordedCompaction(counts["calls"] + 1, replaced, source=place))
        new = messages[start:]
        if sent and (compacted or not new or not isinstance(new[0], dict) or new[0].get("role") != "assistant"):
            history.append(sent[-1])  # the client did not send the reply back: the model still wrote it
            places.append(sent_place)
        history += new
        places += [f"{place}.messages[{start + position}]" for position in range(len(new))]
        counts["calls"] += 1
        if isinstance(last.get("prompt_eval_count"), int):
            usage.append((counts["calls"], last["prompt_eval_count"], last.get("eval_count"), f"{last_place}.prompt_eval_count"))
        sent, sent_place = [*messages, reply], f"{last_place}.message"
    if not counts["calls"]:
        raise FormatError([("", "no request of this file was answered: there is nothing to replay")])
    history.append(sent[-1])
    places.append(sent_place)
    body = {"messages": history, "tools": first["tools"][0] or [], "model": first["model"][0]}
    imported = read_rebuilt("ollama-exchanges", ollama.FORMAT, body, "messages", places, {"tools": first["tools"][1]})
    counts["compacted"] = len(compactions)
    if _new_tokens_only(usage, compactions):
        counts["new_only"], usage = len(usage), []
    imported.notes = said(counts, NOTES) + imported.notes
    imported.usage = tuple(RecordedUsage(*figures[:3], None, figures[3]) for figures in usage)
    imported.compactions = tuple(compactions)
    imported.harness_settings = {"num_ctx": counts["num_ctx"]} if counts["num_ctx"] else {}
    return imported


def _new_tokens_only(usage: list[tuple[int, int, int | None, str]], compactions: list[RecordedCompaction]) -> bool:
    """Whether the counts are of the uncached tokens only: one falls below half the one of the
    call before while no compaction came between (the request only grew)."""
    compacted = {compaction.before_call for compaction in compactions}
    return any(
        now[1] * 2 < before[1] for before, now in zip(usage, usage[1:]) if now[0] == before[0] + 1 and now[0] not in compacted
    )


FORMAT = Format(
    "ollama-exchanges",
    N_("Ollama /api/chat exchanges"),
    _is_exchanges,
    _read_exchanges,
    reads_keys=frozenset(),
    shape='JSON Lines (or a list) of /api/chat requests, each followed by its response ("message", "done", "prompt_eval_count"), or {"request", "response"} pairs',
)
