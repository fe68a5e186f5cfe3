"""Every call explains itself: the narration that applies to what the learner set, else a
sentence generated from what happened. Each narration condition is checked on the lesson
that uses it, with the setting the lesson advises, and the generated sentences say what the
replay did, in every language."""

from __future__ import annotations

import re

import pytest

from tests.test_i18n import FRENCH_PLAIN_SPACE
from webapp.core.inputs.library import SCENARIOS_DIR
from webapp.core.engine.replay import replay
from webapp.core.inputs.lessons import parse_scenario_toml
from webapp.core.inputs.library import load_library
from webapp.core.inputs.scenarios import ScenarioError
from webapp.core.settings import parse_settings
from webapp.core.engine.strategy_catalog import STRATEGIES
from webapp.core.analysis.story import explain, facts_state, narration_at

LIBRARY = load_library(SCENARIOS_DIR)


def play(scenario_id: str, **changes):
    scenario = LIBRARY.get(scenario_id)
    return replay(scenario, parse_settings(changes, scenario.settings))


def said(scenario_id: str, number: int, **changes) -> str:
    note = narration_at(play(scenario_id, **changes), number)
    return note.text("en") if note else ""


@pytest.fixture
def words(app):
    """The web layer's wording of a call, in a language."""
    from webapp.web.story import call_story

    def word(result, number, lang="en"):
        with app.test_request_context(f"/?lang={lang}"):
            return call_story(result, number, lang)

    return word


# --- Narration conditions ------------------------------------------------------------------


def test_bike_shop_with_strategy_none_no_longer_speaks_of_a_hammer():
    assert "hammer" in said("bike-shop", 6) and "before the hammer" in said("bike-shop", 6)
    none = said("bike-shop", 6, strategy="none")
    assert "With no compaction" in none and "before the hammer" not in none
    assert "no hammer" in said("bike-shop", 5, strategy="none")
    assert not any(call.overflow for call in play("bike-shop", strategy="none").calls)  # what the text claims


def test_summary_forgets_answers_keep_facts():
    assert "is gone" in said("summary-forgets", 7)
    kept = play("summary-forgets", keep_facts=True)
    assert facts_state(kept, 7) == "kept" and facts_state(play("summary-forgets"), 7) == "lost"
    assert "still in the request" in said("summary-forgets", 7, keep_facts=True)
    assert "is gone" not in said("summary-forgets", 7, keep_facts=True)
    assert "word for word" in said("summary-forgets", 6, keep_facts=True)
    assert "is not in it" in said("summary-forgets", 6)
    # keep facts means nothing to a strategy that never summarizes: the default story is told.
    assert "is not in it" in said("summary-forgets", 6, keep_facts=True, strategy="drop") or narration_at(
        play("summary-forgets", keep_facts=True, strategy="drop"), 6
    ).when.always


def test_real_window_answers_the_true_window():
    assert "Gulp" in said("real-window", 6)
    right = said("real-window", 6, window=8000, model_window=0)
    assert "no Gulp" in right and "rejects" not in right


def test_tool_pairs_answers_drop():
    assert "naive-drop removes" in said("tool-pairs", 5)
    for strategy in ("drop", "truncate-drop"):
        assert "the API accepts the request" in said("tool-pairs", 5, strategy=strategy)


def test_reply_room_answers_a_lower_line():
    assert "Put the threshold back" in said("reply-room", 5)
    assert "now has room" in said("reply-room", 5, threshold=0.8)


def test_chars_lie_answers_the_real_tokenizer():
    assert "Switch the counter" in said("chars-lie", 6)
    for counter in ("o200k_base", "cl100k_base"):
        assert "fell on time" in said("chars-lie", 6, counter=counter)
        assert "fell at call 6" in said("chars-lie", 7, counter=counter)
    assert "one call too late" in said("chars-lie", 7)


def test_long_haul_overflow_condition():
    assert "Gulp" in said("long-haul", 21, strategy="none")
    assert "would stop fitting" in said("long-haul", 21)
    assert "nothing happens" in said("long-haul", 18, strategy="none")


SMALL = '''
id = "small"
title = "Small"
lesson = "A lesson."
system = "You answer."
[settings]
window = 200
keep = 1
preview = 0
[[tools]]
name = "look"
[[facts]]
text = "K-42"
needed_from_call = 3
{narration}
[[chat]]
user = "First question, please look it up."
[[chat]]
tool_calls = [{{ id = "c1", name = "look" }}]
[[chat]]
tool = "c1"
content = "K-42 {padding}"
[[chat]]
assistant = "Found it."
[[chat]]
user = "And now?"
'''


