"""Agent runs: one request, many tool calls. KEEP counted in tool results or turns,
clear-tool-results (Anthropic's context editing) and summaries inside one request, checked on
generated runs; the warnings that fit the case; the settings as code."""

from __future__ import annotations

import copy
import json
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings as hypothesis_settings
from hypothesis import strategies as st

from webapp.core.engine.history import CLEARED_MARK, keep_start
from webapp.core.engine.replay import replay
from webapp.core.model import tool_pair_problems
from webapp.core.model import Fact, Scenario, ScriptMessage
from webapp.core.settings import Settings, parse_settings
from webapp.core.output.snippets import python_clearing, settings_code
from webapp.core.counting.tokens import call_names, get_counter

from .generators import RESULT, TEXT
from .seed_reference import load_seed_compact, seed_requests

EXAMPLES = hypothesis_settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOOL_NAMES = ("read_file", "run_tests", "search", "read_ci_log")


@st.composite
def agent_runs(draw):
    """One request (sometimes two), then 3 to 25 tool turns of 1-3 parallel calls, usually a
    final answer. The first result holds the task's key fact."""
    chat = [{"role": "user", "content": draw(TEXT)}]
    for request in range(draw(st.integers(1, 2))):
        if request:
            chat.append({"role": "user", "content": draw(TEXT)})
        for turn in range(draw(st.integers(3, 25))):
            calls = [
                {
                    "id": f"call_{request}_{turn}_{i}",
                    "type": "function",
                    "function": {"name": draw(st.sampled_from(TOOL_NAMES)), "arguments": json.dumps({"q": draw(TEXT)})},
                }
                for i in range(draw(st.integers(1, 3)))
            ]
            chat.append({"role": "assistant", "content": draw(st.none() | TEXT), "tool_calls": calls})
            for call in calls:
                content = draw(RESULT)
                if request == 0 and turn == 0:
                    content = "seed 3105082 " + content
                chat.append({"role": "tool", "tool_call_id": call["id"], "content": content})
        if draw(st.booleans()):
            chat.append({"role": "assistant", "content": draw(TEXT)})
    return run_scenario(chat, [Fact("3105082", "seed", 3)])


def run_scenario(chat: list[dict], facts: list[Fact]) -> Scenario:
    return Scenario(
        id="agent-run",
        title={"en": "agent run"},
        lesson={"en": ""},
        prefix=({"role": "system", "content": "You are a coding agent."},),
        tools=[],
        script=[ScriptMessage(f"m{i + 1}", message) for i, message in enumerate(chat)],
        facts=facts,
    )


def agent_settings(strategies=("clear-tool-results",)):
    return st.builds(
        Settings,
        strategy=st.sampled_from(strategies),
        window=st.integers(400, 30_000),
        threshold=st.sampled_from([0.5, 0.8, 1.0]),
        keep=st.integers(1, 5),
        keep_unit=st.sampled_from(["requests", "tool_results", "turns"]),
        counter=st.sampled_from(["estimate", "o200k_base"]),
        clear_at_least=st.sampled_from([0, 50, 500, 3000]),
        exclude_tools=st.sampled_from(["", "read_ci_log", "read_ci_log,search"]),
        clear_tool_inputs=st.booleans(),
        keep_facts=st.booleans(),
    )


@EXAMPLES
@given(agent_runs(), agent_settings(("clear-tool-results", "summarize", "truncate", "truncate-drop")))
def test_requests_stay_valid_and_keep_is_never_touched(scenario, chosen):
    result = replay(scenario, chosen)
    for call in result.calls:
        assert tool_pair_problems(call.request(scenario.prefix)[len(scenario.prefix):]) == []
        assert call.blocks[0].id == "m1" and call.blocks[0].state == "original", "the first request stays"
        if call.compaction is None:
            continue
        before = result.history_before(call.number)
        protected = before[keep_start(before, chosen.keep, chosen.keep_unit) or len(before):]
        assert list(call.blocks[len(call.blocks) - len(protected):]) == protected, "KEEP came through as it was"
        if keep_start(before, chosen.keep, chosen.keep_unit) == 0:
            assert not call.compaction.changed, "KEEP covers the whole history"


