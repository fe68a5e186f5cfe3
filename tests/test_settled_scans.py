"""The levels that turn old tool results into notes (truncate, clear, mask) start each scan
where the last one settled (engine/compaction.py `Context.scan_start`), so that a long chat is
not rescanned at every call. That must send exactly what a scan from the first message sends,
pinned messages and their report included."""

from __future__ import annotations

from contextlib import contextmanager

from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

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
    clear_at_least=st.sampled_from([0, 200, 5000]),
    pins=st.lists(st.integers(1, 40), max_size=3),
)
def test_a_scan_from_where_the_last_settled_sends_what_a_whole_scan_sends(lesson, strategy, line, keep, clear_at_least, pins):
    scenario = scenario_library().scenarios[lesson]
    ids = [item.id for item in scenario.script]
    pin = ",".join(ids[number % len(ids)] for number in pins)
    settings = scenario.settings.model_copy(
        update={"strategy": strategy, "threshold": line / 100, "keep": keep, "alert": 0.0, "target": 0.0, "clear_at_least": clear_at_least, "pin": pin}
    )
    settled = replay(scenario, settings)
    with scans_from_the_start():
        whole = replay(scenario, settings)
    assert [figures(call) for call in settled.calls] == [figures(call) for call in whole.calls]
