"""The seed's story, told by the bike shop under its default settings."""

from __future__ import annotations

import pytest

from webapp.core.inputs.library import open_scenario
from webapp.core.engine.replay import replay
from webapp.core.settings import parse_settings


@pytest.fixture(scope="module")
def bike_shop():
    return open_scenario("bike-shop")


@pytest.mark.parametrize("counter", ["estimate", "o200k_base", "cl100k_base"])
def test_the_hammer_first_falls_when_the_third_request_enters(bike_shop, counter):
    result = replay(bike_shop, parse_settings({"counter": counter}, bike_shop.settings))
    third_request_first_call = next(c for c in result.calls if c.request_number == 3)
    for call in result.calls:
        if call.number < third_request_first_call.number:
            assert call.compaction is None, f"call {call.number} compacted too early"
    compaction = third_request_first_call.compaction
    assert compaction is not None and compaction.levels == ("truncate",)
    oldest_tool_result = next(item.id for item in bike_shop.script if item.role == "tool")
    assert compaction.truncated == (oldest_tool_result,), "only the oldest tool result is shrunk"
    shrunk = next(b for b in third_request_first_call.blocks if b.id == oldest_tool_result)
    assert shrunk.text.startswith("[Truncated to save context: ")
    events = [e.kind for e in third_request_first_call.events]
    assert events.index("user_message") < events.index("compact") < events.index("turn_start") < events.index("model_call")
    assert all(c.tokens <= result.settings.limit for c in result.calls)
    assert not result.warnings


def test_the_bill_grows_slower_after_the_hammer(bike_shop):
    truncated = replay(bike_shop)
    untouched = replay(bike_shop, parse_settings({"strategy": "none"}, bike_shop.settings))
    assert truncated.calls[-1].sent_total < untouched.calls[-1].sent_total
    growth_before = truncated.calls[3].tokens  # what call 4 added to SENT
    growth_after = truncated.calls[5].tokens
    assert growth_after < growth_before * 0.6


def test_facts_survive_every_strategy_here(bike_shop):
    for strategy in ("truncate", "drop", "truncate-drop", "summarize"):
        result = replay(bike_shop, parse_settings({"strategy": strategy}, bike_shop.settings))
        order = [status for status in result.calls[-1].facts if status.fact.text == "4471"][0]
        assert order.present, strategy