@EXAMPLES
@given(agent_runs(), agent_settings())
def test_clearing_stops_once_it_fits_and_cleared_at_least_m(scenario, chosen):
    result = replay(scenario, chosen)
    counter = get_counter(chosen.counter)
    for call in result.calls:
        c = call.compaction
        if c is None:
            continue
        assert c.tokens_before > chosen.limit
        if c.held_back:
            assert not c.changed and c.held_back < chosen.clear_at_least
            continue
        if not c.cleared:
            continue
        assert c.cleared_tokens >= chosen.clear_at_least, "it clears at least M or nothing"
        assert c.tokens_before - c.tokens_after == c.cleared_tokens
        before = {block.id: block for block in result.history_before(call.number)}
        sent = {block.id: block for block in call.blocks}
        boundary = keep_start(list(call.blocks), chosen.keep, chosen.keep_unit)
        names = call_names(block.message for block in call.blocks)
        still_clearable = [
            block
            for block in call.blocks[:boundary]
            if block.role == "tool" and block.state != "cleared" and names.get(block.message.get("tool_call_id")) not in chosen.excluded_tools
        ]
        if still_clearable:
            # It stopped early, so it fits and has cleared M; without its last clearing it
            # would not have both.
            assert call.tokens <= chosen.limit
            if not chosen.clear_tool_inputs:
                last = c.cleared[-1]
                saved = before[last].units - sent[last].units
                units = sum(block.units for block in call.blocks) + saved
                undone = counter.request_tokens(result.floor_units + units)
                assert undone > chosen.limit or c.cleared_tokens - (undone - call.tokens) < chosen.clear_at_least


@EXAMPLES
@given(agent_runs(), agent_settings())
def test_excluded_tools_are_never_cleared_and_placeholders_keep_ids(scenario, chosen):
    result = replay(scenario, chosen)
    names = call_names(item.message for item in _blocks_of_script(scenario))
    for call in result.calls:
        for block in call.blocks:
            if block.state == "cleared":
                assert block.role == "tool" and block.text.startswith(CLEARED_MARK)
                assert names[block.message["tool_call_id"]] not in chosen.excluded_tools
            if block.role == "tool" and names[block.message["tool_call_id"]] in chosen.excluded_tools:
                assert block.state == "original"


@EXAMPLES
@given(agent_runs(), agent_settings(("summarize",)))
def test_a_summary_inside_one_request_folds_whole_turns(scenario, chosen):
    result = replay(scenario, chosen)
    for call in result.calls:
        summaries = [i for i, block in enumerate(call.blocks) if block.state == "summary"]
        assert summaries in ([], [1])
        if summaries:
            # After the summary comes a reply or a request, never a result without its call.
            assert call.blocks[2].role in ("assistant", "user") if len(call.blocks) > 2 else True
            if chosen.keep_facts and any(b.id in call.blocks[1].replaces for b in _blocks_of_script(scenario)[:4]):
                assert "3105082" in call.blocks[1].text


def _blocks_of_script(scenario):
    from webapp.core.engine.history import Block

    return [Block(item.id, item.message, 0, 1) for item in scenario.script]


# --- Worked cases --------------------------------------------------------------------------


