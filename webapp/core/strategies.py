"""Compaction strategies.

All of them follow the seed's rules (000_fd8adbc93eaf3a52.txt): run only when the request is
above the line, start with the oldest messages, never touch KEEP (the last `keep` requests and
everything after them), never separate a tool call from its results, and stop as soon as the
request fits. `truncate`, `drop` and `truncate-drop` are the seed's `compact()` levels, step
for step, so with the `estimate` counter they send exactly what the seed's loop sends.
`naive-drop` is the exception, on purpose: it breaks the pair rule to show what that costs.
`clear-tool-results` is Anthropic's context editing (`clear_tool_uses_20250919`), see
`clear_level`; KEEP may count requests, tool results or turns (`history.keep_start`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .history import CLEARED_MARK, TOOL_RESULT_ROLES, TRUNCATION_MARK, Block, keep_start
from .scenarios import Fact
from .settings import Settings
from .summarizer import Summarizer
from .tokens import Counter, Message


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

    @property
    def changed(self) -> bool:
        return bool(self.truncated or self.dropped or self.summarized or self.cleared)


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
    summaries_made: int = 0
    # Where the last truncation scan stopped: history[:n] then held no tool result left to
    # truncate, and a later scan starts there while the block at n - 1 is still in place
    # (a drop or a summary moves it, and the next scan starts from the beginning again).
    # Without it, a long chat rescans every old block at every call.
    truncated_through: tuple[int, Block] | None = None

    def tokens(self, units: int) -> int:
        return self.counter.request_tokens(self.floor_units + units)

    def fits(self, units: int) -> bool:
        return self.tokens(units) <= self.settings.limit

    def keep_start(self, history: list[Block]) -> int:
        return keep_start(history, self.settings.keep, self.settings.keep_unit)

    def block(self, template: Block, message: Message, **changes) -> Block:
        return Block(
            id=changes.pop("id", template.id),
            message=message,
            units=self.counter.measure(message),
            request=changes.pop("request", template.request),
            **changes,
        )


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


Level = Callable[[Work, Context], None]


def truncate_level(work: Work, context: Context) -> None:
    """Level 1: old tool results become a one-line note with a preview, oldest first.

    As in the seed, every old result is truncated whatever its size, so a result shorter than
    its note grows: the engine keeps that behaviour to send exactly what the seed sends."""
    history = work.history
    tool_names: dict[str, str] | None = None  # built only when a fetch-once tool may be hit
    start = 0
    if context.truncated_through is not None:
        settled, last = context.truncated_through
        if settled <= len(history) and history[settled - 1] is last:
            start = settled
    boundary = context.keep_start(history)
    for index in range(start, boundary):
        block = history[index]
        if block.role not in TOOL_RESULT_ROLES or block.text.startswith(TRUNCATION_MARK):
            continue
        text = block.text
        note = f"{TRUNCATION_MARK} to save context: {len(text)} chars. Preview: {text[: context.settings.preview]}...]"
        shrunk = context.block(block, {**block.message, "content": note}, state="truncated")
        history[index] = shrunk
        work.units += shrunk.units - block.units
        work.truncated.append(block.id)
        if context.fetch_once_tools:
            tool_names = tool_names if tool_names is not None else _tool_names(history)
            if tool_names.get(block.message.get("tool_call_id")) in context.fetch_once_tools:
                work.destroyed.append(block.id)
        if "truncate" not in work.levels:
            work.levels.append("truncate")
        if context.fits(work.units):
            context.truncated_through = (index + 1, shrunk)
            return
    if start < boundary:
        context.truncated_through = (boundary, history[boundary - 1])


def drop_level(work: Work, context: Context) -> None:
    """Level 2: drop the oldest exchanges whole, keeping the very first request."""
    history = work.history
    while not context.fits(work.units):
        following = next((i for i in range(2, len(history)) if history[i].role == "user"), None)
        if following is None or following > context.keep_start(history):
            return
        removed = history[1:following]
        del history[1:following]
        work.units -= sum(block.units for block in removed)
        work.dropped += [block.id for block in removed]
        if "drop" not in work.levels:
            work.levels.append("drop")


def naive_drop_level(work: Work, context: Context) -> None:
    """Deliberately broken, for the lesson: drop the oldest message after the first request,
    one at a time, until the request fits, blind to tool call/result pairs. Some libraries
    trim this way; the request they leave can start with a tool result whose call is gone,
    which most APIs reject."""
    history = work.history
    while not context.fits(work.units) and 1 < context.keep_start(history):
        removed = history.pop(1)
        work.units -= removed.units
        work.dropped.append(removed.id)
        if "naive-drop" not in work.levels:
            work.levels.append("naive-drop")


def summarize_level(work: Work, context: Context) -> None:
    """Replace the oldest whole exchanges after the first request with one summary message,
    placed right after the first request; an earlier summary is folded into the new one.
    The fewest exchanges that make the request fit are summarized, in one summarizer call.

    When KEEP counts tool results or turns, it can start inside a request (an agent run is
    one request): after the whole exchanges, the old turns of that request (a reply and its
    tool results) are summarized too, one more turn at a time, so a call is never parted
    from its results and the first request and KEEP stay as they are."""
    history = work.history
    start = 1
    previous = None
    if len(history) > 1 and history[1].state == "summary":
        previous, start = history[1], 2
    boundary = context.keep_start(history)
    cuts = [i for i in range(start + 1, boundary + 1) if history[i].role == "user"]
    after = cuts[-1] if cuts else start
    cuts += [i for i in range(after + 1, boundary + 1) if history[i].role == "assistant"]
    if not cuts:
        return
    # The first request stays; an earlier summary (history[1]) is folded into the new one.
    kept_units = work.units - sum(block.units for block in history[1:])
    for cut in cuts:
        folded = history[start:cut]
        # A request's digest tells the whole request: not for a request cut in two.
        digests = context.digests
        if history[cut].role != "user":
            digests = {request: text for request, text in digests.items() if request != history[cut].request}
        result = context.summarizer.summarize(
            previous=previous.text if previous else None,
            blocks=folded,
            digests=digests,
            facts=context.facts if context.settings.keep_facts else [],
            counter=context.counter,
        )
        number = context.summaries_made + 1
        message = {"role": "system", "content": result.text}
        replaced = (previous.replaces if previous else ()) + tuple(block.id for block in folded)
        summary = context.block(history[0], message, id=f"s{number}", state="summary", replaces=replaced)
        units = kept_units + summary.units + sum(block.units for block in history[cut:])
        if context.fits(units) or cut == cuts[-1]:
            break
    context.summaries_made = number
    work.history[:] = history[:1] + [summary] + history[cut:]
    work.units = units
    work.summarized += [block.id for block in folded]
    work.summary_id = summary.id
    work.summarizer_input += result.input_tokens
    work.summarizer_output += result.output_tokens
    work.levels.append("summarize")


def clear_level(work: Work, context: Context) -> None:
    """Anthropic's context editing, `clear_tool_uses_20250919`
    (https://docs.claude.com/en/docs/build-with-claude/context-editing): above the line, the
    oldest tool results outside KEEP become a placeholder, oldest first, results of
    `exclude_tools` never; with `clear_tool_inputs`, the arguments of their calls go too.

    It stops once the request fits and at least `clear_at_least` tokens are cleared. If
    clearing every result it may clear would take off fewer than `clear_at_least` tokens, it
    clears nothing ("Context will only be modified if at least this many tokens can be
    removed", Anthropic's API reference): each clearing rewrites the request from the first
    cleared result on, so the prompt cache is read only up to there, and clearing a lot at
    once makes that happen less often. Messages keep their roles and call ids: pair-safe."""
    settings = context.settings
    trial = list(work.history)
    units = work.units
    names = _tool_names(trial)
    cleared: list[str] = []
    inputs: list[str] = []
    destroyed: list[str] = []
    cleared_tokens = 0
    for index in range(context.keep_start(trial)):
        block = trial[index]
        call_id = block.message.get("tool_call_id")
        name = names.get(call_id, "tool")
        if block.role != "tool" or block.state == "cleared" or name in settings.excluded_tools:
            continue
        before = context.tokens(units)
        note = f"{CLEARED_MARK} to save context: a {name} result of {len(block.text)} chars]"
        placeholder = context.block(block, {**block.message, "content": note}, state="cleared")
        trial[index] = placeholder
        units += placeholder.units - block.units
        cleared.append(block.id)
        if name in context.fetch_once_tools:
            destroyed.append(block.id)
        if settings.clear_tool_inputs:
            caller = _caller(trial, index, call_id)
            if caller is not None:
                reply = trial[caller]
                calls = [
                    {**call, "function": {**call.get("function", {}), "arguments": "{}"}} if call.get("id") == call_id else call
                    for call in reply.message.get("tool_calls") or []
                ]
                emptied = context.block(reply, {**reply.message, "tool_calls": calls})
                trial[caller] = emptied
                units += emptied.units - reply.units
                if reply.id not in inputs:
                    inputs.append(reply.id)
        cleared_tokens += before - context.tokens(units)
        if context.fits(units) and cleared_tokens >= settings.clear_at_least:
            break
    if not cleared:
        return
    if cleared_tokens < settings.clear_at_least:
        work.held_back = cleared_tokens
        return
    work.history[:] = trial
    work.units = units
    work.cleared += cleared
    work.inputs_cleared += inputs
    work.destroyed += destroyed
    work.cleared_tokens += cleared_tokens
    work.levels.append("clear")


def _caller(history: list[Block], index: int, call_id: str | None) -> int | None:
    """The reply before `index` that made the call `call_id`."""
    for position in range(index - 1, -1, -1):
        if call_id in history[position].tool_call_ids:
            return position
    return None


def _tool_names(history: list[Block]) -> dict[str, str]:
    """tool_call_id -> function name, to know which tool a result came from."""
    names = {}
    for block in history:
        for call in block.message.get("tool_calls") or []:
            names[call.get("id")] = (call.get("function") or {}).get("name", "")
    return names


LEVELS: dict[str, tuple[Level, ...]] = {
    "none": (),
    "truncate": (truncate_level,),
    "drop": (drop_level,),
    "truncate-drop": (truncate_level, drop_level),
    "summarize": (summarize_level,),
    "naive-drop": (naive_drop_level,),
    "clear-tool-results": (clear_level,),
}
# Strategies that may separate a tool call from its results, on purpose: a comparison never
# recommends one, even on a chat where its requests happened to stay valid.
BREAKS_TOOL_PAIRS = frozenset({"naive-drop"})


def compact(history: list[Block], units: int, context: Context) -> tuple[list[Block], int, Compaction | None]:
    """Compact `history` (whose blocks add up to `units`) if the request is above the line.

    Returns the history to send, its units, and what was done (None when nothing was tried:
    the request fits, or the strategy never compacts). The input list is not modified.
    """
    strategy = context.settings.strategy
    if context.fits(units) or not LEVELS[strategy]:
        return history, units, None
    work = Work(list(history), units)
    for level in LEVELS[strategy]:
        if context.fits(work.units):
            break
        level(work, context)
    compaction = Compaction(
        strategy=strategy,
        tokens_before=context.tokens(units),
        tokens_after=context.tokens(work.units),
        levels=tuple(work.levels),
        truncated=tuple(work.truncated),
        dropped=tuple(work.dropped),
        summarized=tuple(work.summarized),
        summary_id=work.summary_id,
        summarizer_input=work.summarizer_input,
        summarizer_output=work.summarizer_output,
        destroyed=tuple(work.destroyed),
        cleared=tuple(work.cleared),
        inputs_cleared=tuple(work.inputs_cleared),
        cleared_tokens=work.cleared_tokens,
        held_back=work.held_back,
    )
    return work.history, work.units, compaction
