"""The coding-agent lesson's figures at its key calls: one request and 34 tool calls, where
KEEP in requests cannot help, clearing old results can, clearing too eagerly loses the seed or
keeps breaking the cache, and "clear at least" trades tokens for cache hits."""

from __future__ import annotations

import re

import pytest

from webapp.core.analysis.compare import compare
from webapp.core.inputs.library import open_scenario
from webapp.core.engine.replay import replay
from webapp.core.settings import parse_settings


@pytest.fixture(scope="module")
def lesson():
    return open_scenario("coding-agent")


def run(lesson, **changes):
    return replay(lesson, parse_settings(changes, lesson.settings))


def test_one_request_and_over_thirty_tool_calls(lesson):
    roles = [item.role for item in lesson.script]
    assert roles.count("user") == 1
    assert roles.count("tool") >= 30
    assert lesson.call_count == 35
    assert [fact.needed_from_call for fact in lesson.facts] == [24]


def test_keep_in_requests_cannot_help(lesson):
    result = run(lesson, keep_unit="requests", keep=2)
    assert all(call.compaction is None or not call.compaction.changed for call in result.calls)
    assert [call.number for call in result.calls if call.overflow] == list(range(26, 36))
    assert any("the only request is the first message" in warning for warning in result.warnings)


def test_clearing_old_results_keeps_the_run_under_the_line_and_the_seed(lesson):
    result = run(lesson)
    clearings = {call.number: call.compaction for call in result.calls if call.compaction and call.compaction.changed}
    assert sorted(clearings) == [22, 26, 34]
    first = clearings[22]
    assert (first.tokens_before, first.tokens_after, len(first.cleared), first.cleared_tokens) == (20_515, 15_454, 5, 5_061)
    assert (len(clearings[26].cleared), clearings[26].cleared_tokens) == (9, 5_572)
    assert all(c.cleared_tokens >= 5_000 for c in clearings.values())
    assert not any(call.overflow for call in result.calls)
    ci_log = result.calls[-1].blocks[2]
    assert ci_log.message["tool_call_id"] == "call_01" and ci_log.state == "original"
    assert all(status.present for call in result.calls[23:] for status in call.facts)
    assert result.calls[-1].sent_total == 442_881


def test_clearing_every_tool_loses_the_seed_at_call_24(lesson):
    result = run(lesson, exclude_tools="")
    assert result.calls[21].blocks[2].state == "cleared"
    lost = [call.number for call in result.calls if any(status.missing_when_needed for status in call.facts)]
    assert lost[0] == 24


def test_clearing_a_little_at_a_time_keeps_breaking_the_cache(lesson):
    eager = compare(lesson, parse_settings({"clear_at_least": 0}, lesson.settings)).column("clear-tool-results")
    patient = compare(lesson).column("clear-tool-results")
    assert (eager.compactions, patient.compactions) == (9, 3)
    assert eager.cached_total < patient.cached_total
    assert eager.bill.cost > patient.bill.cost


def test_clear_at_least_holds_back_then_clears_a_lot_or_overflows(lesson):
    held = run(lesson, clear_at_least=15_000)
    assert [call.number for call in held.calls if call.compaction and call.compaction.held_back] == [22, 23, 24]
    clearing = held.calls[24].compaction
    assert clearing.changed and len(clearing.cleared) == 20
    assert not any(call.overflow for call in held.calls)
    too_much = run(lesson, clear_at_least=20_000)
    assert [call.number for call in too_much.calls if call.overflow][0] == 26


def test_the_verdict_names_clear_tool_results(lesson):
    comparison = compare(lesson)
    assert comparison.verdict.winner == "clear-tool-results"
    winner = comparison.column("clear-tool-results")
    assert winner.sound and not winner.overflows
    assert comparison.column("none").overflows == 10
    assert comparison.column("truncate").facts_lost


def test_the_play_page_offers_keep_units_and_clearing_settings(client):
    page = client.get("/play/coding-agent?call=22").get_data(as_text=True)
    assert '<option value="tool_results" selected>tool results</option>' in page
    assert 'name="clear_at_least" type="number"' in page and 'value="5000"' in page
    assert 'name="exclude_tools" type="text"' in page and 'value="read_ci_log"' in page
    assert "It cleared 5 old tool results (5,061 tokens)." in page
    assert "cleared to a placeholder (was" in page
    assert "KEEP, the last 3 tool results and what follows them: never compacted" in page
    stuck = client.get("/play/coding-agent?call=26&keep_unit=requests&keep=2").get_data(as_text=True)
    assert "the only request is the first message" in stuck
    assert "KEEP, the last 2 requests: never compacted" in stuck
    zh = client.get("/play/coding-agent?call=22&lang=zh").get_data(as_text=True)
    assert "KEEP，最近 3 个工具结果及其后的内容：从不压缩" in zh
    other = client.get("/play/bike-shop").get_data(as_text=True)
    assert 'type="hidden" name="clear_at_least"' in other, "carried along, not shown, with another strategy"


def test_the_comparison_panel_names_clear_tool_results_in_every_language(client):
    for lang, text in (("en", "Cheapest safe choice: clear-tool-results"), ("fr", "clear-tool-results"), ("zh", "clear-tool-results")):
        page = client.get(f"/compare/coding-agent?lang={lang}").get_data(as_text=True)
        assert text in re.sub(r"<[^>]+>", "", page)
        assert 'name="clear_at_least" type="number"' in page
    data = client.get("/compare/coding-agent.json").get_json()
    assert data["verdict"]["winner"] == "clear-tool-results"
    column = next(row for row in data["strategies"] if row["key"] == "clear-tool-results")
    assert column["overflows"] == 0 and column["cleared_tokens"] > 0
    edits = client.get("/play/coding-agent.json?call=22").get_json()
    assert edits["current"]["applied_edits"] == [
        {"type": "clear_tool_uses_20250919", "cleared_tool_uses": 5, "cleared_input_tokens": 5061}
    ]
