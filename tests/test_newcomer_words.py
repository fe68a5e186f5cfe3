"""What a newcomer trips on (issue 33): a lost fact looks lost, not unseen; the values used
again are values a person would name; the words name what they speak of, and the narration
says what the well draws. Through the pages, in en, fr and zh."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from webapp.core.analysis.references import YEAR, occurs, scenario_references, values_in
from webapp.core.inputs.library import open_scenario

LANGS = ("en", "fr", "zh")
LESSONS = sorted(path.stem for path in (Path(__file__).parent.parent / "scenarios").glob("*.toml"))


def words(client, url: str) -> str:
    """The page's text, tags and runs of spaces taken out."""
    body = html.unescape(client.get(url).get_data(as_text=True))
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body))


def facts_panel(client, url: str) -> str:
    body = client.get(url).get_data(as_text=True)
    return body[body.index('<div id="facts"') : body.index('id="detail"')]


def fact_items(client, url: str) -> list[str]:
    """The critical facts' list items of the play page's facts panel, as written."""
    panel = facts_panel(client, url)
    start = panel.index('<ul class="facts">')
    listed = panel[start : panel.index("</ul>", start)]
    return re.findall(r'<li class="fact [^"]*">.*?</li>', listed, flags=re.S)


LOST = {"en": "lost at call 6", "fr": "perdu à l'appel 6", "zh": "在第 6 次调用时丢失"}
UNSEEN = {"en": "not in the chat yet", "fr": "pas encore dans la conversation", "zh": "还没出现在对话里"}


@pytest.mark.parametrize("lang", LANGS)
def test_a_fact_lost_by_the_summary_is_drawn_and_worded_lost_from_that_call_and_not_before(client, lang):
    # summary-forgets: the booking reference enters at call 2; the summary at call 6 drops it;
    # call 7 needs it.
    first = fact_items(client, f"/play/summary-forgets?call=1&lang={lang}")[0]
    assert 'class="fact waiting"' in first and "✗" not in first and UNSEEN[lang] in html.unescape(first)
    held = fact_items(client, f"/play/summary-forgets?call=5&lang={lang}")[0]
    assert 'class="fact present"' in held
    for call in (6, 7):
        lost = html.unescape(fact_items(client, f"/play/summary-forgets?call={call}&lang={lang}")[0])
        assert 'class="fact lost"' in lost and "✗" in lost and LOST[lang] in lost, call
        assert UNSEEN[lang] not in lost
    kept = fact_items(client, f"/play/summary-forgets?call=6&keep_facts=1&lang={lang}")[0]
    assert 'class="fact present"' in kept  # told to keep it, the summary does


def test_the_harnesses_lesson_marks_the_early_fact_lost_where_the_narration_says_so(client):
    assert 'class="fact present"' in fact_items(client, "/play/harnesses?call=9")[0]
    lost = html.unescape(fact_items(client, "/play/harnesses?call=10")[0])
    assert 'class="fact lost"' in lost and "lost at call 10; needed from call 26" in lost
    narration = words(client, "/play/harnesses?call=10")
    assert "Critical fact lost at this call: req-7f3c91ae" in narration


def test_the_json_twin_and_the_comparison_say_where_the_fact_went(client):
    statuses = [client.get(f"/play/summary-forgets.json?call={call}").get_json()["current"]["facts"][0] for call in (1, 5, 6, 7)]
    assert [status["lost_from"] for status in statuses] == [None, None, 6, 6]
    before = words(client, "/compare/summary-forgets?call=5")
    at = words(client, "/compare/summary-forgets?call=6")
    assert "lost at call 6" not in before and "lost at call 6 · missing when call 7 needs it" in at
    body = client.get("/compare/summary-forgets?call=6").get_data(as_text=True)
    every = body[body.index('id="columns"') :]  # every strategy in full, after the cards at a glance
    summarize = every[every.index('data-strategy="summarize"') :]
    facts = summarize[summarize.index('<ul class="facts">') :]
    assert facts.index("is-bad") < facts.index("</li>")  # the summarize column's fact is marked lost


