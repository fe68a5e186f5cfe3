"""The levels that turn old tool results into notes (truncate, clear, mask) start each scan
where the last one settled (engine/compaction.py `Context.scan_start`), so that a long chat is
not rescanned at every call. That must send exactly what a scan from the first message sends,
pinned messages and their report included."""

from __future__ import annotations

from contextlib import contextmanager

from hypothesis import HealthCheck, example, given, settings as hypothesis_settings, strategies as st

from webapp.core.engine.calls import script_call_names
from webapp.core.engine.compaction import Context
from webapp.core.engine.replay import replay
from webapp.core.inputs.library import scenario_library

from .test_replay_from import figures

LESSONS = sorted(scenario_library().scenarios)


@contextmanager
def scans_from_the_start():
    """Within it, every scan starts from the first message, as before scans settled."""
    settled_start = Context.scan_start
    Context.scan_start = lambda self, level, history: 0
    try:
        yield
    finally:
        Context.scan_start = settled_start
SCANNING = ["truncate", "truncate-drop", "by-layer", "clear-tool-results", "openhands-masking"]


@hypothesis_settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lesson=st.sampled_from(LESSONS),
    strategy=st.sampled_from(SCANNING),
    line=st.integers(30, 100),
    keep=st.integers(1, 3),
    keep_unit=st.sampled_from(["requests", "tool_results", "turns"]),
    clear_at_least=st.sampled_from([0, 200, 5000]),
    clear_inputs=st.booleans(),
    never_cleared=st.integers(0, 3),  # how many of the chat's tools, in name order, are excluded
    pins=st.lists(st.integers(1, 40), max_size=3),
)
# A pinned tool result passed over: the scans after it must still report it (truncate, mask);
# a clear held back for too few tokens must look again at what it would have cleared.
@example(lesson="bike-shop", strategy="truncate", line=30, keep=1, keep_unit="requests", clear_at_least=0, clear_inputs=False, never_cleared=0, pins=[3])
@example(lesson="long-haul", strategy="openhands-masking", line=30, keep=1, keep_unit="requests", clear_at_least=0, clear_inputs=False, never_cleared=0, pins=[3])
@example(lesson="bike-shop", strategy="clear-tool-results", line=30, keep=1, keep_unit="requests", clear_at_least=5000, clear_inputs=False, never_cleared=0, pins=[])
@example(lesson="long-haul", strategy="clear-tool-results", line=30, keep=1, keep_unit="tool_results", clear_at_least=200, clear_inputs=True, never_cleared=1, pins=[3])
def test_a_scan_from_where_the_last_settled_sends_what_a_whole_scan_sends(
    lesson, strategy, line, keep, keep_unit, clear_at_least, clear_inputs, never_cleared, pins
):
    scenario = scenario_library().scenarios[lesson]
    ids = [item.id for item in scenario.script]
    tools = sorted(set(script_call_names(scenario).values()))
    settings = scenario.settings.model_copy(
        update={
            "strategy": strategy,
            "threshold": line / 100,
            "keep": keep,
            "keep_unit": keep_unit,
            "alert": 0.0,
            "target": 0.0,
            "clear_at_least": clear_at_least,
            "clear_tool_inputs": clear_inputs,
            "exclude_tools": ",".join(tools[:never_cleared]),
            "pin": ",".join(ids[(number - 1) % len(ids)] for number in pins),
        }
    )
    settled = replay(scenario, settings)
    with scans_from_the_start():
        whole = replay(scenario, settings)
    assert [figures(call) for call in settled.calls] == [figures(call) for call in whole.calls]
    assert settled.notices == whole.notices
