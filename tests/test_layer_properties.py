"""The manual's invariants on generated chats with layers and pinned messages: no strategy ever
changes a pinned message, every request stays valid, tokens by layer add up, and by-layer
follows the manual's order."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings as hypothesis_settings
from hypothesis import strategies as st

from webapp.core.analysis.layers import request_layers
from webapp.core.model import REQUEST_LAYERS
from webapp.core.engine.replay import replay
from webapp.core.model import tool_pair_problems
from webapp.core.engine.strategy_catalog import STRATEGIES
from webapp.core.settings import Settings

from .generators import layered_scenarios

EXAMPLES = hypothesis_settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PAIR_SAFE = tuple(name for name in STRATEGIES if name != "naive-drop")


def chosen_settings(strategies=tuple(STRATEGIES)):
    """Settings with an alert line and a target below the red line, or neither."""
    return st.builds(
        lambda strategy, window, threshold, keep, alert, target, unit, facts, preview: Settings(
            strategy=strategy,
            preview=preview,
            window=window,
            threshold=threshold,
            keep=keep,
            keep_unit=unit,
            alert=round(threshold * alert, 3),
            target=round(threshold * target, 3),
            keep_facts=facts,
        ),
        st.sampled_from(strategies),
        st.integers(300, 12_000),
        st.sampled_from([0.5, 0.8, 0.9, 1.0]),
        st.integers(1, 3),
        st.sampled_from([0, 0.85]),
        st.sampled_from([0, 0.5, 0.9]),
        st.sampled_from(["requests", "requests", "tool_results", "turns"]),
        st.booleans(),
        st.sampled_from([0, 150]),
    )


@EXAMPLES
@given(layered_scenarios(), chosen_settings())
def test_no_strategy_ever_changes_a_pinned_message(scenario, chosen):
    result = replay(scenario, chosen)
    written = {item.id: item.message for item in scenario.script}
    entered: list[str] = []
    position = 0
    script = scenario.script
    for call in result.calls:
        while position < len(script) and script[position].role != "assistant":
            entered.append(script[position].id)
            position += 1
        pinned_so_far = [message_id for message_id in entered if message_id in scenario.pinned]
        sent = {block.id: block for block in call.blocks}
        for message_id in pinned_so_far:
            assert message_id in sent, f"call {call.number}: pinned {message_id} is gone ({chosen.strategy})"
            assert sent[message_id].message == written[message_id] and sent[message_id].state == "original"
        assert [status.id for status in call.pinned] == pinned_so_far
        assert all(status.present and status.unchanged for status in call.pinned)
        if call.compaction is not None and call.compaction.pinned_kept:
            assert call.tokens > chosen.aim and set(call.compaction.pinned_kept) <= scenario.pinned
        if position < len(script):  # the reply enters the history after its call
            entered.append(script[position].id)
            position += 1


@EXAMPLES
@given(layered_scenarios(), chosen_settings(PAIR_SAFE))
def test_pairs_are_never_split_and_layers_add_up(scenario, chosen):
    result = replay(scenario, chosen)
    for call in result.calls:
        request = call.request(scenario.prefix)
        assert tool_pair_problems(request[len(scenario.prefix):]) == []
        assert call.valid
        layers = request_layers(result, call)
        assert list(layers) == list(REQUEST_LAYERS) and sum(layers.values()) == call.tokens
        assert min(layers.values()) >= 0
        warned = any(event.kind == "warning" for event in call.events)
        assert warned == (chosen.alert_line is not None and chosen.alert_line < call.tokens <= chosen.limit)


@EXAMPLES
@given(layered_scenarios(min_requests=2), chosen_settings(("by-layer",)))
def test_by_layer_follows_the_manuals_order(scenario, chosen):
    result = replay(scenario, chosen)
    pinned = scenario.pinned
    for call in result.calls:
        compaction = call.compaction
        if compaction is None:
            continue
        assert compaction.tokens_before > chosen.limit
        blocks = list(call.blocks)
        boundary = call.keep_start
        groups_in_keep = {block.group for block in blocks[boundary:] if block.layer == "retrieval"}
        history_touched = compaction.truncated or compaction.dropped
        if history_touched:
            # No history was cut while a retrieved document outside KEEP could still be compressed.
            for block in blocks[:boundary]:
                if block.layer == "retrieval" and block.id not in pinned and block.group not in groups_in_keep:
                    assert block.state != "original", f"call {call.number}: {block.id} left whole while history was cut"
        # A retrieval group is compressed whole, never a part of it.
        compressed = set(compaction.compressed)
        for block in blocks:
            if block.layer == "retrieval" and block.id not in pinned and block.group:
                members = [b for b in blocks if b.group == block.group and b.id not in pinned]
                if compressed & {b.id for b in members}:
                    assert all(b.state == "truncated" for b in members)
        # Long-term memory is never compressed.
        assert all(block.state == "original" for block in blocks if block.layer == "memory")
        # The levels run in the manual's order, and the notice only when they were not enough.
        order = ["retrieval", "truncate", "drop", "oldest", "notice"]
        assert list(compaction.levels) == sorted(compaction.levels, key=order.index)
        assert (compaction.notice is not None) == (call.tokens > chosen.aim)
        assert [event.kind for event in call.events].count("notice") == (compaction.notice is not None)
        notices = [block for block in blocks if block.state == "notice"]
        assert len(notices) <= 1 and all(blocks.index(block) == 1 for block in notices)