def test_values_used_again_are_whole_values_no_year_no_pattern_piece_and_none_inside_a_fact():
    for name in LESSONS:
        scenario = open_scenario(name)
        found = scenario_references(scenario).items
        for reference in found:
            assert not YEAR.fullmatch(reference.value), (name, reference.value)
            assert not any(occurs(reference.value, fact.text) for fact in scenario.facts), (name, reference.value)
            for other in found:
                if other is not reference and occurs(reference.value, other.value):
                    # A piece of a longer value counts only where the longer one is not written.
                    assert not set(reference.uses) & set(other.uses), (name, reference.value, other.value)
    bike = [reference.value for reference in scenario_references(open_scenario("bike-shop")).items]
    assert "1Z 4X7 119 03 9902 1180" in bike and "4X7" not in bike and "9902" not in bike
    assert "lng,lat" not in [reference.value for reference in scenario_references(open_scenario("chars-lie")).items]
    assert "0-9a-f" not in dict(values_in('Each id matches "[0-9a-f]{40}" and [A-Za-z0-9_-]+ only.'))


def test_the_facts_panel_says_new_at_a_values_first_call_and_again_later(client):
    panel = html.unescape(facts_panel(client, "/play/bike-shop?call=6"))
    assert "RMA-20931" in panel and "1Z 4X7 119 03 9902 1180" in panel
    assert "<code>4X7</code>" not in panel and "<code>9902</code>" not in panel
    assert "RMA-20931</code>: new in this request, and this call's reply writes it" in panel
    assert "uses it again (brought in at call 6)" not in panel
    later = html.unescape(facts_panel(client, "/play/bike-shop?call=4"))
    assert "this call uses it again (brought in at call 2)" in later  # the wheel's name, from call 2


