"""KEEP as each harness defines it: where the part of the history it never compacts starts.

Each rule reads the history and the product's own figures (`Strategy.params`), and never starts
KEEP on a tool result: it moves back to the reply that made the call, so a call and its result
are kept or compacted together (pair safety, which OpenHands' V1 condenser and LangChain's
middleware do too, and which the playground asks of every product).
"""

from __future__ import annotations

from typing import Any, Callable

from .history import TOOL_RESULT_ROLES, Block


def before_results(history: list[Block], index: int) -> int:
    """`index`, moved back past tool results to the reply whose calls they answer."""
    while 0 < index < len(history) and history[index].role in TOOL_RESULT_ROLES:
        index -= 1
    return index


def newest_request(history: list[Block], params: dict[str, Any]) -> int:
    """Codex CLI: the newest user message (it keeps user messages, and nothing else, whole)."""
    return next((i for i in range(len(history) - 1, -1, -1) if history[i].role == "user"), 0)


def last_turn(history: list[Block], params: dict[str, Any]) -> int:
    """Claude Code, Anthropic's compaction: the turn under way (the last request, or the last
    reply and the results of its calls), so the model goes on from where it was."""
    if not history:
        return 0
    return before_results(history, len(history) - 1)


def newest_share(history: list[Block], params: dict[str, Any]) -> int:
    """Gemini CLI's split: the first user message (not a tool result) at or past
    1 - `preserve` of the history's characters as JSON; else the last such message before."""
    total = sum(block.chars for block in history)
    target = total * (1 - params["preserve"])
    seen = 0
    last_split = 0
    for index, block in enumerate(history):
        if block.role == "user":
            if seen >= target:
                return index
            last_split = index
        seen += block.chars
    return last_split


def condenser_tail(history: list[Block], params: dict[str, Any]) -> int:
    """OpenHands' LLM summarizing condenser: the newest max_size // 2 - keep_first - 1 events
    (one place is the summary's)."""
    tail = params["max_size"] // 2 - params["keep_first"] - 1
    return before_results(history, max(params["keep_first"], len(history) - tail))


def attention_window(history: list[Block], params: dict[str, Any]) -> int:
    """OpenHands' observation masking: the last `attention_window` events."""
    return before_results(history, max(0, len(history) - params["attention_window"]))


def last_messages(history: list[Block], params: dict[str, Any]) -> int:
    """LangChain's SummarizationMiddleware: the last `keep_messages` messages, moved back to
    the AI message that made the calls when that would start on a tool result."""
    return before_results(history, max(0, len(history) - params["keep_messages"]))


KEEP_RULES: dict[str, Callable[[list[Block], dict[str, Any]], int]] = {
    "newest-request": newest_request,
    "last-turn": last_turn,
    "newest-share": newest_share,
    "condenser-tail": condenser_tail,
    "attention-window": attention_window,
    "last-messages": last_messages,
}
