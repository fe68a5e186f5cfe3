"""OpenHands event trajectories (a JSON list of events) and evaluation output (output.jsonl:
one run per line, its events in "history"). An event is an action or an observation; an
agent's tool action carries `tool_call_metadata.model_response`, the whole chat completion
it came from (its message, tool calls and usage), and its observation names the same
`tool_call_id` (docs/transcripts.md)."""

from __future__ import annotations

from typing import Any

from ...i18n import N_
from ...model import RecordedCompaction, RecordedUsage
from .common import (
    Check, Format, FormatError, Imported, JsonLines, Message, call_number, said, settle_calls,
)

NOTES = {
    "responses": N_("Agent actions became the assistant messages of the model responses they came from (tool_call_metadata), observations tool messages."),
    "skipped": N_("Events that are not conversation left out: %(count)s (agent state changes, recalls, empty observations)."),
    "unanswered": N_("Calls without an observation: %(count)s (such as finish, which ends the run), left out."),
    "moved": N_("Messages written between a call and its observation: %(count)s. They are sent after the results, as chat completions requires."),
    "condensed": N_("Condensations recorded by OpenHands: %(count)s. The replay keeps the whole history; each summary and the call it came before are kept with the transcript."),
}


def _events(raw: Any) -> list | None:
    if isinstance(raw, list):
        return raw
    return raw.get("history") if isinstance(raw, dict) else None


def _is_event(item: Any) -> bool:
    return isinstance(item, dict) and "source" in item and ("action" in item or "observation" in item)


def _is_openhands(raw: Any) -> bool:
    """A list of events, a run ({"instance_id", "history": events}), or JSON Lines of runs."""
    if isinstance(raw, JsonLines):
        first = raw.records[0][1]
        return isinstance(first, dict) and "instance_id" in first and isinstance(first.get("history"), list)
    events = _events(raw)
    return isinstance(events, list) and any(_is_event(item) for item in events[:20])


def _runs(raw: Any) -> list[Any]:
    return [record for _number, record in raw.records] if isinstance(raw, JsonLines) else [raw]


def _usage(response: dict, call: int, at: str) -> RecordedUsage | None:
    usage = response.get("usage")
    if not isinstance(usage, dict) or not isinstance(usage.get("prompt_tokens"), int):
        return None
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    return RecordedUsage(call, usage["prompt_tokens"], usage.get("completion_tokens"), cached if isinstance(cached, int) else None, at)


# What CodeAct's conversation memory sends the model for an observation (OpenHands
# openhands/memory/conversation_memory.py, _process_observation, and the observations'
# own to_agent_observation and __str__, at 156d0686c46aafb0fa9d291da6421fb6f64dddc0):
# a command's output with its working directory, interpreter and exit code; an edit as its
# __str__ (the editor's own message, not the diff kept in `content` by versions before
# 3188646195, Feb. 2025, which wrote the message in `formatted_output_and_error`); an error
# with a closing line. Each is then cut in the middle to llm_config.max_message_chars.
ERROR_LINE = "\n[Error occurred in processing last action]"
REJECTED = ("OBSERVATION:\n", "\n[Last action has been rejected by the user]")
CUT_MARK = "\n[... Observation truncated due to length ...]\n"


def _command_text(content: str, metadata: Any) -> str:
    if not isinstance(metadata, dict):
        return content
    text = f"{metadata.get('prefix') or ''}{content}{metadata.get('suffix') or ''}"
    if metadata.get("working_dir"):
        text += f"\n[Current working directory: {metadata['working_dir']}]"
    if metadata.get("py_interpreter_path"):
        text += f"\n[Python interpreter: {metadata['py_interpreter_path']}]"
    if isinstance(metadata.get("exit_code"), int) and metadata["exit_code"] != -1:
        text += f"\n[Command finished with exit code {metadata['exit_code']}]"
    return text


def _edit_text(content: str, extras: dict) -> str:
    if extras.get("impl_source") == "oh_aci":
        formatted = extras.get("formatted_output_and_error")
        return formatted if isinstance(formatted, str) else content
    if extras.get("prev_exist") is False:
        return f"[New file {extras.get('path', '')} is created with the provided content.]\n"
    return content  # an LLM-based edit of an existing file: OpenHands draws its own diff of it


# Sent as they are, never cut: a file read (already cut by the editor) and a web page.
UNCUT = frozenset(("read", "browse"))


