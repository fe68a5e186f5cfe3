"""What a call says to the learner: the author's narration that applies to this replay, and a
structured account of what happened, for every call (the web layer words it).

Both read only the replay, so the story of a call is the same on the page, in the JSON twin
and in tests, and it follows the settings the learner chose, not the scenario's defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..engine.history import TOOL_RESULT_ROLES, Block
from ..engine.calls import Call, Replay, per_replay, script_call_names
from ..model import Condition, Fact, Narration
from ..settings import starting_point

FactsState = Literal["kept", "lost"]


def facts_state(result: Replay, number: int) -> FactsState | None:
    """lost: a critical fact that an earlier request (or this one) carried is no longer sent;
    kept: every fact seen so far is still sent; None: no fact has entered the chat yet."""
    seen = set()
    for call in result.calls[:number]:
        seen |= {status.fact.text for status in call.facts if status.present}
    if not seen:
        return None
    current = {status.fact.text for status in result.calls[number - 1].facts if status.present}
    return "kept" if seen <= current else "lost"


# The settings that size the requests. A narration whose conditions read nothing of the replay
# states the figures of the scenario's own settings: with another window, line or KEEP (or other
# pins) the page shows other figures, and the generated story, which reads them, tells the call.
SIZING = ("window", "model_window", "threshold", "keep", "keep_unit", "alert", "target", "num_ctx")


def as_written(result: Replay) -> bool:
    """Whether the replay runs at the sizes and pins its scenario was written for (a harness at
    its own defaults: its line is its product's, not the scenario's)."""
    settings, pinned = result.settings, result.scenario.pinned
    own = starting_point(result.scenario.settings, settings.strategy, result.scenario.settings.window)
    return all(getattr(settings, name) == getattr(own, name) for name in SIZING) and settings.pinned(pinned) == own.pinned(pinned)


def holds(condition: Condition, result: Replay, number: int) -> bool:
    call = result.calls[number - 1]
    settings = result.settings
    if not condition.reads_replay and not as_written(result):
        return False
    checks = (
        (condition.strategies, lambda names: settings.strategy in names),
        (condition.counters, lambda names: settings.counter in names),
        (condition.keep_facts, lambda wanted: settings.keep_facts == wanted),
        (condition.compacted, lambda wanted: compacted(call) == wanted),
        (condition.overflow, lambda wanted: call.overflow == wanted),
        (condition.invalid_request, lambda wanted: (not call.valid) == wanted),
        (condition.no_room_for_reply, lambda wanted: call.no_room_for_reply == wanted),
        (condition.facts, lambda wanted: facts_state(result, number) == wanted),
    )
    return all(expected is None or check(expected) for expected, check in checks)


def narration_at(result: Replay, number: int) -> Narration | None:
    """The first of the call's narrations whose condition holds on this replay."""
    return next((note for note in result.scenario.narration.get(number, ()) if holds(note.when, result, number)), None)


def compacted(call: Call) -> bool:
    return call.compaction is not None and call.compaction.changed


# --- What happened -------------------------------------------------------------------------


@dataclass(frozen=True)
class Arrival:
    """Messages that entered the history since the previous call, of one kind (and tool)."""

    kind: Literal["request", "reply", "tool_result"]
    tool: str  # the tool's name, for tool results
    count: int
    tokens: int


@dataclass(frozen=True)
class Struck:
    """One block the hammer changed at this call."""

    # compressed: a retrieved document became a note (by-layer); shortened: a request or a
    # reply became a note (by-layer's last level); truncated: a tool result became a note.
    action: Literal["truncated", "compressed", "shortened", "dropped", "summarized", "cleared"]
    block_id: str
    kind: Literal["request", "reply", "tool_result", "summary"]
    tool: str
    tokens_before: int
    tokens_after: int  # 0 when dropped or folded into a summary; a cleared result's placeholder
    request: int  # the user request it belongs to
    fetch_once: bool = False  # a truncated result that cannot be fetched again