def pasted_with_values(count: int) -> str:
    """A pasted chat whose first tool result brings in `count` order numbers the reply names."""
    orders = [f"ORD-{4471 + index * 13}" for index in range(count)]
    messages = [
        {"role": "system", "content": "You are a support bot."},
        {"role": "user", "content": "Which of my orders are late?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "orders", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"late": orders})},
        {"role": "assistant", "content": "Late: " + ", ".join(orders) + "."},
    ]
    tool = {"type": "function", "function": {"name": "orders", "description": "The user's orders.", "parameters": {"type": "object", "properties": {}}}}
    return json.dumps({"messages": messages, "tools": [tool]})


@pytest.mark.parametrize("lang", LANGS)
def test_a_long_list_of_values_is_on_the_page_folded_not_sent_to_the_json(client, lang):
    location = client.post("/transcripts", data={"transcript": pasted_with_values(9)}).headers["Location"]
    panel = html.unescape(facts_panel(client, f"{location}?call=2&lang={lang}"))
    for index in range(9):
        assert f"ORD-{4471 + index * 13}" in panel  # each one readable here
    folded = panel[panel.index("<details>") :]
    assert {"en": "and 3 more", "fr": "et 3 de plus", "zh": "还有 3 个"}[lang] in folded
    assert "JSON" not in panel


WORDS_GONE = {
    "en": ("the astorlm library", "the reference compact()", "level 7", "pays for itself at once", "unsafe by design", "vs previous request", "the JSON lists each"),
    "fr": ("la bibliothèque astorlm", "compact() de référence", "niveau 7", "rentabilisée tout de suite", "dangereuse par construction", "le JSON les liste"),
    "zh": ("astorlm 库", "参考实现 compact()", "第 7 级", "立刻回本", "设计上就不安全", "JSON 里逐个列出"),
}
PAGES = (
    "/play/real-window?call=1", "/play/bike-shop?call=5", "/play/tool-pairs?call=5&strategy=drop", "/play/workshop-manuals?call=9",
    "/glossary", "/compare/bike-shop", "/compare/coding-agent",
)


@pytest.mark.parametrize("lang", LANGS)
def test_the_old_words_are_gone_from_the_pages_a_newcomer_reads(client, lang):
    for url in PAGES:
        page = words(client, url + ("&" if "?" in url else "?") + f"lang={lang}")
        for phrase in WORDS_GONE[lang]:
            assert phrase not in page, (url, phrase)
        if url.startswith("/play/"):  # the narration says a sum under a ten-thousandth of a dollar plainly
            assert "0.0000" not in page and "0,0000" not in page, url


INTRODUCED = {
    "en": ("astorlm (the TypeScript agent library of the Compaction pattern page's examples)", "a course on how AI agents work", "context-management manual"),
    "fr": ("astorlm (la bibliothèque d'agents en TypeScript des exemples de la page du pattern Compaction)", "un parcours sur le fonctionnement des agents d'IA", "manuel de gestion du contexte"),
    "zh": ("astorlm（Compaction 模式页面示例里用的 TypeScript 智能体库）", "一条讲解 AI 智能体工作原理的模式路线", "上下文管理手册"),
}


@pytest.mark.parametrize("lang", LANGS)
def test_the_library_the_seeds_code_and_the_manual_are_introduced_where_first_named(client, lang):
    library, course, manual = INTRODUCED[lang]
    assert library in words(client, f"/play/real-window?call=1&lang={lang}")
    assert course in words(client, f"/glossary?lang={lang}")
    # Lesson 10 names the manual at its first call.
    assert manual in words(client, f"/play/workshop-manuals?call=1&lang={lang}")


DRAWN = {
    "en": ("128,000 deep", "far above its top"),
    "fr": ("profond de 128\u202f000", "loin au-dessus de son bord"),
    "zh": ("深 128,000", "远在井口之上"),
}


@pytest.mark.parametrize("lang", LANGS)
def test_lesson_2_says_the_well_is_drawn_for_the_told_window_with_the_line_inside_it(client, lang):
    said, contradicted = DRAWN[lang]
    body = client.get(f"/play/real-window?call=1&lang={lang}").get_data(as_text=True)
    narration = html.unescape(body[body.index('<div id="narration"') : body.index("</div>", body.index('<div id="narration"'))])
    assert said in narration and contradicted not in narration
    assert 'class="threshold in-well"' in body  # the red line is drawn inside the well


def test_the_cache_paragraph_is_folded_unless_the_lesson_is_about_the_cache(client):
    lesson_1 = client.get("/play/bike-shop?call=5").get_data(as_text=True)
    assert '<details class="narration-cost"><summary>What it costs the prompt cache</summary>' in lesson_1
    about_cache = client.get("/play/coding-agent?call=22").get_data(as_text=True)
    assert '<details class="narration-cost" open><summary>' in about_cache


def test_tiny_sums_and_a_last_call_compaction_are_said_plainly(client):
    tiny = words(client, "/play/summary-forgets?call=6")
    assert "This call costs what the whole request would have, to less than $0.0001." in tiny and "$0.0000" not in tiny
    last = words(client, "/play/tool-pairs?call=5&strategy=drop")
    assert "No call comes after this one to send fewer tokens: it costs no more than the whole request, so there is nothing to pay back." in last
    assert "pays for itself at once" not in last


def test_the_bill_and_the_drawing_say_what_their_figures_count(client):
    bill = words(client, "/play/bike-shop?call=5")
    assert "vs previous call" in bill and "vs previous request" not in bill
    long_haul = client.get("/play/long-haul?call=40").get_data(as_text=True)
    said = re.sub(r"\s+", " ", html.unescape(long_haul))
    assert "dropped 10 old messages (455 tokens" in said  # this call's compaction, in the narration
    assert "✕ 25 dropped" in said and "1,264 tokens, so far" in said  # the trace: every message dropped since call 1


@pytest.mark.parametrize("lang", LANGS)
def test_a_harness_that_refuses_the_line_is_badged_as_such_not_unsafe_by_design(client, lang):
    body = client.get(f"/compare/bike-shop?lang={lang}").get_data(as_text=True)
    column = body[body.index('data-strategy="anthropic-compaction"') :]
    badges = html.unescape(column[column.index('class="column__badges"') : column.index("</p>", column.index('class="column__badges"'))])
    assert {"en": "its product refuses this line", "fr": "son produit refuse cette ligne", "zh": "它的产品不接受这条线"}[lang] in badges


GLOSSARY = {"en": ("✗ lost: an earlier request held it", "· not in the chat yet"), "fr": ("✗ perdu : une requête précédente le contenait", "· pas encore dans la conversation"), "zh": ("✗ 丢失：之前的请求里有它", "· 还没出现在对话里")}


@pytest.mark.parametrize("lang", LANGS)
def test_the_glossary_tells_a_lost_fact_from_one_not_yet_seen(client, lang):
    page = words(client, f"/glossary?lang={lang}")
    for said in GLOSSARY[lang]:
        assert said in page