def one_request_run(results: int = 12, size: int = 6000, tool: str = "read_file") -> Scenario:
    chat: list[dict] = [{"role": "user", "content": "Fix the failing build."}]
    for number in range(results):
        call_id = f"c{number}"
        name = "read_ci_log" if number == 0 else tool
        chat.append({"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps({"n": number})}}]})
        chat.append({"role": "tool", "tool_call_id": call_id, "content": f"result {number} " + "lorem ipsum " * (size // 12)})
    chat.append({"role": "assistant", "content": "Done."})
    return run_scenario(chat, [])


def test_keep_in_tool_results_starts_at_the_call_and_counts_parallel_results():
    from webapp.core.engine.history import Block

    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "tool_calls": [{"id": "a"}, {"id": "b"}]},
        {"role": "tool", "tool_call_id": "a", "content": "1"},
        {"role": "tool", "tool_call_id": "b", "content": "2"},
        {"role": "assistant", "tool_calls": [{"id": "c"}]},
        {"role": "tool", "tool_call_id": "c", "content": "3"},
    ]
    history = [Block(f"m{i}", m, 1, 1) for i, m in enumerate(messages)]
    assert keep_start(history, 1, "tool_results") == 4
    assert keep_start(history, 2, "tool_results") == 1, "the second-last result's call holds two calls"
    assert keep_start(history, 4, "tool_results") == 0
    assert keep_start(history, 1, "turns") == 4
    assert keep_start(history, 2, "turns") == 1
    assert keep_start(history, 1, "requests") == 0


def test_one_request_keep_in_requests_warns_and_keep_in_tool_results_fits():
    scenario = one_request_run()
    stuck = replay(scenario, parse_settings({"strategy": "clear-tool-results", "window": 6000, "keep": 2, "counter": "o200k_base"}))
    assert all(call.compaction is None or not call.compaction.changed for call in stuck.calls)
    assert any(call.overflow for call in stuck.calls)
    assert any("the only request is the first message" in warning and "Keep the last 3 tool results" in warning for warning in stuck.warnings)
    assert not any("last 2 requests" in warning or "lower keep" in warning for warning in stuck.warnings)
    freed = replay(scenario, parse_settings({"strategy": "clear-tool-results", "window": 6000, "keep": 2, "keep_unit": "tool_results", "counter": "o200k_base"}))
    assert not any(call.overflow for call in freed.calls)
    assert not freed.warnings


def test_keep_1_is_never_told_to_lower_keep():
    scenario = one_request_run(results=3, size=6000)
    result = replay(scenario, parse_settings({"strategy": "clear-tool-results", "window": 1000, "keep": 1, "keep_unit": "tool_results", "counter": "o200k_base"}))
    cannot_fit = [w for w in result.warnings if "cannot fit" in w]
    assert cannot_fit and "the last tool result" in cannot_fit[0]
    assert "lower keep" not in " ".join(result.warnings)
    requests = replay(scenario, parse_settings({"strategy": "drop", "window": 1000, "keep": 1, "counter": "o200k_base"}))
    assert "the last request" in requests.warnings[0] and "lower keep" not in requests.warnings[0]


def test_too_wide_a_keep_is_told_how_low_to_go():
    scenario = one_request_run(results=4, size=3000)
    result = replay(scenario, parse_settings({"strategy": "clear-tool-results", "window": 2500, "keep": 5, "keep_unit": "tool_results", "counter": "o200k_base"}))
    assert any("covers every tool result" in w and "Lower keep to" in w for w in result.warnings)


def test_clear_at_least_holds_back_then_clears_a_lot_at_once():
    scenario = one_request_run(results=14)
    base = {"strategy": "clear-tool-results", "window": 9000, "keep": 2, "keep_unit": "tool_results", "counter": "o200k_base", "exclude_tools": "read_ci_log"}
    eager = replay(scenario, parse_settings({**base, "clear_at_least": 0}))
    patient = replay(scenario, parse_settings({**base, "clear_at_least": 3000}))
    eager_edits = [c.compaction for c in eager.calls if c.compaction and c.compaction.cleared]
    patient_edits = [c.compaction for c in patient.calls if c.compaction and c.compaction.cleared]
    assert len(patient_edits) < len(eager_edits)
    assert all(edit.cleared_tokens >= 3000 for edit in patient_edits)
    # Past what it could ever clear, it clears nothing, says why once, and the request overflows.
    stubborn = replay(scenario, parse_settings({**base, "clear_at_least": 50_000}))
    assert not any(c.compaction and c.compaction.changed for c in stubborn.calls)
    assert any(c.overflow for c in stubborn.calls)
    assert sum('fewer than "clear at least" (50,000)' in w for w in stubborn.warnings) == 1
    # The excluded CI log (the first result) is never cleared.
    for result in (eager, patient):
        assert result.calls[-1].blocks[2].state == "original"


def test_clear_tool_inputs_empties_the_arguments_of_cleared_calls_only():
    scenario = one_request_run(results=10)
    result = replay(scenario, parse_settings({"strategy": "clear-tool-results", "window": 6000, "keep": 2, "keep_unit": "tool_results", "counter": "o200k_base", "clear_tool_inputs": True}))
    last = result.calls[-1]
    cleared = {block.message["tool_call_id"] for block in last.blocks if block.state == "cleared"}
    assert cleared
    for block in last.blocks:
        for call in block.message.get("tool_calls") or []:
            assert (call["function"]["arguments"] == "{}") == (call["id"] in cleared)
    assert any(c.compaction.inputs_cleared for c in result.calls if c.compaction)


def test_summarize_inside_one_request_keeps_the_first_message_and_the_fact():
    scenario = one_request_run(results=12)
    scenario.facts.append(Fact("result 0", "first result", 5))
    settings = {"strategy": "summarize", "window": 6000, "keep": 2, "keep_unit": "tool_results", "counter": "o200k_base"}
    forgetful = replay(scenario, parse_settings(settings))
    careful = replay(scenario, parse_settings({**settings, "keep_facts": True}))
    for result in (forgetful, careful):
        assert not any(call.overflow for call in result.calls)
        assert any(call.compaction and call.compaction.summarized for call in result.calls)
        assert result.calls[-1].blocks[0].message["content"] == "Fix the failing build."
        assert result.calls[-1].compaction is None or result.calls[-1].compaction.summarizer_input > 0
    assert [fate.present for fate in careful.calls[-1].facts] == [True]
    assert [fate.present for fate in forgetful.calls[-1].facts] == [False]


# --- Settings as code ------------------------------------------------------------------------


@pytest.mark.needs_seed
@hypothesis_settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(agent_runs(), agent_settings())
def test_the_python_clearing_loop_sends_what_the_playground_sends(scenario, chosen):
    """The pasted loop, with the seed's estimate_tokens and the seed's agent loop, sends the
    very requests the engine sends with the estimate counter."""
    chosen = chosen.model_copy(update={"counter": "estimate"})
    seed = load_seed_compact(system=scenario.system)
    namespace = {"copy": copy, "estimate_tokens": seed.estimate_tokens}
    exec(python_clearing(chosen), namespace)
    loop = SimpleNamespace(compact=namespace["compact"], SYSTEM=scenario.system)
    expected = seed_requests([item.message for item in scenario.script], loop)
    assert [call.request(scenario.prefix) for call in replay(scenario, chosen).calls] == expected


def test_clear_tool_results_settings_as_code():
    chosen = parse_settings(
        {"strategy": "clear-tool-results", "window": 24000, "keep": 3, "keep_unit": "tool_results", "clear_at_least": 5000, "exclude_tools": "read_ci_log,search"}
    )
    anthropic, loop = settings_code(chosen)
    namespace: dict = {}
    exec(anthropic.code, namespace)
    assert namespace["context_management"] == {
        "edits": [
            {
                "type": "clear_tool_uses_20250919",
                "trigger": {"type": "input_tokens", "value": 19200},
                "keep": {"type": "tool_uses", "value": 3},
                "clear_at_least": {"type": "input_tokens", "value": 5000},
                "exclude_tools": ["read_ci_log", "search"],
                "clear_tool_inputs": False,
            }
        ]
    }
    assert (anthropic.kind, loop.kind) == ("anthropic", "seed")
    exec(loop.code, namespace)
    assert namespace["WINDOW"]["keep"] == 3 and namespace["WINDOW"]["exclude_tools"] == ["read_ci_log", "search"]
    requests = parse_settings({"strategy": "clear-tool-results", "keep": 2})
    assert "the playground counts KEEP in requests" in settings_code(requests)[0].code
    other = settings_code(parse_settings({"strategy": "truncate", "keep_unit": "turns"}))
    assert [snippet.kind for snippet in other] == ["astorlm", "seed"]
    assert "the playground counts the last 2 turns" in other[0].code


def test_a_summary_inside_one_request_never_uses_the_whole_requests_digest():
    scenario = one_request_run(results=12)
    first = scenario.script[0]
    scenario.script[0] = ScriptMessage(first.id, first.message, digest="The build was fixed and every test passed.")
    result = replay(scenario, parse_settings({"strategy": "summarize", "window": 6000, "keep": 2, "keep_unit": "tool_results", "counter": "o200k_base"}))
    summaries = [block.text for call in result.calls for block in call.blocks if block.state == "summary"]
    assert summaries and not any("every test passed" in text for text in summaries)
    assert all("tools used: read" in text for text in summaries)


def test_a_result_cleared_at_the_call_it_enters_was_whole_before_that_call():
    """A tool result that arrives just before a new request is outside KEEP at once: the
    history before that call's compaction holds it as the tool wrote it (the well animates
    from it and the story measures what clearing saved)."""
    big = "log line " * 2000
    scenario = Scenario(
        id="late-result",
        title={"en": "late result"},
        lesson={"en": ""},
        prefix=({"role": "system", "content": "You are a coding agent."},),
        tools=[],
        script=[
            ScriptMessage(id="m1", message={"role": "user", "content": "Run the tests."}),
            ScriptMessage(id="m2", message={"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "run_tests", "arguments": "{}"}}]}),
            ScriptMessage(id="m3", message={"role": "tool", "tool_call_id": "c1", "content": big}),
            ScriptMessage(id="m4", message={"role": "user", "content": "Now fix the first failure."}),
            ScriptMessage(id="m5", message={"role": "assistant", "content": "Done."}),
        ],
    )
    chosen = parse_settings({"strategy": "clear-tool-results", "window": "4000", "keep": "1", "clear_at_least": "0"})
    result = replay(scenario, chosen)
    call = result.calls[1]
    assert call.compaction is not None and call.compaction.cleared == ("m3",)
    before = {block.id: block for block in result.history_before(2)}
    assert before["m3"].state == "original" and before["m3"].message["content"] == big
    assert before["m3"].units > {block.id: block for block in call.blocks}["m3"].units
