"""The workshop lesson's narration against the figures the page shows for the same call: a
sentence whose figure the page contradicts teaches the wrong thing."""

from __future__ import annotations

import pytest

from webapp.core.inputs.library import open_scenario
from webapp.core.engine.replay import replay
from webapp.core.settings import parse_settings


@pytest.fixture(scope="module")
def lesson():
    return open_scenario("workshop-manuals")


@pytest.fixture
def story(client):
    """The story the play page's JSON twin tells at a call, with these settings in its URL."""

    def told(number, **changes):
        query = "".join(f"&{name}={value}" for name, value in changes.items())
        answer = client.get(f"/play/workshop-manuals.json?call={number}{query}")
        assert answer.status_code == 200
        return answer.get_json()["story"]["text"]

    return told


def test_call_3_counts_the_words_of_its_question(lesson, story):
    question = next(item for item in lesson.script if item.id == "m5").message["content"]
    assert len(question.split()) == 11
    assert "a question of eleven words" in story(3)


def test_call_4_at_the_window_it_suggests_tells_what_happened_there(story):
    """The narration invites the learner to set the window to 1,400; there the request is
    compacted to 1,382 tokens, and the story must say so, not the 1,434 of the lesson's window."""
    assert "1,434" in story(4)
    there = story(4, window=1400)
    assert "1,434" not in there.split("crossed")[-1] and "1,382" in there


def test_call_9_warns_for_every_strategy_above_the_alert_line(lesson, story):
    for strategy in ("truncate", "truncate-drop", "summarize", "naive-drop", "clear-tool-results", "by-layer"):
        result = replay(lesson, parse_settings({"strategy": strategy}, lesson.settings))
        assert "warning" in {event.kind for event in result.calls[8].events}, strategy
        assert "alert line (2,400)" in story(9, strategy=strategy), strategy


def test_call_10_quotes_the_metrics_panel_as_it_reads(client):
    """The narration points at the metrics: its share of the window is the panel's figure."""
    page = client.get("/play/workshop-manuals.json?call=10").get_json()
    assert page["metrics"]["context_utilization_pct"] == 83.8
    assert "83.8% of the window" in page["story"]["text"]


def test_the_story_names_a_pinned_message_in_the_learners_words(story):
    """At the window call 4 suggests, the pinned rule is what stops compaction: the story says
    which message in the words the facts panel uses, not its internal id."""
    there = story(4, window=1400)
    assert "(message 3 of the chat)" in there and "(m3)" not in there


def test_at_another_window_the_later_calls_tell_their_own_figures(story):
    """Having set the window to 1,400 as call 4 suggests, the learner steps on: call 8's
    sentence of the lesson's window ("2,711 tokens: over the red line (2,700)") would contradict
    the page, whose line is at 1,260; the generated story reads the page's figures."""
    assert "over the red line (2,700)" in story(8)
    there = story(8, window=1400)
    assert "2,700" not in there and "(1,260)" in there


def test_a_narration_that_reads_the_replay_still_answers_a_change_of_settings(story):
    """`when = { strategy = "truncate-drop", facts = "lost" }` says what happened, so it holds
    whatever settings bring it about (here, unpinning the rule)."""
    assert "R-2291 is no longer in the request" in story(10, strategy="truncate-drop", pin="-m3")


def test_with_the_rule_unpinned_call_2_does_not_say_it_is_pinned(story):
    assert "The message is pinned" in story(2)
    assert "The message is pinned" not in story(2, pin="-m3")
