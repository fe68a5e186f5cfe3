"""What a replay records: each model call (its request as blocks, its events, what compaction
did, the facts and pinned messages it still holds), and the replay itself, with what pages
derive from it and keep on it (`per_replay`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import wraps
from typing import Any, Callable, NamedTuple, TypeVar

from ..counting.tokens import MeasuredOnce, Message, call_names, get_counter
from ..model import Fact, RecordedUsage, Scenario
from ..settings import Settings
from .history import Block
from .compaction import Compaction
from .recorded import Calibration, Unlogged, unlogged


class Event(NamedTuple):
    """One line of the event log. `kind` is one of user_message, compact, turn_start,
    model_call, tool_call, tool_result, turn_end, overflow (the request is larger than the
    model's real window), invalid_request (an API would reject the request: a tool result
    without its call, or a call without its result), no_room_for_reply (the request fits but
    the reply does not: the provider rejects it or cuts the reply short), warning (the
    request passes the alert line, not the red line), notice (by-layer's levels were not
    enough: the overflow notice is in the request), pinned_kept (compaction stopped above its
    aim: what it would have cut next is pinned).

    A named tuple: a replay makes several at every call, and a tuple is made in C."""

    kind: str
    call: int
    detail: dict[str, Any]



@dataclass(frozen=True)
class FactStatus:
    """A critical fact at one call: in its request or not, needed by it or not, and when an
    earlier request held it and this one does not, the call it went from (lost, not unseen)."""

    fact: Fact
    present: bool
    needed: bool
    lost_from: int | None = None

    @property
    def lost(self) -> bool:
        return self.lost_from is not None

    @property
    def missing_when_needed(self) -> bool:
        return self.needed and not self.present



@dataclass(frozen=True)
class PinStatus:
    """A pinned message at one call: still sent, and sent exactly as written."""

    id: str
    present: bool
    unchanged: bool



@dataclass
class Call:
    number: int
    request_number: int
    turn: int
    blocks: tuple[Block, ...]
    tokens: int
    keep_start: int
    compaction: Compaction | None
    events: list[Event]
    sent_total: int
    summarizer_output_total: int
    overflow: bool
    facts: list[FactStatus]
    reply: Block | None
    # What an API would reject in this request (tool pairs broken), one readable line each.
    problems: tuple[str, ...] = ()
    no_room_for_reply: bool = False
    # The request as the provider counts it: `tokens` itself, unless the loop counts with the
    # estimate (then provider_count.PROVIDER_COUNTER's count). Overflow is decided on this number.
    provider_tokens: int = 0
    # Every pinned message that has entered the history by this call, checked.
    pinned: tuple[PinStatus, ...] = ()
    # What the provider counted for this call, when the session recorded it (recorded.py).
    recorded: RecordedUsage | None = None
    # The request as the counter alone counts it, and the recorded call `tokens` was corrected
    # from (recorded.Calibration; None: `tokens` is the counter's own count).
    counted: int = 0
    calibration: Calibration | None = None

    @property
    def valid(self) -> bool:
        return not self.problems

    def request(self, prefix: Sequence[Message]) -> list[Message]:
        """The messages exactly as sent: the scenario's prefix, then the history."""
        return [*prefix, *(block.message for block in self.blocks)]



