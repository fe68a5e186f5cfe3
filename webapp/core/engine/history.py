"""The history as the compactor sees it: blocks of measured messages."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from ..counting.tokens import Message, call_names, content_text, tool_call_texts
from ..model import PairFacts, pair_facts

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

    @cached_property
    def chars(self) -> int:
        """The message's length as JSON, the measure Gemini CLI splits its history by."""
        return len(json.dumps(self.message, ensure_ascii=False))

    # Read at every call while the block is sent: the facts' search, the pair check.
    @cached_property
    def searchable(self) -> str:
        return searchable(self.message)

    @cached_property
    def tool_call_ids(self) -> tuple[str, ...]:
        return tuple(call.get("id", "") for call in self.message.get("tool_calls") or [])

    @cached_property
    def pair_facts(self) -> PairFacts:
        return pair_facts(self.message)

    @cached_property
    def named_calls(self) -> tuple[tuple[str, str], ...]:
        """Its tool calls in order, each as (call id, the function it names)."""
        return tuple((call_id, name) for call_id, (name, _) in zip(self.tool_call_ids, tool_call_texts(self.message)))

    @cached_property
    def first_names(self) -> dict[str, str]:
        """The function each call id names at its first call (an id used twice keeps its
        first), for the ids that are strings, as valid ones are."""
        return {call_id: name for call_id, name in reversed(self.named_calls) if isinstance(call_id, str)}

    @cached_property
    def call_names(self) -> dict[str, str]:
        """The function each of its tool calls names, by call id."""
        return call_names((self.message,))


def history_call_names(history: list[Block] | tuple[Block, ...]) -> dict[str, str]:
    """`call_names` of the history's messages, from each block's own (a compaction asks it of
    the whole history, every time it runs)."""
    names: dict[str, str] = {}
    for block in history:
        if block.call_names:
            names.update(block.call_names)
    return names


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


def caller_of(history: list[Block], index: int, call_id: str | None) -> int | None:
    """The reply before `index` that made the call `call_id`."""
    for position in range(index - 1, -1, -1):
        if call_id in history[position].tool_call_ids:
            return position
    return None