@dataclass(frozen=True)
class FactChange:
    fact: Fact
    # lost: sent at the previous call, not at this one; kept: still sent through this call's
    # compaction; needed / missing: first needed at this call, and sent / not sent.
    change: Literal["lost", "kept", "needed", "missing"]


@dataclass(frozen=True)
class CallStory:
    number: int
    first: bool
    arrived: tuple[Arrival, ...]
    floor_tokens: int
    tokens_before: int  # the request before compaction, as the compactor counts
    tokens: int  # as sent
    line: int  # the red line, in tokens
    above_line: bool  # before compaction
    strategy: str
    compaction_tried: bool
    struck: tuple[Struck, ...]
    held_back: int  # clear-tool-results left the request alone: clearing would take off only this many tokens
    facts: tuple[FactChange, ...]
    overflow: bool
    provider_tokens: int
    window: int  # the model's real window
    invalid_request: bool
    no_room_for_reply: bool
    reply_tokens: int
    sent_this_call: int
    sent_previous_call: int | None
    sent_total: int
    summarizer_input: int
    # by-layer's levels were not enough: the overflow notice is in the request.
    notice: bool = False
    # Compaction stopped above its aim: only these pinned messages were left to cut.
    pinned_kept: tuple[str, ...] = ()


def _kind(block: Block) -> Literal["request", "reply", "tool_result", "summary"]:
    if block.state == "summary":
        return "summary"
    return {"user": "request", "assistant": "reply", "tool": "tool_result"}.get(block.role, "reply")


def _arrivals(blocks: list[Block], tools: dict[str, str], tokens) -> tuple[Arrival, ...]:
    grouped: dict[tuple[str, str], list[int]] = {}
    for block in blocks:
        kind = _kind(block)
        tool = tools.get(block.message.get("tool_call_id"), "") if kind == "tool_result" else ""
        grouped.setdefault((kind, tool), []).append(round(tokens(block)))
    return tuple(Arrival(kind, tool, len(sizes), sum(sizes)) for (kind, tool), sizes in grouped.items())


def explain(result: Replay, number: int) -> CallStory:
    """What happened at call `number`, from the replay alone."""
    call = result.calls[number - 1]
    previous = result.calls[number - 2] if number > 1 else None
    tools = script_call_names(result.scenario)
    tokens = result.block_tokens
    before = result.history_before(number)
    compaction = call.compaction
    sent_before = previous.sent_total if previous else 0
    before_previous = result.calls[number - 3].sent_total if number > 2 else 0
    return CallStory(
        number=number,
        first=previous is None,
        arrived=_arrivals(_arrived(before, previous, call), tools, tokens),
        floor_tokens=round(result.floor_tokens),
        tokens_before=compaction.tokens_before if compaction is not None else call.tokens,
        tokens=call.tokens,
        line=int(result.settings.limit),
        above_line=(compaction.tokens_before if compaction is not None else call.tokens) > result.settings.limit,
        strategy=result.settings.strategy,
        compaction_tried=compaction is not None,
        struck=_struck(before, call, tools, tokens),
        held_back=compaction.held_back if compaction is not None else 0,
        facts=_fact_changes(call, previous, number),
        overflow=call.overflow,
        provider_tokens=call.provider_tokens,
        window=result.settings.real_window,
        invalid_request=not call.valid,
        no_room_for_reply=call.no_room_for_reply,
        reply_tokens=_reply_tokens(call),
        sent_this_call=call.sent_total - sent_before,
        sent_previous_call=sent_before - before_previous if previous else None,
        sent_total=call.sent_total,
        summarizer_input=compaction.summarizer_input if compaction is not None else 0,
        notice=compaction is not None and compaction.notice is not None,
        pinned_kept=compaction.pinned_kept if compaction is not None else (),
    )


def _arrived(before: list[Block], previous: Call | None, call: Call) -> list[Block]:
    """The blocks of the history that the previous call did not send, but for the summary this
    call's compaction wrote (the hammer wrote it: it did not arrive)."""
    known = {block.id for block in previous.blocks} if previous else set()
    written = call.compaction.summary_id if call.compaction is not None else None
    return [block for block in before if block.id not in known and block.id != written]