@dataclass
class Replay:
    scenario: Scenario
    settings: Settings
    floor_units: int
    floor_tokens: float
    calls: list[Call]
    warnings: list[str]
    # The floor's part the log does not hold, included in floor_units (recorded.Unlogged).
    unlogged: Unlogged = field(default_factory=Unlogged)
    # The same warnings as (message, numbers), so the web can say them in the reader's language.
    notices: list[tuple[str, dict[str, int]]] = field(default_factory=list)
    # How many of its first calls are another replay's own (replay.py `replay_from`): shared
    # with it, not copied.
    taken: int = 0
    # What views derive from the whole replay, by the function that derives it (`per_replay`):
    # a replay never changes once made, so each is computed once, not on every step.
    derived: dict[Callable, Any] = field(default_factory=dict, repr=False, compare=False)
    # What is derived from its calls alone, whatever settings drew them (`per_calls`): shared
    # with every replay made `as_if` this one (replay.py), which sends the same.
    of_calls: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def request_count(self) -> int:
        return max((call.request_number for call in self.calls), default=0)

    def block_tokens(self, block: Block) -> float:
        return get_counter(self.settings.counter).block_tokens(block.units)

    def floor_at(self, number: int) -> float:
        """The floor as drawn at call `number`: with the provider's count beyond the counter's
        for this request (the recorded counts it was built on, recorded.Calibration), so that
        the stack is as tall as the request; never below the floor the log holds."""
        call = self.calls[number - 1]
        return self.floor_tokens + max(call.tokens - call.counted, -self.unlogged.tokens)

    def history_before(self, number: int) -> list[Block]:
        """The history as it stood at call `number` before compaction: what the previous call
        sent, its reply, then what entered since, as the script wrote it."""
        call = self.calls[number - 1]
        if number == 1:
            before: list[Block] = []
        else:
            previous = self.calls[number - 2]
            before = list(previous.blocks) + ([previous.reply] if previous.reply else [])
        known = {block.id for block in before}
        # Only the script's messages enter: what the loop wrote at this call (a summary, the
        # overflow notice, Gemini CLI's acknowledgement of its snapshot) was not there before.
        script = {item.id for item in self.scenario.script}
        entered = [block for block in call.blocks if block.id not in known and block.id in script]
        return before + [block if block.state == "original" else self._as_written(block) for block in entered]

    def _as_written(self, block: Block) -> Block:
        """A message compacted at the very call it entered (a tool result just before a new
        request falls outside KEEP at once), as it was before that compaction."""
        item = next(item for item in self.scenario.script if item.id == block.id)
        counter = chat_counter(self.scenario, self.settings.counter)
        return replace(block, message=item.message, units=counter.measure(item.message), state="original")

    def gone(self, number: int) -> list[str]:
        """Ids of the script messages that had entered the history by call `number` and are
        no longer sent: dropped, or folded into a summary."""
        sent = {block.id for block in self.calls[number - 1].blocks}
        gone, replies = [], 0
        for item in self.scenario.script:
            if item.role == "assistant":
                replies += 1
                if replies == number:
                    break
            if item.id not in sent:
                gone.append(item.id)
        return gone



Derived = TypeVar("Derived")



def per_replay(function: Callable[[Replay], Derived]) -> Callable[[Replay], Derived]:
    """`function(replay)`, computed once per replay and kept on it (two threads may both
    compute it the first time; they get equal values)."""
    return _kept(function, "derived")


def per_calls(function: Callable[[Replay], Derived]) -> Callable[[Replay], Derived]:
    """`per_replay` for a function that reads only what the replay sends (its calls, floor and
    scenario): computed once for it and every replay made `as_if` it."""
    return _kept(function, "of_calls")


def _kept(function: Callable[[Replay], Derived], store: str) -> Callable[[Replay], Derived]:
    @wraps(function)
    def cached(replay: Replay) -> Derived:
        kept = getattr(replay, store)
        try:
            return kept[function]
        except KeyError:
            value = kept[function] = function(replay)
            return value

    return cached


def chat_counter(scenario: Scenario, name: str):
    """The counter `name` for the replays of `scenario`: it reads a tool result under the name
    of the function its call names, and measures each message of the script once, for every
    replay of the chat."""
    found = scenario.counters.get(name)
    if found is None:
        counter = get_counter(name).with_call_names(script_call_names(scenario))
        found = scenario.counters[name] = MeasuredOnce(counter, [*scenario.prefix, *(item.message for item in scenario.script)])
    return found


def chat_floor(scenario: Scenario, name: str) -> tuple[int, Unlogged]:
    """What every request of the chat carries ahead of its script, in counter `name`'s units,
    measured once for every replay: the prefix and tools, and what the log does not hold
    (system prompt, tool definitions: recorded.py), which joins it; and that part alone."""
    key = (chat_floor, name)
    found = scenario.derived.get(key)
    if found is None:
        counter = chat_counter(scenario, name)
        units = scenario.floor_units(counter)
        missing = unlogged(scenario, counter, units)
        found = scenario.derived[key] = (units + missing.units, missing)
    return found


def script_blocks(scenario: Scenario, name: str) -> tuple[Block, ...]:
    """Each script message as a history first holds it, measured with the chat's counter
    `name`: the same block for every replay of the chat, so what a block works out once (its
    role, its searchable text, its call ids) is worked out once for all of them. A reply
    enters as the model wrote it, with no layer or group of its own."""
    key = (script_blocks, name)
    found = scenario.derived.get(key)
    if found is None:
        counter = chat_counter(scenario, name)
        blocks, request = [], 0
        for item in scenario.script:
            request += item.role == "user"
            if item.role == "assistant":
                blocks.append(Block(item.id, item.message, counter.measure(item.message), request))
            else:
                blocks.append(Block(item.id, item.message, counter.measure(item.message), request, layer=item.layer, group=item.group))
        found = scenario.derived[key] = tuple(blocks)
    return found


def script_call_names(scenario: Scenario) -> dict[str, str]:
    """The function each tool call id of the transcript calls: a result is billed under that name.
    Found once per scenario: the story asks it at every compaction it explains."""
    found = scenario.derived.get(script_call_names)
    if found is None:
        found = scenario.derived[script_call_names] = call_names([*scenario.prefix, *(item.message for item in scenario.script)])
    return found
