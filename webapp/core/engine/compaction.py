"""What a compaction works with and leaves behind: the context a strategy needs besides the
history (settings, counter, pins), the work under way, and the record of what was done."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..counting.tokens import Counter, Message
from ..model import Fact
from ..settings import Settings
from ..strategy_catalog import STRATEGIES, Strategy
from .history import TOOL_RESULT_ROLES, Block, caller_of, keep_start
from .recorded import Calibration
from .summarizer import Summarizer


@dataclass(frozen=True)
class Compaction:
    """What one compaction did, for the view and the event log."""

    strategy: str
    tokens_before: int
    tokens_after: int
    levels: tuple[str, ...] = ()
    truncated: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    summarized: tuple[str, ...] = ()
    summary_id: str | None = None
    summarizer_input: int = 0
    summarizer_output: int = 0
    # Results of tools marked fetch_once that truncation destroyed: they cannot be fetched again.
    destroyed: tuple[str, ...] = ()
    # clear-tool-results: the results cleared, the assistant replies whose call arguments were
    # cleared with them, and the tokens this took off the request (Anthropic's response reports
    # the same two figures as cleared_tool_uses and cleared_input_tokens).
    cleared: tuple[str, ...] = ()
    inputs_cleared: tuple[str, ...] = ()
    cleared_tokens: int = 0
    # clear-tool-results left the request as it was: clearing every result it may clear would
    # have taken off only this many tokens, fewer than clear_at_least.
    held_back: int = 0
    # by-layer: the retrieved documents compressed (message ids), and the overflow notice's id
    # when the levels were not enough (the notice is added once and stays).
    compressed: tuple[str, ...] = ()
    notice: str | None = None
    notice_added: bool = False
    # Still above the aim, with pinned messages outside KEEP: only they were left to cut.
    pinned_kept: tuple[str, ...] = ()
    # Tokens of messages sent unchanged before and after, but now behind a new summary: the
    # prompt cache held them and must write them again.
    rewritten: int = 0
    # Summaries a harness rejected (Gemini CLI keeps the history when its summary is no smaller).
    rejected: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.truncated or self.dropped or self.summarized or self.cleared or self.compressed or self.notice_added)

    @property
    def saved_share(self) -> float:
        return (self.tokens_before - self.tokens_after) / self.tokens_before if self.tokens_before else 0.0



@dataclass
class Context:
    """What a strategy needs besides the history."""

    settings: Settings
    counter: Counter
    floor_units: int
    summarizer: Summarizer
    facts: list[Fact] = field(default_factory=list)
    fetch_once_tools: frozenset[str] = frozenset()
    digests: dict[int, str] = field(default_factory=dict)
    pinned: frozenset[str] = frozenset()
    # The pinned messages this compaction would have cut, had they not been pinned: when it
    # stops above its aim, they are what stopped it (a pinned message no level of the strategy
    # would touch, such as a user message for truncate, is not in its way).
    passed_over: set[str] = field(default_factory=set)
    summaries_made: int = 0
    # Where a level's last scan of old tool results settled, by level: history[:n] then held
    # nothing it would change nor a pinned message it passed over, and a later scan starts
    # there while the block at n - 1 is still in place (a drop or a summary moves it, and the
    # scan starts from the beginning again). Without it, a long chat rescans every old block
    # at every call.
    settled: dict[str, tuple[int, Block]] = field(default_factory=dict)
    # What a harness remembers between calls (Gemini CLI: a summary was rejected once).
    memory: dict[str, Any] = field(default_factory=dict)
    # How the session's recorded counts correct the counter's, from the last recorded call
    # (recorded.Calibration); None: the counter's count as it is.
    calibration: Calibration | None = None

    @property
    def strategy(self) -> Strategy:
        return STRATEGIES[self.settings.strategy]

    def tokens(self, units: int) -> int:
        """The request of `units` history units as the loop counts it: the counter's count,
        corrected by the session's recorded counts where it has them."""
        counted = self.counted(units)
        return counted if self.calibration is None else self.calibration.tokens(counted)

    def counted(self, units: int) -> int:
        """The same request as the counter alone counts it."""
        return self.counter.request_tokens(self.floor_units + units)

    def above_line(self, units: int) -> bool:
        """Whether a request this size must be compacted: it is above the red line."""
        return self.tokens(units) > self.settings.limit

    def must_compact(self, history: list[Block], units: int) -> bool:
        """Whether the strategy acts before this call: above the line, or as its product's
        trigger says (past a number of messages, or before every call)."""
        trigger = self.strategy.trigger
        if trigger is not None and (trigger.every_call or (trigger.messages is not None and len(history) > trigger.messages)):
            return True
        if trigger is not None and trigger.last_request:
            return self._last_request_at_line(history)
        return self.above_line(units)

    def _last_request_at_line(self, history: list[Block]) -> bool:
        """Whether the last request sent (the history before the last reply) reached the line;
        never before a first reply, as no request was counted yet."""
        last_reply = next((index for index in range(len(history) - 1, -1, -1) if history[index].role == "assistant"), None)
        if last_reply is None:
            return False
        return self.tokens(sum(block.units for block in history[:last_reply])) >= self.settings.limit

    def fits(self, units: int) -> bool:
        """Whether compaction may stop: at or below its aim (the target, else the line)."""
        return self.tokens(units) <= self.settings.aim

    def keep_start(self, history: list[Block]) -> int:
        """Where KEEP starts: as the harness defines it, else as the settings count it."""
        rule = self.strategy.keep_rule
        if rule:
            return KEEP_RULES[rule](history, self)
        return keep_start(history, self.settings.keep, self.settings.keep_unit)

    def scan_start(self, level: str, history: list[Block]) -> int:
        """Where `level`'s scan of `history` may start (`settled`). The check is the block at
        end - 1 alone: a level that removes blocks before it moves it, and the one change that
        would not (a summary folding one block in its place) is made by no strategy that also
        scans tool results."""
        found = self.settled.get(level)
        if found is not None:
            end, last = found
            if end <= len(history) and history[end - 1] is last:
                return end
        return 0

    def settle(self, level: str, history: list[Block], end: int) -> None:
        """`level` found nothing to change in history[:end], as it now is; the next scan starts
        there, or at the first pinned message this compaction passed over, so that a later
        compaction passes over it again and reports it (`pinned_kept`)."""
        if self.passed_over:
            end = next((index for index in range(end) if history[index].id in self.passed_over), end)
        if end > 0:
            self.settled[level] = (end, history[end - 1])

    def kept(self, block: Block) -> bool:
        """Never compacted: a pinned message, the overflow notice, and for by-layer long-term
        memory (the manual's levels never compress it). Asked only of a block a level would cut."""
        if block.id in self.pinned:
            self.passed_over.add(block.id)
            return True
        return block.state == "notice" or (block.layer == "memory" and STRATEGIES[self.settings.strategy].by_layer)

    def block(self, template: Block, message: Message, **changes) -> Block:
        return Block(
            id=changes.pop("id", template.id),
            message=message,
            units=self.counter.measure(message),
            request=changes.pop("request", template.request),
            layer=changes.pop("layer", template.layer),
            group=changes.pop("group", template.group),
            **changes,
        )

    def kept_with_partners(self, history: list[Block], start: int, end: int) -> set[int]:
        """Indexes in history[start:end] that stay when the rest goes: the kept blocks, and
        those a kept block cannot be sent without (the reply that made its tool call, the
        other results of that reply, a kept reply's results)."""
        if not self.pinned and not STRATEGIES[self.settings.strategy].by_layer:
            return set()  # only by-layer keeps memory and its notice: nothing else to look for
        kept = {index for index in range(start, end) if self.kept(history[index])}
        for index in list(kept):
            block = history[index]
            if block.tool_call_ids:
                caller = index
            elif block.role == "tool":
                caller = caller_of(history, index, block.message.get("tool_call_id"))
            else:
                continue
            if caller is None or caller < start:
                continue
            kept.add(caller)
            ids = set(history[caller].tool_call_ids)
            position = caller + 1
            while position < end and history[position].role == "tool" and history[position].message.get("tool_call_id") in ids:
                kept.add(position)
                position += 1
        return kept



@dataclass
class Work:
    """A compaction under way: the history, its units, and what was done so far."""

    history: list[Block]
    units: int
    truncated: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    summarized: list[str] = field(default_factory=list)
    levels: list[str] = field(default_factory=list)
    destroyed: list[str] = field(default_factory=list)
    summary_id: str | None = None
    summarizer_input: int = 0
    summarizer_output: int = 0
    cleared: list[str] = field(default_factory=list)
    inputs_cleared: list[str] = field(default_factory=list)
    cleared_tokens: int = 0
    held_back: int = 0
    compressed: list[str] = field(default_factory=list)
    notice: str | None = None
    notice_added: bool = False
    rejected: bool = False



Level = Callable[[Work, Context], None]


# KEEP as each harness defines it: where the part of the history it never compacts starts. Each
# rule reads the history and the product's own figures (`Strategy.params`, on the context), and
# never starts KEEP on a tool result: it moves back to the reply that made the call, so a call
# and its result are kept or compacted together (pair safety, which OpenHands' V1 condenser and
# LangChain's middleware do too, and which the playground asks of every product).


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
