"""naive-drop is broken on purpose; these tests pin down how, and that it is the only one."""

from __future__ import annotations

from hypothesis import given, settings as hypothesis_settings, strategies as st

from webapp.core.engine.replay import replay
from webapp.core.inputs.lessons import parse_scenario_toml
from webapp.core.settings import parse_settings
from webapp.core.engine.strategy_catalog import STRATEGIES


def chat(requests: list[list[int]]) -> str:
    """A scenario whose requests each call a tool once per size given, in one parallel reply."""
    lines = ['id = "made"', 'title = "made"', 'lesson = "made"', 'system = "sys"',
             '[[tools]]', 'name = "look"']
    n = 0
    for r, sizes in enumerate(requests):
        lines += ["[[chat]]", f'user = "request {r} ' + "u" * 40 + '"']
        if sizes:
            calls = ", ".join(f'{{ id = "c{n + i}", name = "look" }}' for i in range(len(sizes)))
            lines += ["[[chat]]", 'assistant = "looking"', f"tool_calls = [{calls}]"]
            for i, size in enumerate(sizes):
                lines += ["[[chat]]", f'tool = "c{n + i}"', f'content = "{"x" * size}"']
            n += len(sizes)
        lines += ["[[chat]]", f'assistant = "answer {r}"']
    return "\n".join(lines)


requests_strategy = st.lists(st.lists(st.integers(50, 3000), max_size=3), min_size=1, max_size=6)


@hypothesis_settings(max_examples=60, deadline=None)
@given(requests_strategy, st.integers(1, 3))
def test_only_naive_drop_ever_sends_an_invalid_request(requests, keep):
    scenario = parse_scenario_toml(chat(requests), "made.toml")
    for strategy in STRATEGIES:
        result = replay(scenario, parse_settings({"strategy": strategy, "window": 1000, "keep": keep}))
        if strategy != "naive-drop":
            assert all(call.valid for call in result.calls), strategy


@hypothesis_settings(max_examples=60, deadline=None)
@given(requests_strategy, st.integers(1, 3))
def test_naive_drop_removes_messages_oldest_first_and_never_keep_or_the_first_request(requests, keep):
    scenario = parse_scenario_toml(chat(requests), "made.toml")
    result = replay(scenario, parse_settings({"strategy": "naive-drop", "window": 1000, "keep": keep}))
    order = [item.id for item in scenario.script]
    for call in result.calls:
        if call.compaction is None:
            continue
        assert call.blocks[0].id == "m1"
        kept = [block.id for block in call.blocks]
        assert kept == sorted(kept, key=order.index)
        for block in call.blocks[call.keep_start :]:
            assert block.id not in call.compaction.dropped


def test_naive_drop_leaves_a_result_without_its_call():
    scenario = parse_scenario_toml(chat([[2000, 2000], [10], [10]]), "made.toml")
    result = replay(scenario, parse_settings({"strategy": "naive-drop", "window": 1000}))
    broken = [call for call in result.calls if not call.valid]
    assert broken, "the naive dropper should have split a call from its result"
    assert any("has no matching call" in problem for problem in broken[0].problems)
    # Indexes name the request as sent, system prompt first.
    index = int(broken[0].problems[0].split("[")[1].split("]")[0])
    request = broken[0].request(scenario.prefix)
    assert request[index]["role"] == "tool"
