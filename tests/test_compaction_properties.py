"""The compaction invariants, on generated chats, for every strategy."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings as hypothesis_settings
from hypothesis import strategies as st

from webapp.core.engine.history import TRUNCATION_MARK, keep_from
from webapp.core.engine.replay import replay
from webapp.core.model import tool_pair_problems
from webapp.core.counting.tokens import get_counter

from .generators import scenarios, settings

EXAMPLES = hypothesis_settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def histories_before_compaction(result):
    """For each call, the history as it was before that call's compaction: the previous call's
    history, its reply, and the script messages that arrived since."""
    script = result.scenario.script
    before, position, previous = [], 0, []
    for call in result.calls:
        arrived = []
        while position < len(script) and script[position].role != "assistant":
            arrived.append(script[position].id)
            position += 1
        ids = previous + arrived
        before.append(ids)
        if call.reply is not None:
            position += 1
            previous = [block.id for block in call.blocks] + [call.reply.id]
        else:
            previous = [block.id for block in call.blocks]
    return before


@EXAMPLES
@given(scenarios(), settings(counters=("estimate", "o200k_base")))
def test_every_request_is_valid_and_overflow_is_reported(scenario, chosen):
    result = replay(scenario, chosen)
    assert len(result.calls) == scenario.call_count
    for call in result.calls:
        request = call.request(scenario.prefix)
        start = len(scenario.prefix)
        assert request[:start] == list(scenario.prefix), "the prefix is sent first, untouched"
        assert tool_pair_problems(request[start:]) == [], "a tool result lost its call, or a call its result"
        assert call.valid
        # The provider counts real tokens: with the estimate, o200k_base's count decides overflow.
        provider = get_counter("o200k_base" if chosen.counter == "estimate" else chosen.counter)
        real = provider.count_request(request, scenario.tools)  # the whole request, counted at once
        assert call.provider_tokens == real
        assert call.overflow == (real > chosen.real_window)
        assert ("overflow" in [e.kind for e in call.events]) == call.overflow


@EXAMPLES
@given(scenarios(), settings())
def test_compaction_runs_only_above_the_line_and_persists(scenario, chosen):
    result = replay(scenario, chosen)
    for call, before in zip(result.calls, histories_before_compaction(result)):
        ids = [block.id for block in call.blocks]
        if call.compaction is None:
            # Nothing tried: the history is exactly what accumulated, nothing rewritten.
            assert ids == before
            assert all(block.state != "truncated" or block.id in before for block in call.blocks)
            assert chosen.strategy == "none" or call.tokens <= chosen.limit
        else:
            assert call.compaction.tokens_before > chosen.limit
            assert call.compaction.tokens_after == call.tokens
            # No "tokens_after <= tokens_before": like the seed, truncation turns a result
            # shorter than its note into the longer note.


@EXAMPLES
@given(scenarios(), settings())
def test_keep_zone_and_order_are_never_touched(scenario, chosen):
    result = replay(scenario, chosen)
    previous_blocks = {}
    for call, before in zip(result.calls, histories_before_compaction(result)):
        sent = {block.id: block for block in call.blocks}
        # The KEEP zone of the history before compaction comes through verbatim.
        users = [i for i, block_id in enumerate(before) if _role(scenario, block_id) == "user"]
        keep_start = users[-chosen.keep] if len(users) >= chosen.keep else 0
        protected = before[keep_start:] if keep_start else before
        if call.compaction is not None and keep_start:
            assert [block.id for block in call.blocks[-len(protected):]] == protected
            for block_id in protected:
                assert sent[block_id].state == "original"
        elif call.compaction is not None:
            assert not call.compaction.changed, "with fewer requests than keep, everything is protected"
        # Survivors keep their order; a message is original, truncated (a tool result) or gone.
        original_ids = [block.id for block in call.blocks if block.state != "summary"]
        assert original_ids == [i for i in before if i in sent and sent[i].state != "summary"]
        for block in call.blocks:
            if block.state == "truncated":
                assert block.role == "tool" and block.text.startswith(TRUNCATION_MARK)
            if block.state == "original" and block.id in previous_blocks:
                assert block.message == previous_blocks[block.id].message
        previous_blocks = sent


@EXAMPLES
@given(scenarios(min_requests=2), settings(strategies=("truncate", "drop", "truncate-drop")))
def test_compaction_stops_as_soon_as_it_fits(scenario, chosen):
    result = replay(scenario, chosen)
    counter = get_counter(chosen.counter)
    ever_truncated: set[str] = set()
    for call in result.calls:
        c = call.compaction
        if c is not None:
            ever_truncated |= set(c.truncated)
        if c is None or not c.changed or call.tokens > chosen.limit:
            continue
        blocks = {block.id: block for block in call.blocks}
        if c.dropped:
            last_exchange = _last_exchange(scenario, c.dropped)
            if ever_truncated.intersection(last_exchange):
                # It was dropped as truncation notes, whose size the script does not give.
                continue
            # Putting back the last exchange dropped would not fit.
            units = sum(b.units for b in call.blocks) + sum(_units(scenario, counter, i) for i in last_exchange)
            assert counter.request_tokens(result.floor_units + units) > chosen.limit
        elif c.truncated:
            # Undoing the last truncation would not fit.
            last = c.truncated[-1]
            units = sum(b.units for b in call.blocks) - blocks[last].units + _units(scenario, counter, last)
            assert counter.request_tokens(result.floor_units + units) > chosen.limit


@EXAMPLES
@given(scenarios(), settings(strategies=("truncate-drop",)))
def test_truncate_drop_drops_only_once_truncation_is_exhausted(scenario, chosen):
    result = replay(scenario, chosen)
    for call in result.calls:
        if call.compaction and call.compaction.dropped:
            boundary = keep_from(list(call.blocks), chosen.keep)
            for block in call.blocks[:boundary]:
                assert block.role != "tool" or block.text.startswith(TRUNCATION_MARK)


@EXAMPLES
@given(scenarios(), settings())
def test_the_bill_adds_every_request_and_the_summarizer_input(scenario, chosen):
    result = replay(scenario, chosen)
    total = 0
    for call in result.calls:
        total += call.tokens + (call.compaction.summarizer_input if call.compaction else 0)
        assert call.sent_total == total
        if chosen.strategy != "summarize" and call.compaction:
            assert call.compaction.summarizer_input == 0 and not call.compaction.summarized


@EXAMPLES
@given(scenarios(min_requests=3), settings(strategies=("summarize",)), st.booleans())
def test_a_summary_sits_right_after_the_first_request_and_folds_the_earlier_one(scenario, chosen, _):
    result = replay(scenario, chosen)
    folded = set()
    for call in result.calls:
        summaries = [i for i, block in enumerate(call.blocks) if block.state == "summary"]
        assert summaries in ([], [1])
        if summaries:
            summary = call.blocks[1]
            assert summary.role == "system"
            assert folded <= set(summary.replaces), "a later summary folds the earlier one in"
            folded = set(summary.replaces)


def _role(scenario, message_id):
    """A script message's role; summaries ("s1"…) are not in the script and are system messages."""
    return next((item.role for item in scenario.script if item.id == message_id), "system")


def _units(scenario, counter, message_id):
    return counter.measure(next(item.message for item in scenario.script if item.id == message_id))


def _last_exchange(scenario, dropped):
    """The ids of the last whole exchange removed: from its request (or the first reply after
    the first request) to the end of what was dropped."""
    ids = list(dropped)
    start = max((i for i, block_id in enumerate(ids) if _role(scenario, block_id) == "user"), default=0)
    return ids[start:]
