"""`pinned_kept` says compaction stopped above its aim because what it would cut next is
pinned. It must name only pinned messages the strategy would have cut: truncate and
clear-tool-results cut tool results only, so a pinned user message was never in their way."""

from __future__ import annotations

import pytest

from webapp.core.inputs.library import open_scenario
from webapp.core.engine.replay import replay
from webapp.core.settings import parse_settings

RULE = "m3"  # the workshop's pinned safety rule, a user message


@pytest.fixture(scope="module")
def lesson():
    return open_scenario("workshop-manuals")


@pytest.mark.parametrize("strategy", ["truncate", "clear-tool-results"])
def test_a_pinned_message_the_strategy_never_cuts_is_not_said_to_stop_it(lesson, strategy):
    result = replay(lesson, parse_settings({"strategy": strategy}, lesson.settings))
    call = result.calls[9]
    assert call.compaction is not None and call.tokens > result.settings.aim  # stopped above its aim
    assert call.compaction.pinned_kept == ()
    assert "pinned_kept" not in {event.kind for event in call.events}


def test_a_pinned_message_in_the_way_is_named(lesson):
    result = replay(lesson, parse_settings({"strategy": "drop", "window": 1400}, lesson.settings))
    stopped = [call for call in result.calls if call.compaction and call.compaction.pinned_kept]
    assert stopped and all(call.compaction.pinned_kept == (RULE,) for call in stopped)
