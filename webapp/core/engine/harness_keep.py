"""KEEP as each harness defines it: where the part of the history it never compacts starts.

Each rule reads the history and the product's own figures (`Strategy.params`, on the
context), and never starts
KEEP on a tool result: it moves back to the reply that made the call, so a call and its result
are kept or compacted together (pair safety, which OpenHands' V1 condenser and LangChain's
middleware do too, and which the playground asks of every product).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from .history import TOOL_RESULT_ROLES, Block

if TYPE_CHECKING:
    from .compaction import Context


def before_results(history: list[Block], index: int) -> int:
    """`index`, moved back past tool results to the reply whose calls they answer."""
    while 0 < index < len(history) and history[index].role in TOOL_RESULT_ROLES:
        index -= 1
    return index


def newest_request(history: list[Block], context: Context) -> int:
    """Codex CLI: the newest user message (it keeps user messages, and nothing else, whole)."""
    return next((i for i in range(len(history) - 1, -1, -1) if history[i].role == "user" and history[i].state != "summary"), 0)


def last_turn(history: list[Block], context: Context) -> int:
    """Claude Code, Anthropic's compaction: the turn under way (the last request, or the last
    reply and the results of its calls), so the model goes on from where it was."""
    if not history:
        return 0
    return before_results(history, len(history) - 1)


def newest_share(history: list[Block], context: Context) -> int:
    """Gemini CLI's split: the first user message (not a tool result) at or past
    1 - `preserve` of the history's characters as JSON; else the last such message before."""
    total = sum(block.chars for block in history)
    target = total * (1 - context.strategy.params["preserve"])
    seen = 0
    last_split = 0
    for index, block in enumerate(history):
        if block.role == "user":
            if seen >= target:
                return index
            last_split = index
        seen += block.chars
    return last_split


def condenser_tail(history: list[Block], context: Context) -> int:
    """OpenHands' LLM summarizing condenser: past max_size events, the newest
    max_size // 2 - keep_first - 1 (one place is the summary's); above the window in tokens,
    the newest messages that fill at most half of it (its V1 condenser's token target)."""
    params = context.strategy.params
    if len(history) > params["max_size"]:
        tail = params["max_size"] // 2 - params["keep_first"] - 1
        return before_results(history, max(params["keep_first"], len(history) - tail))
    room = context.settings.window / 2
    start = len(history)
    while start > params["keep_first"] and room >= context.counter.block_tokens(history[start - 1].units):
        room -= context.counter.block_tokens(history[start - 1].units)
        start -= 1
    return before_results(history, start)


def attention_window(history: list[Block], context: Context) -> int:
    """OpenHands' observation masking: the last `attention_window` events."""
    return before_results(history, max(0, len(history) - context.strategy.params["attention_window"]))


def last_messages(history: list[Block], context: Context) -> int:
    """LangChain's SummarizationMiddleware: the last `keep_messages` messages, moved back to
    the AI message that made the calls when that would start on a tool result."""
    return before_results(history, max(0, len(history) - context.strategy.params["keep_messages"]))


KEEP_RULES: dict[str, Callable[[list[Block], Context], int]] = {
    "newest-request": newest_request,
    "last-turn": last_turn,
    "newest-share": newest_share,
    "condenser-tail": condenser_tail,
    "attention-window": attention_window,
    "last-messages": last_messages,
}