def _struck(before: list[Block], call: Call, tools: dict[str, str], tokens) -> tuple[Struck, ...]:
    """What the call's compaction did to each block it changed, action by action."""
    compaction = call.compaction
    if compaction is None or not compaction.changed:
        return ()
    old = {block.id: block for block in before}
    new = {block.id: block for block in call.blocks}
    destroyed = set(compaction.destroyed)
    actions = (
        ("truncated", [block_id for block_id in compaction.truncated if old[block_id].role in TOOL_RESULT_ROLES]),
        ("shortened", [block_id for block_id in compaction.truncated if old[block_id].role not in TOOL_RESULT_ROLES]),
        ("compressed", compaction.compressed),
        ("cleared", compaction.cleared),
        ("dropped", compaction.dropped),
        ("summarized", compaction.summarized),
    )
    struck = []
    for action, ids in actions:
        for block_id in ids:
            block = old.get(block_id)
            if block is None:  # folded into an earlier summary already
                continue
            final = action in ("dropped", "summarized")
            if not final and block_id not in new:  # shrunk, then dropped by a later level: told once, as dropped
                continue
            after = new.get(block_id) if not final else None
            struck.append(
                Struck(
                    action,
                    block_id,
                    _kind(block),
                    tools.get(block.message.get("tool_call_id"), "") if block.role == "tool" else "",
                    round(tokens(block)),
                    round(tokens(after)) if after else 0,
                    block.request,
                    block_id in destroyed,
                )
            )
    return tuple(struck)


def _fact_changes(call: Call, previous: Call | None, number: int) -> tuple[FactChange, ...]:
    """The critical facts this call first needs, and those it lost or kept through compaction."""
    changes = []
    for status in call.facts:
        was_sent = bool(previous) and any(s.fact == status.fact and s.present for s in previous.facts)
        first_needed = number == status.fact.needed_from_call
        if first_needed:
            changes.append(FactChange(status.fact, "needed" if status.present else "missing"))
        elif was_sent and not status.present:
            changes.append(FactChange(status.fact, "lost"))
        elif was_sent and compacted(call):
            changes.append(FactChange(status.fact, "kept"))
    return tuple(changes)


def _reply_tokens(call: Call) -> int:
    """The reply the request left no room for, in tokens (0 when it had room)."""
    reply_tokens = 0
    for event in call.events:
        if event.kind == "no_room_for_reply":
            reply_tokens = event.detail["reply_tokens"]
    return reply_tokens


# --- What a strategy did over a whole replay (the comparison's columns) ---------------------


@dataclass(frozen=True)
class Outcome:
    strategy: str
    first_above_line: int | None  # the first call whose request was above the red line
    compactions: tuple[int, ...]  # calls where the hammer changed the request
    grown_notes: int  # truncation notes longer than the result they replaced
    grown_tokens: int  # what those notes added
    overflow_calls: tuple[int, ...]
    invalid_calls: tuple[int, ...]
    no_room_calls: tuple[int, ...]


@per_replay
def outcome(result: Replay) -> Outcome:
    """What the replay's strategy did on this scenario, call by call, summed up (once per
    replay: the comparison's cards ask it at every step)."""
    line = result.settings.limit
    first_above = next(
        (c.number for c in result.calls if (c.compaction.tokens_before if c.compaction else c.tokens) > line), None
    )
    compactions = tuple(c.number for c in result.calls if compacted(c))
    grown = [
        block.tokens_after - block.tokens_before
        for number in compactions
        for block in explain(result, number).struck
        if block.action == "truncated" and block.tokens_after > block.tokens_before
    ]
    return Outcome(
        strategy=result.settings.strategy,
        first_above_line=first_above,
        compactions=compactions,
        grown_notes=len(grown),
        grown_tokens=sum(grown),
        overflow_calls=tuple(c.number for c in result.calls if c.overflow),
        invalid_calls=tuple(c.number for c in result.calls if not c.valid),
        no_room_calls=tuple(c.number for c in result.calls if c.no_room_for_reply),
    )
