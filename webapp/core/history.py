"""The history as the compactor sees it: blocks of measured messages."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from .tokens import Message, content_text, tool_call_texts

TRUNCATION_MARK = "[Truncated"
# by-layer's overflow notice, the manual's (004_abe3947712a3ce73.txt, step 9) in English.
OVERFLOW_NOTICE = (
    "Note: the context was condensed to respect the model's limits. "
    "Some old details may no longer be accessible."
)
CLEARED_MARK = "[Cleared"
# A tool's output: a tool message, or a legacy function-calling result (role "function").
TOOL_RESULT_ROLES = ("tool", "function")


@dataclass(frozen=True)
class Block:
    """One message of the history, measured once.

    `id` is stable across calls (the script message's id, or "s1", "s2"… for summaries), so a
    view can follow a message from call to call; `request` is the user request it belongs to.
    """

    id: str
    message: Message
    units: int
    request: int
    state: Literal["original", "truncated", "cleared", "summary", "notice"] = "original"
    replaces: tuple[str, ...] = ()
    layer: str = "history"  # memory, retrieval or history (layers.MESSAGE_LAYERS)
    group: str = ""  # retrieval messages of one group are compressed as a unit

    # Cached: a compaction scans every old block each time it runs, and a block's message is
    # never modified (compaction replaces the block).
    @cached_property
    def role(self) -> str:
        return self.message.get("role", "")

    @cached_property
    def text(self) -> str:
        return content_text(self.message.get("content"))

    @property
    def searchable(self) -> str:
        return searchable(self.message)

    @property
    def tool_call_ids(self) -> tuple[str, ...]:
        return tuple(call.get("id", "") for call in self.message.get("tool_calls") or [])


def searchable(message: Message) -> str:
    """Everything of a message a model reads: content and tool call arguments."""
    parts = [content_text(message.get("content"))]
    for name, arguments in tool_call_texts(message):
        parts += [name, arguments]
    return "\n".join(parts)


def keep_from(history: list[Block], keep: int) -> int:
    """Where KEEP starts: the `keep`-th user request from the end; 0 (everything protected)
    when there are fewer. The seed's `keep_from`."""
    seen = 0
    for index in range(len(history) - 1, -1, -1):
        if history[index].role == "user":
            seen += 1
            if seen == keep:
                return index
    return 0


def keep_start(history: list[Block], keep: int, unit: str = "requests") -> int:
    """Where KEEP starts, with KEEP counted in `unit`: the last `keep` requests (the seed's
    rule), the last `keep` tool results, or the last `keep` turns (assistant replies, with
    the tool results that answer them). A tool result's KEEP starts at the reply that called
    it, so KEEP never splits a call from its results. 0 (everything protected) when the
    history holds fewer."""
    if unit == "requests":
        return keep_from(history, keep)
    counted = "tool" if unit == "tool_results" else "assistant"
    seen = 0
    for index in range(len(history) - 1, -1, -1):
        if history[index].role == counted:
            seen += 1
            if seen == keep:
                while index > 0 and history[index].role == "tool":
                    index -= 1
                return index
    return 0