def small(narration: str, padding: int = 600):
    return parse_scenario_toml(SMALL.format(narration=narration, padding="ab " * (padding // 3)), "small.toml")


@pytest.mark.parametrize(
    "when, settings, shown",
    [
        ('{ strategy = "none" }', {"strategy": "none"}, True),
        ('{ strategy = ["drop", "none"] }', {}, False),
        ('{ counter = "o200k_base" }', {"counter": "o200k_base"}, True),
        ('{ counter = "o200k_base" }', {}, False),
        ("{ keep_facts = true }", {"keep_facts": True}, True),
        ("{ keep_facts = true }", {}, False),
        ("{ compacted = true }", {}, True),
        ("{ compacted = true }", {"strategy": "none"}, False),
        ("{ overflow = true }", {"strategy": "none"}, True),
        ("{ overflow = true }", {}, False),
        ('{ facts = "lost" }', {}, True),
        ('{ facts = "kept" }', {}, False),
        ('{ facts = "kept" }', {"strategy": "none"}, True),
        ("{ invalid_request = false }", {}, True),
        ("{ no_room_for_reply = false }", {}, True),
        ('{ strategy = "truncate-drop", compacted = true, facts = "lost" }', {}, True),
        ('{ strategy = "truncate-drop", compacted = true, facts = "kept" }', {}, False),
    ],
)
def test_each_condition_selects_its_narration(when, settings, shown):
    scenario = small(f'[[narration]]\ncall = 3\nwhen = {when}\ntext = "conditional"\n[[narration]]\ncall = 3\ntext = "default"\n')
    result = replay(scenario, parse_settings(settings, scenario.settings))
    assert narration_at(result, 3).text() == ("conditional" if shown else "default")


def test_a_narration_without_default_is_silent_when_its_condition_fails():
    scenario = small('[[narration]]\ncall = 3\nwhen = { strategy = "none" }\ntext = "only with none"\n')
    assert narration_at(replay(scenario), 3) is None
    assert narration_at(replay(scenario, parse_settings({"strategy": "none"}, scenario.settings)), 3).text() == "only with none"


def test_no_room_for_reply_and_invalid_request_conditions_on_the_lessons():
    room = play("reply-room")
    assert room.calls[4].no_room_for_reply and narration_at(room, 5).when.always
    pairs = play("tool-pairs")
    assert not pairs.calls[4].valid and narration_at(pairs, 5).when.always


@pytest.mark.parametrize(
    "narration, where, what",
    [
        ('[[narration]]\ncall = 3\ntext = "a"\n[[narration]]\ncall = 3\nwhen = { strategy = "none" }\ntext = "b"\n', "narration[1]", "never shown"),
        ('[[narration]]\ncall = 3\nwhen = { strategy = "nope" }\ntext = "a"\n', "narration[0].when.strategy", "'nope'"),
        ('[[narration]]\ncall = 3\nwhen = { counter = [] }\ntext = "a"\n', "narration[0].when.counter", "an empty list"),
        ('[[narration]]\ncall = 3\nwhen = { facts = "maybe" }\ntext = "a"\n', "narration[0].when.facts", "kept"),
        ('[[narration]]\ncall = 3\nwhen = { weather = "rain" }\ntext = "a"\n', "narration[0].when.weather", "unknown field"),
    ],
)
def test_bad_conditions_are_named(narration, where, what):
    with pytest.raises(ScenarioError) as error:
        small(narration)
    assert any(place == where and what in problem for place, problem in error.value.problems), error.value.problems


# --- Generated explanations ----------------------------------------------------------------


def cases():
    for scenario_id in LIBRARY.scenarios:
        for strategy in sorted(STRATEGIES):
            yield scenario_id, {"strategy": strategy}
        yield scenario_id, {"strategy": "summarize", "keep_facts": True}
        yield scenario_id, {"counter": "o200k_base"}


@pytest.mark.parametrize("scenario_id, settings", list(cases()))
def test_every_call_explains_itself(words, scenario_id, settings):
    result = play(scenario_id, **settings)
    for call in result.calls:
        story = words(result, call.number)
        assert story["text"].strip(), (scenario_id, settings, call.number)
        if story["author"]:
            continue
        text = story["text"]
        # Never filler: it gives this request's size, where the line stands, and the bill.
        assert f"{call.tokens:,} tokens" in text and "red line" in text and "SENT" in text, text
        if call.overflow:
            assert "Gulp" in text
        if not call.valid:
            assert "An API rejects" in text
        if call.compaction and call.compaction.changed:
            assert "the hammer" in text and "crossed the red line" in text


def test_silent_calls_of_the_issue_now_say_what_happened(words):
    def arrived(result, number, kind, tool=""):
        """The tokens of what entered the history, as the replay measured them."""
        found = next(a for a in explain(result, number).arrived if a.kind == kind and a.tool == tool)
        return f"{found.tokens:,}"

    bike = play("bike-shop")
    text = words(bike, 3)["text"]
    assert not words(bike, 3)["author"]
    assert f"a user request ({arrived(bike, 3, 'request')} tokens)" in text and "stays under the red line (6,400)" in text
    receipt = play("receipt")
    assert f"the result of search_hotels ({arrived(receipt, 2, 'tool_result', 'search_hotels')} tokens)" in words(receipt, 2)["text"]
    assert "the result of pay_booking" in words(receipt, 4)["text"]
    real = play("real-window")
    assert "red line (102,400)" in words(real, 3)["text"]


def test_the_explanation_follows_the_hammer_and_the_facts():
    result = play("receipt")
    story = explain(result, 9)
    assert {(s.action, s.tool, s.fetch_once) for s in story.struck} == {("truncated", "pay_booking", True)}
    changes = {change.fact.text: change.change for change in story.facts}
    assert changes == {"PAY-7F3K-22A9": "needed", "PAY-Q8M1-5XDT": "missing"}
    summary = explain(play("summary-forgets"), 6)
    assert {s.action for s in summary.struck} == {"summarized"} and summary.summarizer_input > 0
    assert [(c.fact.text, c.change) for c in summary.facts] == [("QX7P2M", "lost")]
    assert all(a.tool for a in summary.arrived if a.kind == "tool_result")  # the summary is no arrival
    kept = explain(play("summary-forgets", keep_facts=True), 6)
    assert [(c.fact.text, c.change) for c in kept.facts] == [("QX7P2M", "kept")]
    first = explain(play("bike-shop"), 1)
    assert first.first and first.sent_previous_call is None and [a.kind for a in first.arrived] == ["request"]


@pytest.mark.parametrize("lang", ["fr", "zh"])
def test_explanations_in_the_page_language(words, lang):
    for scenario_id in LIBRARY.scenarios:
        result = play(scenario_id)
        for call in result.calls:
            story = words(result, call.number, lang)
            text = story["text"]
            assert "SENT grew" not in text and "red line" not in text, (scenario_id, call.number, text)
            if lang == "zh":
                # Chinese sentences end with 。, never with an ASCII full stop.
                assert not re.search(r"[\u4e00-\u9fff）]\.(\s|$)", text), text
                assert text.rstrip().endswith(("。", "！", "？", "）")), text
            if lang == "fr":
                # Numbers never break across lines: babel groups them with a narrow no-break space.
                assert not re.search(r"\d \d{3}", text), text


def test_fact_labels_speak_the_page_language(client):
    page = client.get("/play/bike-shop?call=5&lang=fr").get_data(as_text=True)
    assert "numéro de commande" in page and "order number" not in page
    page = client.get("/play/bike-shop?call=5&lang=zh").get_data(as_text=True)
    assert "订单号" in page


def test_the_page_shows_the_narration_that_applies(client):
    page = client.get("/play/summary-forgets?call=7&keep_facts=1").get_data(as_text=True)
    assert "Keep facts did its job" in page and "and it is gone" not in page
    assert "you changed them" not in page  # the story was written for these settings
    silent = client.get("/play/bike-shop?call=3").get_data(as_text=True)
    assert 'class="narration generated"' in silent and "stays under the red line" in silent


@pytest.mark.parametrize("scenario_id", sorted(LIBRARY.scenarios))
def test_lesson_texts_follow_each_languages_typography(scenario_id):
    scenario = LIBRARY.get(scenario_id)
    texts = {lang: [scenario.title.get(lang, ""), scenario.lesson.get(lang, "")] for lang in ("fr", "zh")}
    for notes in scenario.narration.values():
        for note in notes:
            for lang in ("fr", "zh"):
                texts[lang].append(note.texts.get(lang, ""))
    for text in texts["fr"]:
        # "8 000" or "80 %" with a plain space can break across two lines.
        assert not re.search(r"\d \d{3}\b|\d %", text), text
        assert not FRENCH_PLAIN_SPACE.search(text), text
    for text in texts["zh"]:
        assert not re.search(r"[\u4e00-\u9fff][.](\s|$)", text), text


def test_chinese_call_summary_puts_no_space_after_its_full_stops(client):
    page = client.get("/play/tool-pairs?call=5&lang=zh").get_data(as_text=True)
    summary = re.search(r'id="call-summary"[^>]*>([^<]*)', page).group(1)
    assert "压缩" in summary and "。 " not in summary