def _observation_text(event: dict, max_chars: int | None) -> str:
    """The text OpenHands sends the model for a tool's observation."""
    content = str(event.get("content") or "")
    extras = event.get("extras") if isinstance(event.get("extras"), dict) else {}
    kind = event.get("observation")
    if kind == "run":
        text = _command_text(content, extras.get("metadata"))
    elif kind == "edit":
        text = _edit_text(content, extras)
    elif kind == "error":
        text = content + ERROR_LINE
    elif kind == "user_rejected":
        text = REJECTED[0] + content + REJECTED[1]
    else:
        text = content
    if kind in UNCUT or max_chars is None or max_chars < 0 or len(text) <= max_chars:
        return text
    half = max_chars // 2
    return text[:half] + CUT_MARK + text[-half:]


def _event_messages(event: dict, at: str, state: dict) -> list[Message]:
    """An event as chat messages ([] for one a model never sees), each response's
    assistant message once however many actions it holds."""
    metadata = event.get("tool_call_metadata") or {}
    args = event.get("args") or {}
    if event.get("action") == "system" and isinstance(args.get("content"), str):
        state["tools"] = args.get("tools") if isinstance(args.get("tools"), list) else state["tools"]
        return [{"role": "system", "content": args["content"]}]
    if event.get("action") == "condensation":
        summary = args.get("summary")
        state["compactions"].append(RecordedCompaction(call_number(state["messages"]), summary if isinstance(summary, str) else "", source=at))
        return []
    if "observation" in event and metadata.get("tool_call_id"):
        return [{"role": "tool", "tool_call_id": metadata["tool_call_id"], "content": _observation_text(event, state["max_chars"])}]
    response = metadata.get("model_response")
    if "action" in event and isinstance(response, dict):
        if response.get("id") in state["seen"]:
            return []
        state["seen"].add(response.get("id"))
        message = ((response.get("choices") or [{}])[0] or {}).get("message") or {}
        if isinstance(response.get("model"), str):
            state["model"] = response["model"]
        recorded = _usage(response, call_number(state["messages"]), at)
        state["usage"] += [recorded] if recorded else []
        calls = [{"id": call.get("id"), "type": "function", "function": dict(call.get("function") or {})} for call in message.get("tool_calls") or []]
        return [{"role": "assistant", "content": message.get("content") or None} | ({"tool_calls": calls} if calls else {})]
    if event.get("action") == "message" and isinstance(args.get("content"), str):
        return [{"role": "user" if event.get("source") == "user" else "assistant", "content": args["content"]}]
    return []


def _read_openhands(raw: Any) -> Imported:
    check = Check()
    events = _events(raw)
    where = "history" if isinstance(raw, dict) else ""
    if not check.array(events, where or "events", "a list of events") or not events:
        raise FormatError(check.problems or [(where, "the run has no event")])
    counts = {key: 0 for key in NOTES}
    config = (raw.get("metadata") or {}).get("llm_config") if isinstance(raw, dict) else None
    config = config if isinstance(config, dict) else {}
    max_chars = config.get("max_message_chars")
    state: dict[str, Any] = {
        "messages": [], "seen": set(), "usage": [], "compactions": [], "tools": [], "model": None,
        "max_chars": max_chars if isinstance(max_chars, int) and not isinstance(max_chars, bool) else None,
    }
    origins: list[str] = []
    for index, event in enumerate(events):
        at = f"{where}[{index}]"
        if not check.object(event, at, "an event object"):
            continue
        rewritten = _event_messages(event, at, state)
        counts["skipped"] += not rewritten and event.get("action") != "condensation" and "tool_call_metadata" not in event
        state["messages"] += rewritten
        origins += [at] * len(rewritten)
    if check.problems:
        raise FormatError(check.problems)
    messages, origins = settle_calls(state["messages"], origins, counts)
    counts["responses"] = int(bool(state["seen"]))
    counts["condensed"] = len(state["compactions"])
    model = state["model"] or (config["model"] if isinstance(config.get("model"), str) else None)
    notes = said(counts, NOTES)
    if not state["tools"]:
        notes.append((N_("The trajectory does not hold the tool definitions."), {}))
    imported = Imported("openhands", messages, state["tools"], "tools", origins, notes, model=model)
    imported.usage, imported.compactions = tuple(state["usage"]), tuple(state["compactions"])
    # The window OpenHands itself worked with (LLMConfig.max_input_tokens), when the run's
    # metadata records it; null when it was left to the model's own.
    window = config.get("max_input_tokens")
    if isinstance(window, int) and not isinstance(window, bool) and window > 0:
        imported.window, imported.window_source = window, "metadata.llm_config.max_input_tokens"
    return imported


FORMAT = Format("openhands", N_("OpenHands trajectory"), _is_openhands, _read_openhands, runs=_runs, reads_keys=frozenset(("instance_id", "history", "metadata")), shape='a list of events with "action" or "observation", a run with "instance_id" and "history", or output.jsonl')
