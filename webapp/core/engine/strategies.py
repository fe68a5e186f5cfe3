"""Compaction strategies.

All of them follow the seed's rules (000_fd8adbc93eaf3a52.txt): run only when the request is
above the line, start with the oldest messages, never touch KEEP (the last `keep` requests and
everything after them), never separate a tool call from its results, and stop as soon as the
request fits. `truncate`, `drop` and `truncate-drop` are the seed's `compact()` levels, step
for step, so with the `estimate` counter they send exactly what the seed's loop sends.
`naive-drop` is the exception, on purpose: it breaks the pair rule to show what that costs.
`clear-tool-results` is Anthropic's context editing (`clear_tool_uses_20250919`), see
`clear_level`; KEEP may count requests, tool results or turns (`history.keep_start`).
`by-layer` is the manual's degradation by levels (004_abe3947712a3ce73.txt, step 9): the
retrieved documents first, a group at a time, then the history as the reference compacts it,
then the oldest messages left, and the overflow notice when that is still not enough.

No strategy touches a pinned message (the manual's guard-rails): it is passed over, and so
are the messages it cannot be sent without (its tool call, or its call's other results).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .history import CLEARED_MARK, OVERFLOW_NOTICE, TOOL_RESULT_ROLES, TRUNCATION_MARK, Block, keep_start
from ..model import Fact
from ..settings import Settings
from .summarizer import Summarizer
from ..counting.tokens import Counter, Message, call_names


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

    @property
    def changed(self) -> bool:
        return bool(self.truncated or self.dropped or self.summarized or self.cleared or self.compressed or self.notice_added)


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
    # Where the last truncation scan stopped: history[:n] then held no tool result left to
    # truncate, and a later scan starts there while the block at n - 1 is still in place
    # (a drop or a summary moves it, and the next scan starts from the beginning again).
    # Without it, a long chat rescans every old block at every call.
    truncated_through: tuple[int, Block] | None = None

    def tokens(self, units: int) -> int:
        return self.counter.request_tokens(self.floor_units + units)

    def above_line(self, units: int) -> bool:
        """Whether a request this size must be compacted: it is above the red line."""
        return self.tokens(units) > self.settings.limit

    def fits(self, units: int) -> bool:
        """Whether compaction may stop: at or below its aim (the target, else the line)."""
        return self.tokens(units) <= self.settings.aim

    def keep_start(self, history: list[Block]) -> int:
        return keep_start(history, self.settings.keep, self.settings.keep_unit)

    def kept(self, block: Block) -> bool:
        """Never compacted: a pinned message, the overflow notice, and for by-layer long-term
        memory (the manual's levels never compress it). Asked only of a block a level would cut."""
        if block.id in self.pinned:
            self.passed_over.add(block.id)
            return True
        return block.state == "notice" or (block.layer == "memory" and self.settings.strategy == "by-layer")

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
        if not self.pinned and self.settings.strategy != "by-layer":
            return set()  # only by-layer keeps memory and its notice: nothing else to look for
        kept = {index for index in range(start, end) if self.kept(history[index])}
        for index in list(kept):
            block = history[index]
            if block.tool_call_ids:
                caller = index
            elif block.role == "tool":
                caller = _caller(history, index, block.message.get("tool_call_id"))
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


Level = Callable[[Work, Context], None]


def _noted(block: Block, context: Context) -> Block:
    """The block with its text replaced by the seed's one-line truncation note and a preview."""
    text = block.text
    note = f"{TRUNCATION_MARK} to save context: {len(text)} chars. Preview: {text[: context.settings.preview]}...]"
    return context.block(block, {**block.message, "content": note}, state="truncated")


def _replace(work: Work, index: int, block: Block) -> None:
    work.units += block.units - work.history[index].units
    work.history[index] = block


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
        if block.role not in TOOL_RESULT_ROLES or block.text.startswith(TRUNCATION_MARK) or context.kept(block):
            continue
        shrunk = _noted(block, context)
        _replace(work, index, shrunk)
        work.truncated.append(block.id)
        if context.fetch_once_tools:
            tool_names = tool_names if tool_names is not None else call_names(block.message for block in history)
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
    """Level 2: drop the oldest exchanges whole, keeping the very first request. A pinned
    message stays, with what it cannot be sent without; the rest of its exchange goes."""
    history = work.history
    start = 1  # the exchanges before it are gone, but for what they had to keep
    while not context.fits(work.units):
        following = next((i for i in range(start + 1, len(history)) if history[i].role == "user"), None)
        if following is None or following > context.keep_start(history):
            return
        kept = context.kept_with_partners(history, start, following)
        removed = [history[i] for i in range(start, following) if i not in kept]
        history[start:following] = [history[i] for i in sorted(kept)]
        start += len(kept)
        if not removed:
            continue
        work.units -= sum(block.units for block in removed)
        work.dropped += [block.id for block in removed]
        if "drop" not in work.levels:
            work.levels.append("drop")


def naive_drop_level(work: Work, context: Context) -> None:
    """Deliberately broken, for the lesson: drop the oldest message after the first request,
    one at a time, until the request fits, blind to tool call/result pairs (it passes over a
    pinned message, but not over the call or results that go with it). Some libraries
    trim this way; the request they leave can start with a tool result whose call is gone,
    which most APIs reject."""
    history = work.history
    while not context.fits(work.units):
        boundary = context.keep_start(history)
        position = next((i for i in range(1, boundary) if not context.kept(history[i])), None)
        if position is None:
            return
        removed = history.pop(position)
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
    first_units = work.units - sum(block.units for block in history[1:])
    summary = None
    for cut in cuts:
        # Pinned messages (with their pair partners) stay whole, right after the summary.
        pinned = context.kept_with_partners(history, start, cut)
        folded = [history[i] for i in range(start, cut) if i not in pinned]
        if not folded:
            continue
        staying = [history[i] for i in sorted(pinned)]
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
        units = first_units + summary.units + sum(block.units for block in [*staying, *history[cut:]])
        if context.fits(units):
            break
    if summary is None:
        return
    context.summaries_made = number
    work.history[:] = history[:1] + [summary] + staying + history[cut:]
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
    names = call_names(block.message for block in trial)
    cleared: list[str] = []
    inputs: list[str] = []
    destroyed: list[str] = []
    cleared_tokens = 0
    for index in range(context.keep_start(trial)):
        block = trial[index]
        call_id = block.message.get("tool_call_id")
        name = names.get(call_id, "tool")
        if block.role != "tool" or block.state == "cleared" or name in settings.excluded_tools or context.kept(block):
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
            if caller is not None and not context.kept(trial[caller]):
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


def retrieval_level(work: Work, context: Context) -> None:
    """by-layer, level 1: the retrieved documents outside KEEP, oldest group first, become a
    one-line note with a preview, a whole group at a time (the documents found for one call
    go together). Roles and call ids stay: pair-safe."""
    history = work.history
    boundary = context.keep_start(history)
    groups: dict[str, list[int]] = {}
    for index, block in enumerate(history):
        if block.layer == "retrieval" and block.state == "original" and not context.kept(block):
            groups.setdefault(block.group, []).append(index)
    for members in groups.values():
        if members[-1] >= boundary:
            continue  # found for a call in KEEP: the model still works with them
        for index in members:
            work.compressed.append(history[index].id)
            _replace(work, index, _noted(history[index], context))
        if "retrieval" not in work.levels:
            work.levels.append("retrieval")
        if context.fits(work.units):
            return


def oldest_level(work: Work, context: Context) -> None:
    """by-layer, level 3: what is left outside KEEP once old exchanges are dropped (the first
    request, the replies around pinned messages), oldest first, becomes a one-line note.
    Roles and tool calls stay: pair-safe."""
    history = work.history
    for index in range(context.keep_start(history)):
        block = history[index]
        if block.state != "original" or context.kept(block) or not block.text:
            continue
        shrunk = _noted(block, context)
        if shrunk.units >= block.units:
            continue  # a short message: its note would be longer
        _replace(work, index, shrunk)
        work.truncated.append(block.id)
        if "oldest" not in work.levels:
            work.levels.append("oldest")
        if context.fits(work.units):
            return


NOTICE_ID = "n1"


def notice_level(work: Work, context: Context) -> None:
    """by-layer, the last resort: the manual's overflow notice, a system message after the
    first request telling the model that old details may be gone. Added once; it stays."""
    history = work.history
    work.notice = NOTICE_ID
    if any(block.state == "notice" for block in history):
        return
    template = history[0] if history else Block(NOTICE_ID, {}, 0, 1)
    notice = context.block(template, {"role": "system", "content": OVERFLOW_NOTICE}, id=NOTICE_ID, state="notice", layer="history", group="")
    history.insert(min(1, len(history)), notice)
    work.units += notice.units
    work.notice_added = True
    work.levels.append("notice")


def _caller(history: list[Block], index: int, call_id: str | None) -> int | None:
    """The reply before `index` that made the call `call_id`."""
    for position in range(index - 1, -1, -1):
        if call_id in history[position].tool_call_ids:
            return position
    return None


LEVELS: dict[str, tuple[Level, ...]] = {
    "none": (),
    "truncate": (truncate_level,),
    "drop": (drop_level,),
    "truncate-drop": (truncate_level, drop_level),
    "summarize": (summarize_level,),
    "naive-drop": (naive_drop_level,),
    "clear-tool-results": (clear_level,),
    "by-layer": (retrieval_level, truncate_level, drop_level, oldest_level, notice_level),
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
    if not context.above_line(units) or not LEVELS[strategy]:
        return history, units, None
    work = Work(list(history), units)
    context.passed_over.clear()
    for level in LEVELS[strategy]:
        if context.fits(work.units):
            break
        level(work, context)
    pinned_kept = ()
    if context.passed_over and not context.fits(work.units):
        pinned_kept = tuple(block.id for block in work.history if block.id in context.passed_over)
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
        compressed=tuple(work.compressed),
        notice=work.notice,
        notice_added=work.notice_added,
        pinned_kept=pinned_kept,
    )
    return work.history, work.units, compaction
