"""A sweep's replays start from "none"'s at the call where their strategy first acts
(engine/replay.py `replay_from`): every figure must be the one a whole replay gives."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

from webapp.core.engine.pitfalls import REFUSED_LINES
from webapp.core.engine.replay import first_action, replay, replay_from
from webapp.core.inputs.library import scenario_library
from webapp.core.engine.strategy_catalog import STRATEGIES

LESSONS = sorted(scenario_library().scenarios)


def figures(call):
    """What a call sends and what the comparison and the sweep count on it."""
    return (
        call.number, call.request_number, call.tokens, call.provider_tokens, call.blocks, call.reply, call.compaction,
        call.overflow, call.no_room_for_reply, call.problems, call.facts, call.sent_total, call.summarizer_output_total,
        [event for event in call.events if event.kind != "warning"],
    )


@hypothesis_settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lesson=st.sampled_from(LESSONS),
    strategy=st.sampled_from([name for name in STRATEGIES if name != "none"]),
    line=st.integers(30, 100),
    keep=st.integers(1, 4),
)
def test_a_replay_from_nones_gives_every_figure_of_a_whole_replay(lesson, strategy, line, keep):
    scenario = scenario_library().scenarios[lesson]
    settings = scenario.settings.model_copy(update={"strategy": strategy, "threshold": line / 100, "keep": keep, "alert": 0.0, "target": 0.0})
    none = replay(scenario, settings.model_copy(update={"strategy": "none", "keep_facts": False}))
    whole, taken = replay(scenario, settings), replay_from(none, settings)
    assert [figures(call) for call in taken.calls] == [figures(call) for call in whole.calls]
    assert taken.settings == settings
    # The notices a verdict reads (a product refusing the line); the others are said once a
    # replay, and may be base's.
    assert refused(taken) == refused(whole)


def refused(result):
    return {message for message, _ in result.notices if message in REFUSED_LINES}


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_first_action_is_the_first_call_a_whole_replay_compacts(lesson):
    scenario = scenario_library().scenarios[lesson]
    none = replay(scenario, scenario.settings.model_copy(update={"strategy": "none", "keep_facts": False}))
    for strategy in STRATEGIES:
        settings = scenario.settings.model_copy(update={"strategy": strategy})
        tried = [call.number for call in replay(scenario, settings).calls if call.compaction is not None]
        assert first_action(none, settings) == (tried[0] if tried else None), strategy


def test_a_strategy_that_never_acts_is_nones_replay_under_its_own_settings():
    scenario = scenario_library().scenarios["real-window"]  # its longest request is under a tenth of the window
    none = replay(scenario, scenario.settings.model_copy(update={"strategy": "none"}))
    settings = scenario.settings.model_copy(update={"strategy": "drop", "threshold": 0.95})
    taken = replay_from(none, settings)
    assert first_action(none, settings) is None
    assert taken.calls == none.calls and taken.settings == settings and taken.notices == replay(scenario, settings).notices
