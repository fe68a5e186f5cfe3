"""Replay a scenario call by call: what each model call sends, and what compaction did.

The loop is the seed's (000_fd8adbc93eaf3a52.txt): the history lives across requests; before
every model call the loop compacts it, and what compaction did persists, since later messages
append to the compacted history. A model call happens before every assistant message of the
script, and once more at the end when the script ends on a user or tool message.
"""

from __future__ import annotations

from dataclasses import replace

from ..collector import without_collection
from ..time_budget import spend
from .history import TOOL_RESULT_ROLES, Block
from .loop_notices import CANNOT_FIT, HELD_BACK, KEEP_COVERS_ALL, PIN_UNKNOWN, SUGGESTED_TOOL_RESULTS
from ..model import PairCheck, Scenario, ScriptMessage, pair_facts
from ..settings import Settings
from .calls import Call, Event, PinStatus, Replay, chat_counter, chat_floor, script_blocks
from .compaction import Compaction, Context
from .fact_watch import FactWatch
from .provider_count import ProviderCount
from .pitfalls import SAID_ONCE, call_pitfalls, trigger_notices
from .recorded import Calibration, recorded_compactions, recorded_usage
from .strategies import compact
from .strategy_catalog import STRATEGIES
from .summarizer import OfflineSummarizer, Summarizer

# Messages fed between two looks at the request's budget (each reads the thread's CPU clock):
# fine-grained enough that a request stops within a few milliseconds of it.
BUDGET_STEP = 8




@without_collection
def replay(scenario: Scenario, settings: Settings | None = None, summarizer: Summarizer | None = None) -> Replay:
    settings = settings or scenario.settings
    loop = _Loop.starting(scenario, settings, summarizer)
    return loop.run(0)


def replay_from(base: Replay, settings: Settings, summarizer: Summarizer | None = None) -> Replay:
    """The replay of `settings` on base's chat (summarizing with `summarizer`, the offline one
    by default), with base's calls before the first where the strategy acts (`first_action`)
    taken as they are rather than replayed: a sweep replays most strategies at many lines, and
    all of them send what "none" sends until then.

    `base` is a replay of "none" at the same window, model window and counter, whose history
    only grows. Every figure of a call taken is the strategy's own (what is sent, its tokens,
    overflow, room for the reply, facts, validity, the bill); what the settings alone draw on
    it (where KEEP starts, the alert line's warnings, the pinned messages, what is said once
    a replay but for its product's notices about its line) is base's."""
    first = first_action(base, settings)
    scenario = base.scenario
    if first is None:
        return as_if(base, settings)
    loop = _Loop.starting(scenario, settings, summarizer)
    return loop.run(loop.take_over(base, first) if first > 1 else 0)


def first_action(base: Replay, settings: Settings) -> int | None:
    """The first call of base (a replay of "none") before which the strategy of `settings`
    would act (its line passed, or its product's trigger met); None: it never would."""
    scenario = base.scenario
    counter = chat_counter(scenario, settings.counter)
    context = _context(scenario, settings, counter, base.floor_units, None)
    if not context.strategy.levels:
        return None
    # "none" only appends: a call's blocks are the start of the last call's, and their units
    # a running sum.
    units, counted = 0, 0
    for call in base.calls:
        for block in call.blocks[counted:]:
            units += block.units
        counted = len(call.blocks)
        context.calibration = call.calibration
        if context.must_compact(call.blocks, units):
            return call.number
    return None


def as_if(found: Replay, settings: Settings) -> Replay:
    """A replay that sends what `settings` would send, as made with `settings`: its own
    product's notices about its line, the others (KEEP cannot fit...) as they were."""
    kept = [notice for notice in found.notices if notice not in trigger_notices(found.settings)]
    notices = trigger_notices(settings) + kept
    return replace(found, settings=settings, notices=notices, warnings=worded(notices), derived={})


