"""SWE-agent trajectories: an object with "history", or its history list. The history is
chat messages with SWE-agent's own bookkeeping fields, and its tool results name their call
in a one-item `tool_call_ids` list."""

from __future__ import annotations

from typing import Any

from ...i18n import N_
from .common import Check, Format, FormatError, Imported, Message, show

SWE_AGENT_KEYS = ("tool_call_ids", "message_type", "agent", "is_demo")
SWE_AGENT_ROLES = ("system", "user", "assistant", "tool")


def _is_swe_agent(raw: Any) -> bool:
    """An object with "history" (and no "messages"), or a list whose items carry one of
    SWE-agent's own keys."""
    if isinstance(raw, dict):
        return "history" in raw and "messages" not in raw
    items = [item for item in raw if isinstance(item, dict)] if isinstance(raw, list) else []
    return any(key in item for item in items for key in SWE_AGENT_KEYS)


def _read_swe_agent(raw: Any) -> Imported:
    """SWE-agent's history is chat messages with its own bookkeeping fields (agent,
    message_type, thought, action, is_demo), which are not sent; a tool result names its call
    in `tool_call_ids`, a list SWE-agent fills with exactly one id."""
    check = Check()
    history = raw.get("history") if isinstance(raw, dict) else raw
    if not check.array(history, "history", "a list of messages") or not history:
        raise FormatError(check.problems or [("history", "the trajectory has no message: at least 1 is needed")])
    messages: list[Message] = []
    examples = set()
    for index, item in enumerate(history):
        at = f"history[{index}]"
        if not check.object(item, at, "a message object") or not check.one_of(item.get("role"), SWE_AGENT_ROLES, f"{at}.role"):
            continue
        message: Message = {"role": item["role"], "content": item.get("content")}
        if item["role"] == "tool":
            ids = item.get("tool_call_ids", [item.get("tool_call_id")])
            if not (isinstance(ids, list) and len(ids) == 1):
                check.add(f"{at}.tool_call_ids", f"expected a list of exactly one call id, got {show(ids)}: which call this result answers is ambiguous")
                continue
            message["tool_call_id"] = ids[0]
        if item.get("tool_calls") is not None:
            message["tool_calls"] = item["tool_calls"]
        if item.get("is_demo") and item["role"] == "user":
            examples.add(len(messages))
        messages.append(message)
    if check.problems:
        raise FormatError(check.problems)
    notes = [
        (N_("SWE-agent's own fields (agent, message_type, thought, action) were left out, as SWE-agent leaves them out of its requests; tool_call_ids became tool_call_id."), {}),
        (N_("A trajectory does not hold the tool definitions."), {}),
    ]
    if examples:
        notes.append((N_("Demonstrations: %(count)s. They are examples, sent ahead of the first real task like the system prompt."), {"count": len(examples)}))
    return Imported("swe-agent", messages, [], "tools", [f"history[{i}]" for i in range(len(history))], notes, frozenset(examples))


FORMAT = Format("swe-agent", N_("SWE-agent trajectory"), _is_swe_agent, _read_swe_agent, reads_keys=frozenset(("history", "messages")), shape='an object with "history" (a .traj file)')
