"""Each built-in scenario teaches one thing: these tests check that the engine really shows it,
at the call its narration names, with the scenario's own default settings."""

from __future__ import annotations

import pytest

from webapp.core.inputs.library import SCENARIOS_DIR
from webapp.core.engine.replay import replay
from webapp.core.inputs.library import load_library
from webapp.core.settings import parse_settings
from webapp.core.engine.strategy_catalog import STRATEGIES

LIBRARY = load_library(SCENARIOS_DIR)


def play(scenario_id: str, **changes):
    scenario = LIBRARY.get(scenario_id)
    return replay(scenario, parse_settings(changes, scenario.settings))


def first(calls, predicate):
    return next((call.number for call in calls if predicate(call)), None)


def test_every_scenario_loads_with_lesson_facts_and_narration():
    assert LIBRARY.errors == []
    expected = ["bike-shop", "real-window", "tool-pairs", "receipt", "summary-forgets", "reply-room", "chars-lie", "long-haul", "coding-agent", "workshop-manuals", "harnesses", "local-model"]
    assert list(LIBRARY.scenarios) == expected  # the home page's order, from each file's `order`
    for scenario in LIBRARY.scenarios.values():
        assert scenario.facts, scenario.id
        assert scenario.narration, scenario.id
        for language in ("en", "fr", "zh"):
            assert scenario.lesson.get(language), (scenario.id, language)
            for call, notes in scenario.narration.items():
                for note in notes:
                    assert note.texts.get(language), (scenario.id, call, language)
            for fact in scenario.facts:
                assert fact.labels.get(language), (scenario.id, fact.text, language)


@pytest.mark.parametrize("scenario_id", sorted(LIBRARY.scenarios))
@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_every_scenario_replays_under_every_strategy(scenario_id, strategy):
    scenario = LIBRARY.get(scenario_id)
    result = play(scenario_id, strategy=strategy)
    assert len(result.calls) == scenario.call_count
    assert result.calls[-1].sent_total == sum(call.tokens for call in result.calls) + sum(
        call.compaction.summarizer_input for call in result.calls if call.compaction
    )


def test_real_window_overflows_when_the_compactor_assumes_128k():
    result = play("real-window")
    assert result.settings.window == 128_000 and result.settings.real_window == 8_000
    assert all(call.compaction is None for call in result.calls)  # its line, 102,400, is never reached
    assert first(result.calls, lambda call: call.overflow) == 6
    assert result.calls[5].provider_tokens > 8_000
    assert any(event.kind == "overflow" for event in result.calls[5].events)

    right = play("real-window", window=8000, model_window=0)
    assert not any(call.overflow for call in right.calls)
    assert right.calls[5].compaction is not None and right.calls[5].compaction.truncated


def test_naive_drop_splits_the_parallel_calls_and_the_request_is_invalid():
    naive = play("tool-pairs")
    assert naive.settings.strategy == "naive-drop"
    call = naive.calls[4]
    assert call.compaction.dropped == ("m2",)  # the assistant message holding the three calls
    assert not call.valid
    assert len(call.problems) == 3 and all("has no matching call" in p for p in call.problems)
    assert any(event.kind == "invalid_request" for event in call.events)
    assert all(c.valid for c in naive.calls[:4])

    for strategy in ("drop", "truncate-drop", "summarize", "truncate"):
        assert all(c.valid for c in play("tool-pairs", strategy=strategy).calls), strategy


def test_truncation_destroys_the_receipt_that_the_answer_did_not_repeat():
    result = play("receipt")
    last = result.calls[-1]
    assert last.number == 9
    destroyed = {block for call in result.calls if call.compaction for block in call.compaction.destroyed}
    assert destroyed == {"m7", "m11"}  # both pay_booking results, which cannot be fetched twice
    status = {f.fact.label: f.present for f in last.facts}
    assert status == {"deposit receipt id": True, "transfer receipt id": False}
    assert last.facts[1].missing_when_needed


def test_summary_without_keep_facts_loses_the_booking_reference():
    forgetful = play("summary-forgets")
    assert forgetful.calls[5].compaction.summarized  # call 6: the first exchange is folded
    assert [f.present for f in forgetful.calls[6].facts] == [False]
    summary = next(block for block in forgetful.calls[6].blocks if block.state == "summary")
    assert "QX7P2M" not in summary.text

    careful = play("summary-forgets", keep_facts=True)
    assert [f.present for f in careful.calls[6].facts] == [True]
    summary = next(block for block in careful.calls[6].blocks if block.state == "summary")
    assert "QX7P2M" in summary.text


def test_a_line_too_close_to_the_window_leaves_no_room_for_the_reply():
    tight = play("reply-room")
    assert tight.settings.threshold == 0.98
    last = tight.calls[-1]
    assert last.compaction is None and not last.overflow
    assert last.no_room_for_reply
    assert [e.kind for e in last.events if e.kind == "no_room_for_reply"] == ["no_room_for_reply"]
    assert not any(call.no_room_for_reply for call in tight.calls[:-1])

    roomy = play("reply-room", threshold=0.8)
    assert roomy.calls[-1].compaction is not None
    assert not any(call.no_room_for_reply or call.overflow for call in roomy.calls)


def test_chars_over_four_is_far_from_the_real_count_and_the_hammer_falls_too_late():
    estimate = play("chars-lie")
    assert estimate.settings.counter == "estimate"
    call6 = estimate.calls[5]
    # The estimate thinks call 6 is under the line; the provider's count is over the window.
    assert call6.tokens <= estimate.settings.limit and call6.compaction is None
    assert call6.provider_tokens > estimate.settings.real_window and call6.overflow
    assert call6.provider_tokens / call6.tokens > 1.3
    assert first(estimate.calls, lambda call: call.compaction is not None) == 7

    exact = play("chars-lie", counter="o200k_base")
    assert first(exact.calls, lambda call: call.compaction is not None) == 6
    assert not any(call.overflow for call in exact.calls)


def test_the_long_haul_bill_is_quadratic_without_compaction_and_linear_with_it():
    scenario = LIBRARY.get("long-haul")
    assert scenario.call_count >= 60
    none = play("long-haul", strategy="none")
    compacted = play("long-haul")
    n = len(none.calls)
    # Without compaction each call costs more than the one before: the increments of SENT grow
    # steadily, so the last quarter of the calls costs several times the first quarter.
    quarter = n // 4
    assert sum(c.tokens for c in none.calls[-quarter:]) > 4 * sum(c.tokens for c in none.calls[:quarter])
    assert all(b.tokens >= a.tokens for a, b in zip(none.calls, none.calls[1:]))
    # With compaction every request stays under the line once it has been reached: SENT grows
    # by at most the line per call, a straight line.
    limit = compacted.settings.limit
    start = first(compacted.calls, lambda call: call.compaction is not None)
    assert start is not None and start < n / 2
    assert all(call.tokens <= limit for call in compacted.calls[start - 1 :])
    assert not any(call.overflow for call in compacted.calls)
    assert none.calls[-1].sent_total > 2 * compacted.calls[-1].sent_total
