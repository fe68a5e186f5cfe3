"""Replay a scenario call by call: what each model call sends, and what compaction did.

The loop is the seed's (000_fd8adbc93eaf3a52.txt): the history lives across requests; before
every model call the loop compacts it, and what compaction did persists, since later messages
append to the compacted history. A model call happens before every assistant message of the
script, and once more at the end when the script ends on a user or tool message.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..time_budget import spend
from .history import TOOL_RESULT_ROLES, Block, searchable
from ..i18n import N_
from .history import PairCheck
from ..model import Fact, Scenario, ScriptMessage
from ..settings import Settings
from .calls import Call, Event, FactStatus, PinStatus, Replay, chat_counter
from .compaction import Compaction, Context
from .pitfalls import LOOP, call_pitfalls, trigger_notices
from .recorded import recorded_compactions, recorded_usage, unlogged
from .strategies import compact
from .summarizer import OfflineSummarizer, Summarizer
from ..counting.tokens import Message, tool_call_texts

# The estimate is what a loop believes; a provider counts real tokens. When the loop counts
# with the estimate, the provider's count (for overflow and room for the reply) is taken with
# this tokenizer, the one of today's common OpenAI models.
PROVIDER_COUNTER = "o200k_base"


# "Call N cannot fit": the floor and KEEP alone pass the window. KEEP is named as it is (never
# "the last 2 requests" when there is one), and "lower keep" is advised only when keep can go
# lower.
CANNOT_FIT = {
    ("requests", True): N_(
        "Call %(call)s cannot fit: the system prompt and tools (%(floor)s tokens) and the KEEP zone "
        "(the last %(keep)s requests, %(keep_tokens)s tokens) need %(needed)s tokens, more than the "
        "%(window)s-token window. No compaction can help: lower keep or raise the window."
    ),
    ("requests", False): N_(
        "Call %(call)s cannot fit: the system prompt and tools (%(floor)s tokens) and the KEEP zone "
        "(the last request, %(keep_tokens)s tokens) need %(needed)s tokens, more than the "
        "%(window)s-token window. No compaction can help while KEEP counts requests: keep the last "
        "few tool results instead, or raise the window."
    ),
    ("tool_results", True): N_(
        "Call %(call)s cannot fit: the system prompt and tools (%(floor)s tokens) and the KEEP zone "
        "(the last %(keep)s tool results and what follows them, %(keep_tokens)s tokens) need "
        "%(needed)s tokens, more than the %(window)s-token window. No compaction can help: lower "
        "keep or raise the window."
    ),
    ("tool_results", False): N_(
        "Call %(call)s cannot fit: the system prompt and tools (%(floor)s tokens) and the KEEP zone "
        "(the last tool result and what follows it, %(keep_tokens)s tokens) need %(needed)s tokens, "
        "more than the %(window)s-token window. No compaction can help: raise the window."
    ),
    ("turns", True): N_(
        "Call %(call)s cannot fit: the system prompt and tools (%(floor)s tokens) and the KEEP zone "
        "(the last %(keep)s turns, %(keep_tokens)s tokens) need %(needed)s tokens, more than the "
        "%(window)s-token window. No compaction can help: lower keep or raise the window."
    ),
    ("turns", False): N_(
        "Call %(call)s cannot fit: the system prompt and tools (%(floor)s tokens) and the KEEP zone "
        "(the last turn, %(keep_tokens)s tokens) need %(needed)s tokens, more than the "
        "%(window)s-token window. No compaction can help: raise the window."
    ),
}
# A compaction was needed and KEEP covered the whole history, so nothing could be cut.
KEEP_COVERS_ALL = {
    "only_request": N_(
        "Call %(call)s is above the line, but the only request is the first message: KEEP counts "
        "requests, so it covers the whole history and nothing can be compacted. Keep the last "
        "%(suggest)s tool results instead (KEEP in tool results)."
    ),
    "requests": N_(
        "Call %(call)s is above the line, but KEEP (the last %(keep)s requests) covers every "
        "request of the history (requests so far: %(count)s), so nothing can be compacted. Lower "
        "keep to %(lower)s, or count KEEP in tool results."
    ),
    "tool_results": N_(
        "Call %(call)s is above the line, but KEEP (the last %(keep)s tool results) covers every "
        "tool result of the history (tool results so far: %(count)s), so nothing can be "
        "compacted. Lower keep to %(lower)s."
    ),
    "turns": N_(
        "Call %(call)s is above the line, but KEEP (the last %(keep)s turns) covers every turn of "
        "the history (turns so far: %(count)s), so nothing can be compacted. Lower keep to "
        "%(lower)s."
    ),
}
HELD_BACK = N_(
    "Call %(call)s is above the line, but clearing every old tool result would take off only "
    "%(clearable)s tokens, fewer than \"clear at least\" (%(minimum)s): the request is sent as it "
    "is, and the prompt cache stays whole. Lower \"clear at least\" if the window is at risk."
)
# The pin setting names ids that are no message of the chat (a typo, or another transcript's).
PIN_UNKNOWN = N_(
    "Pinned ids that name no message of this chat: %(count)s (it has %(last)s messages, numbered "
    "from m1, the first request)."
)
# Anthropic's default number of tool uses to keep, suggested when KEEP should count them.
SUGGESTED_TOOL_RESULTS = 3


def fact_statuses(facts: list[Fact], prefix: Sequence[Message], blocks: list[Block] | tuple[Block, ...], call: int) -> list[FactStatus]:
    if not facts:
        return []
    sent = "\n".join([*(searchable(message) for message in prefix), *(block.searchable for block in blocks)])
    return [FactStatus(fact, fact.text in sent, call >= fact.needed_from_call) for fact in facts]


def replay(scenario: Scenario, settings: Settings | None = None, summarizer: Summarizer | None = None) -> Replay:
    settings = settings or scenario.settings
    counter = chat_counter(scenario, settings.counter)
    floor_units = scenario.floor_units(counter)
    # What the log does not hold (system prompt, tool definitions) joins the floor (recorded.py).
    missing = unlogged(scenario, counter, floor_units)
    floor_units += missing.units
    digests = {}
    request = 0
    for item in scenario.script:
        if item.role == "user":
            request += 1
            if item.digest:
                digests[request] = item.digest
    context = Context(
        settings=settings,
        counter=counter,
        floor_units=floor_units,
        summarizer=summarizer or OfflineSummarizer(),
        facts=scenario.facts,
        fetch_once_tools=scenario.fetch_once_tools,
        digests=digests,
        pinned=settings.pinned(scenario.pinned),
    )
    loop = _Loop(scenario, settings, context)
    loop.notices += trigger_notices(settings)
    for item in scenario.script:
        spend()  # a long transcript stops at the request's budget (core/time_budget.py)
        loop.feed(item)
    loop.finish()
    unknown = {entry.lstrip("-") for entry in settings.pins_outside({item.id for item in scenario.script})}
    if unknown:
        loop.notices.append((PIN_UNKNOWN, {"count": len(unknown), "last": len(scenario.script)}))
    return Replay(
        scenario=scenario,
        settings=settings,
        floor_units=floor_units,
        floor_tokens=counter.block_tokens(floor_units),
        calls=loop.calls,
        unlogged=missing,
        warnings=[message % {name: f"{value:,}" for name, value in values.items()} for message, values in loop.notices],
        notices=loop.notices,
    )


class _Loop:
    """The agent loop, driven by the script instead of a model."""

    def __init__(self, scenario: Scenario, settings: Settings, context: Context):
        self.scenario = scenario
        self.settings = settings
        self.context = context
        self.history: list[Block] = []
        self.units = 0
        self.calls: list[Call] = []
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
        counter = context.counter
        if counter.name == "estimate":
            counter = chat_counter(scenario, PROVIDER_COUNTER)
        self.provider = counter
        self.provider_floor = context.floor_units
        if counter is not context.counter:
            self.provider_floor = scenario.floor_units(counter)
            self.provider_floor += unlogged(scenario, counter, self.provider_floor).units
        self.recorded = recorded_usage(scenario)
        self.harness = recorded_compactions(scenario)
        # Kept up to date as messages come, and recounted only when compaction changed the
        # history, so that a long chat is not walked again at every call.
        self.provider_units = 0
        self._provider_measured: dict[int, tuple[dict, int]] = {}
        self._restart_pair_check()

    def _provider_units(self, message) -> int:
        return 0 if self.provider is self.context.counter else self._provider_measure(message)

    def _provider_tokens(self, tokens: int, compaction: Compaction | None) -> int:
        if self.provider is self.context.counter:
            return tokens
        if compaction is not None and compaction.changed:
            self.provider_units = sum(self._provider_measure(b.message) for b in self.history)
        return self.provider.request_tokens(self.provider_floor + self.provider_units)

    def _provider_measure(self, message) -> int:
        # A recount after each compaction sees mostly the same messages: measure each once.
        # The message is kept beside its units, so its id() cannot be reused by another.
        found = self._provider_measured.get(id(message))
        if found is None:
            found = self._provider_measured[id(message)] = (message, self.provider.measure(message))
        return found[1]

    def _restart_pair_check(self) -> None:
        """The pair check of the request as sent, prefix first, so indexes match `Call.request`."""
        self.pairs = PairCheck()
        for message in self.scenario.prefix:
            self.pairs.feed(message)
        self.paired = 0  # blocks of the history fed to the check

    def _pair_problems(self, compaction: Compaction | None) -> tuple[str, ...]:
        # Truncation keeps each message's role and call ids, all the check reads; a drop or a
        # summary removes messages, and the check starts over.
        if compaction is not None and (compaction.dropped or compaction.summarized or compaction.notice_added):
            self._restart_pair_check()
        for block in self.history[self.paired:]:
            self.pairs.feed(block.message)
        self.paired = len(self.history)
        return tuple(f"{where}: {what}" for where, what in self.pairs.problems())

    def _append(self, item) -> Block:
        block = Block(item.id, item.message, self.context.counter.measure(item.message), self.request, layer=item.layer, group=item.group)
        self.history.append(block)
        self.units += block.units
        self.provider_units += self._provider_units(item.message)
        return block

    def _end_turn(self) -> None:
        if self.turn_open and self.calls:
            last = self.calls[-1]
            last.events.append(Event("turn_end", last.number, {"turn": self.turn}))
            self.turn_open = False

    def feed(self, item) -> None:
        if item.id in self.context.pinned and item.role != "assistant":
            self.pins_arrived.append(item)
        if item.role == "user":
            self._end_turn()
            self.request += 1
            self.turn = 0
            self._append(item)
            self.pending.append(Event("user_message", len(self.calls) + 1, {"id": item.id, "request": self.request}))
        elif item.role == "assistant":
            self._end_turn()
            self._call(item)
            if item.id in self.context.pinned:  # a reply is in the requests after its call
                self.pins_arrived.append(item)
        else:
            block = self._append(item)
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
        return next((name for known, (name, _) in zip(reply.tool_call_ids, tool_call_texts(reply.message)) if known == call_id), "")

    def finish(self) -> None:
        if not self.scenario.script:
            self.request = 1  # all prefix, no user message: still one request to the model
        if not self.scenario.script or self.scenario.script[-1].role != "assistant":
            self._end_turn()
            self._call(None)
        else:
            self._end_turn()

    def _call(self, reply_item) -> None:
        """One model call: compact, send, and take the reply into the history."""
        number = len(self.calls) + 1
        events = [Event(e.kind, number, e.detail) for e in self.pending]
        self.pending = []
        compaction = self._compact(number, events)
        self.turn += 1
        self.turn_open = True
        tokens = self.context.tokens(self.units)
        if number in self.harness:  # shown where the harness did it; the replay keeps the history
            done = self.harness[number]
            summary = round(self.context.counter.block_tokens(self.context.counter.measure({"role": "user", "content": done.summary})))
            events.append(Event("recorded_compaction", number, {"trigger": done.trigger, "before": done.tokens_before, "summary": summary}))
        events.append(Event("turn_start", number, {"turn": self.turn, "request": self.request}))
        events.append(Event("model_call", number, {"tokens": tokens, "messages": len(self.history) + 1}))
        alert = self.settings.alert_line
        if alert is not None and alert < tokens <= self.settings.limit:
            events.append(Event("warning", number, {"tokens": tokens, "alert": round(alert), "line": round(self.settings.limit)}))
        window = self.settings.real_window
        provider_tokens = self._provider_tokens(tokens, compaction)
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
        reply, reply_units, no_room = self._reply(reply_item, number, events, provider_tokens if not overflow else None)
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
                facts=fact_statuses(self.scenario.facts, self.scenario.prefix, self.history, number),
                reply=reply,
                problems=problems,
                no_room_for_reply=no_room,
                provider_tokens=provider_tokens,
                pinned=self._pin_statuses(),
                recorded=self.recorded.get(number),
            )
        )
        if reply is not None:
            self.history.append(reply)
            self.units += reply.units
            self.provider_units += 0 if self.provider is self.context.counter else reply_units

    def _compact(self, number: int, events: list[Event]) -> Compaction | None:
        """Compaction before the call, its events logged and its summarizer call billed."""
        self.history, self.units, compaction = compact(self.history, self.units, self.context)
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
            if pitfall["kind"] == "loop" and "loop" not in self.said:
                self.said.add("loop")
                self.notices.append((LOOP, {"call": number, **{k: v for k, v in pitfall.items() if k != "kind"}}))
        return compaction

    def _reply(self, reply_item, number: int, events: list[Event], provider_tokens: int | None) -> tuple[Block | None, int, bool]:
        """The script's reply to this call as a block, its provider units, and whether it has
        no room left in the window (`provider_tokens`: the request's, None when it overflows)."""
        if reply_item is None:
            return None, 0, False
        reply = Block(reply_item.id, reply_item.message, self.context.counter.measure(reply_item.message), self.request)
        reply_units = self.provider.measure(reply.message)
        reply_tokens = round(self.provider.block_tokens(reply_units))
        window = self.settings.real_window
        no_room = provider_tokens is not None and provider_tokens + reply_tokens > window
        if no_room:
            events.append(Event("no_room_for_reply", number, {"tokens": provider_tokens, "reply_tokens": reply_tokens, "window": window}))
        for call_id, (name, _) in zip(reply.tool_call_ids, tool_call_texts(reply.message)):
            events.append(Event("tool_call", number, {"id": call_id, "name": name}))
        return reply, reply_units, no_room

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