def worded(notices: list[tuple[str, dict[str, int]]]) -> list[str]:
    """The notices in English, their numbers written with thousands separators."""
    return [message % {name: f"{value:,}" for name, value in values.items()} for message, values in notices]


def _context(scenario: Scenario, settings: Settings, counter, floor_units: int, summarizer: Summarizer | None) -> Context:
    digests = {}
    request = 0
    for item in scenario.script:
        if item.role == "user":
            request += 1
            if item.digest:
                digests[request] = item.digest
    return Context(
        settings=settings,
        strategy=STRATEGIES[settings.strategy],
        counter=counter,
        floor_units=floor_units,
        summarizer=summarizer or OfflineSummarizer(),
        facts=scenario.facts,
        fetch_once_tools=scenario.fetch_once_tools,
        digests=digests,
        pinned=settings.pinned(scenario.pinned),
    )


class _Loop:
    """The agent loop, driven by the script instead of a model."""

    @classmethod
    def starting(cls, scenario: Scenario, settings: Settings, summarizer: Summarizer | None) -> _Loop:
        counter = chat_counter(scenario, settings.counter)
        floor_units, missing = chat_floor(scenario, settings.counter)
        loop = cls(scenario, settings, _context(scenario, settings, counter, floor_units, summarizer))
        loop.unlogged = missing
        loop.notices += trigger_notices(settings)
        return loop

    def run(self, start: int) -> Replay:
        """Feed the script from its message `start` on, and the replay made."""
        scenario, settings, counter = self.scenario, self.settings, self.context.counter
        blocks = script_blocks(scenario, settings.counter)
        for index in range(start, len(scenario.script)):
            if index % BUDGET_STEP == 0:
                spend()  # a long transcript stops at the request's budget (core/time_budget.py)
            self.feed(scenario.script[index], blocks[index])
        self.finish()
        unknown = {entry.lstrip("-") for entry in settings.pins_outside({item.id for item in scenario.script})}
        if unknown:
            self.notices.append((PIN_UNKNOWN, {"count": len(unknown), "last": len(scenario.script)}))
        return Replay(
            scenario=scenario,
            settings=settings,
            floor_units=self.context.floor_units,
            floor_tokens=counter.block_tokens(self.context.floor_units),
            calls=self.calls,
            unlogged=self.unlogged,
            warnings=worded(self.notices),
            notices=self.notices,
            taken=self.taken,
        )

    def take_over(self, base: Replay, number: int) -> int:
        """Stand where base (a replay of "none") stood just before its call `number` (> 1),
        with its calls before it; the index of the script message to feed next, its reply."""
        call, previous = base.calls[number - 1], base.calls[number - 2]
        self.calls = base.calls[: number - 1]
        self.taken = number - 1
        self.history = list(call.blocks)
        self.facts.recount(self.history)
        self.facts.resume(previous.facts)
        self.units = sum(block.units for block in self.history)
        self.request, self.turn, self.turn_open = call.request_number, call.turn - 1, False
        self.sent = previous.sent_total
        self.context.calibration = call.calibration
        self.as_recorded = all(done >= number for done in self.harness)
        # What came since the last call waits for this one: the user messages' events.
        self.pending = [event for event in call.events[: next(i for i, e in enumerate(call.events) if e.kind != "user_message")]]
        replies = [index for index, item in enumerate(self.scenario.script) if item.role == "assistant"]
        resume = replies[number - 1] if number <= len(replies) else len(self.scenario.script)
        self.pins_arrived = [item for item in self.scenario.script[:resume] if item.id in self.context.pinned]
        self._restart_pair_check()
        self._pair_problems(None)
        self.provider.recount(self.history)
        return resume

    def __init__(self, scenario: Scenario, settings: Settings, context: Context):
        self.scenario = scenario
        self.settings = settings
        self.context = context
        self.history: list[Block] = []
        self.facts = FactWatch(scenario, settings.counter)
        self.units = 0
        self.calls: list[Call] = []
        self.taken = 0  # the calls taken from another replay (take_over)
        self.pending: list[Event] = []
        self.request = 0
        self.turn = 0
        self.turn_open = False
        self.sent = 0
        self.summarizer_output = 0
        self.notices: list[tuple[str, dict[str, int]]] = []
        self.cannot_fit_said = False
        self.said: set[str] = set()  # notices said once per replay
        self.pins_arrived: list[ScriptMessage] = []  # pinned messages, as written, in order
        self.provider = ProviderCount(scenario, context)
        self.recorded = recorded_usage(scenario)
        self.harness = recorded_compactions(scenario)
        # Whether the history is still the one the session sent: its recorded counts then
        # anchor the next call's (recorded.Calibration).
        self.as_recorded = True
        self._restart_pair_check()

    def _restart_pair_check(self) -> None:
        """The pair check of the request as sent, prefix first, so indexes match `Call.request`."""
        self.pairs = PairCheck()
        for message in self.scenario.prefix:
            self.pairs.feed(pair_facts(message))
        self.paired = 0  # blocks of the history fed to the check

    def _pair_problems(self, compaction: Compaction | None) -> tuple[str, ...]:
        # Truncation keeps each message's role and call ids, all the check reads; a drop or a
        # summary removes messages, and the check starts over.
        if compaction is not None and (compaction.dropped or compaction.summarized or compaction.notice_added):
            self._restart_pair_check()
        for block in self.history[self.paired:]:
            self.pairs.feed(block.pair_facts)
        self.paired = len(self.history)
        if not self.pairs.found and not self.pairs.open_calls:  # a valid request, as most are
            return ()
        return tuple(f"{where}: {what}" for where, what in self.pairs.problems())

    def _append(self, block: Block) -> Block:
        self.history.append(block)
        self.facts.add(block)
        self.units += block.units
        self.provider.add(block.message)
        return block

    def _end_turn(self) -> None:
        if self.turn_open and self.calls:
            last = self.calls[-1]
            last.events.append(Event("turn_end", last.number, {"turn": self.turn}))
            self.turn_open = False

    def feed(self, item: ScriptMessage, block: Block) -> None:
        """Take the script's next message (`block`: as the history first holds it)."""
        if item.id in self.context.pinned and item.role != "assistant":
            self.pins_arrived.append(item)
        if item.role == "user":
            self._end_turn()
            self.request += 1
            self.turn = 0
            self._append(block)
            self.pending.append(Event("user_message", len(self.calls) + 1, {"id": item.id, "request": self.request}))
        elif item.role == "assistant":
            self._end_turn()
            self._call(block)
            if item.id in self.context.pinned:  # a reply is in the requests after its call
                self.pins_arrived.append(item)
        else:
            self._append(block)
            if item.role in TOOL_RESULT_ROLES:
                # A legacy function result names its function instead of a call id.
                answers = item.message.get("tool_call_id") or item.message.get("name", "")
                name = self._tool_name(answers) or item.message.get("name", "")
                event = Event("tool_result", len(self.calls), {"id": block.id, "tool_call_id": answers, "name": name})
                (self.calls[-1].events if self.calls else self.pending).append(event)

    def _tool_name(self, call_id: str) -> str:
        """The name of the tool the last reply called with `call_id` ("" when none did)."""
        reply = self.calls[-1].reply if self.calls else None
        if reply is None:
            return ""
        if isinstance(call_id, str):
            return reply.first_names.get(call_id, "")
        return next((name for known, name in reply.named_calls if known == call_id), "")

    def finish(self) -> None:
        if not self.scenario.script:
            self.request = 1  # all prefix, no user message: still one request to the model
        if not self.scenario.script or self.scenario.script[-1].role != "assistant":
            self._end_turn()
            self._call(None)
        else:
            self._end_turn()

    def _call(self, reply: Block | None) -> None:
        """One model call: compact, send, and take the reply into the history."""
        number = len(self.calls) + 1
        # What came since the last call is this call's: a request's event already is.
        events = [event if event.call == number else event._replace(call=number) for event in self.pending]
        self.pending = []
        calibration = self.context.calibration
        compaction = self._compact(number, events)
        self.turn += 1
        self.turn_open = True
        tokens, counted = self.context.tokens(self.units), self.context.counted(self.units)
        self._harness_compaction(number, events)
        events.append(Event("turn_start", number, {"turn": self.turn, "request": self.request}))
        events.append(Event("model_call", number, {"tokens": tokens, "messages": len(self.history) + 1}))
        alert = self.settings.alert_line
        if alert is not None and alert < tokens <= self.settings.limit:
            events.append(Event("warning", number, {"tokens": tokens, "alert": round(alert), "line": round(self.settings.limit)}))
        window = self.settings.real_window
        provider_tokens = self.provider.tokens(tokens, self.history, compaction, built_on_recorded=calibration is not None)
        overflow = provider_tokens > window
        if overflow:
            events.append(Event("overflow", number, {"tokens": provider_tokens, "window": window}))
        problems = self._pair_problems(compaction)
        if problems:
            events.append(Event("invalid_request", number, {"problems": list(problems)}))
        keep_start_index = self.context.keep_start(self.history)
        if not self.context.strategy.harness:  # a harness's KEEP is its own: its pitfalls say it
            self._check_cannot_fit(number, keep_start_index)
            self._check_compaction(number, keep_start_index, compaction)
        self.sent += tokens
        reply_units, no_room = self._reply(reply, number, events, provider_tokens if not overflow else None)
        self.calls.append(
            Call(
                number=number,
                request_number=self.request,
                turn=self.turn,
                blocks=tuple(self.history),
                tokens=tokens,
                keep_start=keep_start_index,
                compaction=compaction,
                events=events,
                sent_total=self.sent,
                summarizer_output_total=self.summarizer_output,
                overflow=overflow,
                facts=self.facts.statuses(self.history, number),
                reply=reply,
                problems=problems,
                no_room_for_reply=no_room,
                provider_tokens=provider_tokens,
                pinned=self._pin_statuses(),
                recorded=self.recorded.get(number),
                counted=counted, calibration=calibration,
            )
        )
        self._anchor(number, counted, compaction)
        if reply is not None:
            self.history.append(reply)
            self.facts.add(reply)
            self.units += reply.units
            self.provider.add(reply.message, reply_units)

    def _harness_compaction(self, number: int, events: list[Event]) -> None:
        """Shown where the harness compacted, with its figures; the replay keeps the history."""
        done = self.harness.get(number)
        if done is not None:
            summary = round(self.context.counter.block_tokens(self.context.counter.measure({"role": "user", "content": done.summary})))
            events.append(Event("recorded_compaction", number, {"trigger": done.trigger, "before": done.tokens_before, "summary": summary}))

    def _anchor(self, number: int, counted: int, compaction: Compaction | None) -> None:
        """Count the next calls from this one's recorded input, while the history is the one
        the session sent (recorded.Calibration): until the strategy changed it, or the harness
        sent a compacted one."""
        if number in self.harness or (compaction is not None and compaction.changed):
            self.as_recorded = False
        recorded = self.recorded.get(number)
        if recorded is not None and self.as_recorded:
            self.context.calibration = Calibration(number, counted, recorded.input_tokens)

    def _compact(self, number: int, events: list[Event]) -> Compaction | None:
        """Compaction before the call, its events logged and its summarizer call billed."""
        before = self.history
        self.history, self.units, compaction = compact(self.history, self.units, self.context)
        if compaction is not None and self.history != before:  # the same blocks mostly: compared by identity first
            self.facts.recount(self.history)
        if compaction is not None:
            events.append(Event("compact", number, {"before": compaction.tokens_before, "after": compaction.tokens_after}))
            if compaction.notice is not None:
                events.append(Event("notice", number, {"id": compaction.notice, "added": compaction.notice_added}))
            if compaction.pinned_kept:
                events.append(Event("pinned_kept", number, {"ids": list(compaction.pinned_kept), "tokens": compaction.tokens_after}))
            self.sent += compaction.summarizer_input
            self.summarizer_output += compaction.summarizer_output
        for pitfall in call_pitfalls(compaction, self.context):
            events.append(Event("pitfall", number, pitfall))
            kind = pitfall["kind"]
            if kind in SAID_ONCE and kind not in self.said:
                self.said.add(kind)
                self.notices.append((SAID_ONCE[kind], {"call": number, **{k: v for k, v in pitfall.items() if k != "kind"}}))
        return compaction

    def _reply(self, reply: Block | None, number: int, events: list[Event], provider_tokens: int | None) -> tuple[int, bool]:
        """The provider units of the script's reply to this call, and whether it has no room
        left in the window (`provider_tokens`: the request's, None when it overflows)."""
        if reply is None:
            return 0, False
        reply_units = self.provider.counter.measure(reply.message)
        reply_tokens = round(self.provider.counter.block_tokens(reply_units))
        window = self.settings.real_window
        no_room = provider_tokens is not None and provider_tokens + reply_tokens > window
        if no_room:
            events.append(Event("no_room_for_reply", number, {"tokens": provider_tokens, "reply_tokens": reply_tokens, "window": window}))
        for call_id, name in reply.named_calls:
            events.append(Event("tool_call", number, {"id": call_id, "name": name}))
        return reply_units, no_room

    def _pin_statuses(self) -> tuple[PinStatus, ...]:
        if not self.pins_arrived:
            return ()
        sent = {block.id: block for block in self.history}
        return tuple(
            PinStatus(item.id, item.id in sent, item.id in sent and sent[item.id].message == item.message)
            for item in self.pins_arrived
        )

    def _check_cannot_fit(self, number: int, keep_start: int) -> None:
        if self.cannot_fit_said:
            return
        keep_units = sum(block.units for block in self.history[keep_start:])
        needed = self.context.tokens(keep_units)
        if needed > self.settings.real_window:
            self.cannot_fit_said = True
            floor = round(self.context.counter.block_tokens(self.context.floor_units))
            unit, keep = self.settings.keep_unit, self.settings.keep
            if unit == "requests":
                keep = min(keep, sum(1 for block in self.history if block.role == "user"))
            values = {
                "call": number,
                "floor": floor,
                "keep": keep,
                "keep_tokens": needed - floor,
                "needed": needed,
                "window": self.settings.real_window,
            }
            self.notices.append((CANNOT_FIT[(unit, keep > 1)], values))

    def _check_compaction(self, number: int, keep_start: int, compaction: Compaction | None) -> None:
        """Say once why a compaction that was needed did nothing, when the settings are why."""
        if compaction is None or compaction.changed:
            return
        if compaction.held_back and "held_back" not in self.said:
            self.said.add("held_back")
            values = {"call": number, "clearable": compaction.held_back, "minimum": self.settings.clear_at_least}
            self.notices.append((HELD_BACK, values))
        if keep_start > 0 or "keep" in self.said:
            return
        unit, keep = self.settings.keep_unit, self.settings.keep
        counted = {"requests": "user", "tool_results": "tool", "turns": "assistant"}[unit]
        count = sum(1 for block in self.history if block.role == counted)
        if unit == "requests" and count == 1:
            self.said.add("keep")
            self.notices.append((KEEP_COVERS_ALL["only_request"], {"call": number, "suggest": SUGGESTED_TOOL_RESULTS}))
        elif count >= 2:
            self.said.add("keep")
            values = {"call": number, "keep": keep, "count": count, "lower": count - 1}
            self.notices.append((KEEP_COVERS_ALL[unit], values))
