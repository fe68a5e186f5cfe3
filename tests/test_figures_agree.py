"""Issue 24 (points 3, 5, 6, 8), through the Flask client: the comparison opens where the
strategies differ, the figures of one screen agree, the manual is introduced, and a pasted
chat starts from an example and meets the hammer."""

from __future__ import annotations

import html
import json
import re

import pytest

from webapp.core.inputs.formats import FORMATS
from webapp.core.inputs.transcripts import parse_transcript
from webapp.web.pages.transcripts import EXAMPLE_TEXT


def text_of(response) -> str:
    body = re.sub(r"<script.*?</script>", "", response.get_data(as_text=True), flags=re.S)
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body)))


def test_the_comparison_opens_at_its_last_call_and_that_link_is_the_short_one(client):
    bare, explicit = client.get("/compare/bike-shop"), client.get("/compare/bike-shop?call=6")
    assert bare.status_code == explicit.status_code == 200
    assert bare.get_data() == explicit.get_data()
    assert "Every strategy at call 6" in text_of(bare)
    page = bare.get_data(as_text=True)
    assert 'href="/compare/bike-shop?call=1"' in page  # « First names call 1, no longer the default
    assert 'href="/compare/bike-shop?call=5"' in page
    assert 'href="/compare/bike-shop?call=6"' not in page
    # The play page at call 1 opens the comparison at call 1, not at its default.
    assert 'id="open-compare" href="/compare/bike-shop?call=1"' in client.get("/play/bike-shop").get_data(as_text=True)
    assert 'id="open-compare" href="/compare/bike-shop"' in client.get("/play/bike-shop?call=6").get_data(as_text=True)
    assert client.get("/compare/bike-shop.json").get_json() == client.get("/compare/bike-shop.json?call=6").get_json()


def test_at_call_1_every_column_sends_the_same_request_and_at_the_last_they_differ(client):
    first = client.get("/compare/bike-shop.json?call=1").get_json()
    last = client.get("/compare/bike-shop.json").get_json()
    sizes = lambda data: {strategy["calls"][data["call"] - 1]["tokens"] for strategy in data["strategies"]}  # noqa: E731
    assert len(sizes(first)) == 1 and len(sizes(last)) > 1


def test_the_compare_form_keeps_call_1_when_a_setting_changes(client):
    page = client.get("/compare/bike-shop?call=1").get_data(as_text=True)
    form = page[page.index('id="compare-controls"') :]
    assert '<input type="hidden" name="call" value="1">' in form[: form.index("</form>")]


def test_the_phone_chart_has_a_legend_naming_every_line(client):
    page = client.get("/compare/bike-shop").get_data(as_text=True)
    narrow = page[page.index("compare-chart__svg--narrow") : page.index('class="chart-legend"')]
    assert "chart-series__label" not in narrow  # no end labels to run off a phone
    legend = page[page.index('class="chart-legend"') : page.index("</ul>", page.index('class="chart-legend"'))]
    assert legend.count("<li ") == narrow.count('class="chart-series chart-series--')
    for name in ("none", "drop", "naive-drop", "summarize + keep facts"):
        assert name in legend


def test_real_window_names_each_window_its_share_is_of(client):
    words = text_of(client.get("/play/real-window?call=6"))
    assert "7% of the 128,000-token window the compactor was told, 106.5% of the model's 8,000" in words
    assert "Share of the model's window used context_ utilization_ pct 106.5%" in words
    assert "7% of the window." not in words


@pytest.mark.parametrize(("lang", "note"), [("en", "not counted by the estimate"), ("fr", "non comptées par l'estimation"), ("zh", "估算（字符数 / 4）不计入")])
def test_tools_0_under_the_estimate_says_the_estimate_leaves_tools_out(client, lang, note):
    words = text_of(client.get(f"/play/bike-shop?call=1&lang={lang}"))
    assert note in words
    # With a real counter the tools are counted, and nothing is said.
    assert note not in text_of(client.get(f"/play/bike-shop?call=1&counter=o200k_base&lang={lang}"))


@pytest.mark.parametrize("lang", ["en", "fr", "zh"])
def test_reply_room_gives_the_replys_size_as_the_well_does(client, lang):
    words = text_of(client.get(f"/play/reply-room?call=5&lang={lang}"))
    assert re.search(r"618", words) and re.search(r"537", words)
    assert "600" not in words and "550" not in words
    assert "618 more" in words or lang != "en"


@pytest.mark.parametrize(("lang", "intro", "floor"), [("en", "A manual on managing an agent's context", "system prompt"), ("fr", "Un manuel sur la gestion du contexte", "prompt système"), ("zh", "一本讲在生产环境中管理智能体上下文的手册", "系统提示词")])
def test_the_manual_is_introduced_and_the_floor_label_is_translated(client, lang, intro, floor):
    glossary = client.get(f"/glossary?lang={lang}").get_data(as_text=True)
    assert 'id="manual"' in glossary and intro in html.unescape(glossary)
    assert glossary.index('id="manual"') < glossary.index('id="alert-line"')
    play = client.get(f"/play/bike-shop?lang={lang}").get_data(as_text=True)
    assert '/glossary' in play[play.index('id="metrics-title"') :][:600] and "#manual" in play
    assert floor in html.unescape(play)


def test_the_glossary_no_longer_puts_the_red_line_at_90_by_the_manual(client):
    words = text_of(client.get("/glossary"))
    assert "the red line, where compaction is required, at 90%" not in words
    assert "set the alert line to 0.8 and move the red line, 80% by default, up to 0.9" in words


def test_the_chinese_stepper_reads_as_a_count(client):
    words = text_of(client.get("/play/bike-shop?call=5&lang=zh"))
    assert "/ 6 ·" not in words and "（共 6 次）· 第 3 个请求（共 3 个）" in words


def test_the_transcript_form_offers_an_example_that_loads_without_javascript(client):
    page = client.get("/transcripts/new").get_data(as_text=True)
    assert 'id="transcript-example"' in page and EXAMPLE_TEXT in html.unescape(page)
    loaded = client.get("/transcripts/new?example=1").get_data(as_text=True)
    box = loaded[loaded.index('<textarea') : loaded.index("</textarea>")]
    assert json.loads(html.unescape(box[box.index(">") + 1 :])) == json.loads(EXAMPLE_TEXT)


@pytest.mark.parametrize("lang", ["en", "fr", "zh"])
def test_home_and_form_name_every_format_of_the_registry(client, app, lang):
    with app.test_request_context(f"/?lang={lang}"):
        from flask_babel import gettext

        labels = [gettext(known.label) for known in FORMATS]
    for path in ("/", "/transcripts/new"):
        words = text_of(client.get(f"{path}?lang={lang}"))
        for label in labels:
            assert label in words, f"{path} does not name {label}"


def test_a_pasted_small_chat_gets_a_window_where_the_hammer_falls_and_says_so(client):
    posted = client.post("/transcripts", data={"transcript": EXAMPLE_TEXT})
    assert posted.status_code == 303
    link = posted.headers["Location"]
    assert "window=" not in link  # the chat's own window is its default: the link stays short
    scenario = parse_transcript(EXAMPLE_TEXT, "example")
    assert scenario.settings.window < 8000
    words = text_of(client.get(link))
    assert f"starts with a {scenario.settings.window:,}-token window, so that the hammer falls" in words
    compare = link.replace("/play/", "/compare/", 1) + ".json"

    def compacts(query: str) -> bool:
        data = client.get(compare + query).get_json()
        assert data["settings"]["window"] == (8000 if query else scenario.settings.window)
        # The textbook strategies at the page's line; a harness keeps its own (Claude Code's
        # reserve is larger than these windows, so it compacts at every call whatever the size).
        return any(call["compacted"] for strategy in data["strategies"] if strategy["family"] == "textbook" for call in strategy["calls"])

    assert compacts("") and not compacts("?window=8000")


def test_a_result_shrunk_then_dropped_at_one_call_is_told_once_as_dropped(client):
    scenario = parse_transcript(EXAMPLE_TEXT, "example")
    posted = client.post("/transcripts", data={"transcript": EXAMPLE_TEXT})
    link = posted.headers["Location"].split("?")[0]
    stories = [text_of(client.get(f"{link}?call={number}")) for number in range(1, scenario.call_count + 1)]
    assert any("dropped" in story for story in stories)
    for story in stories:
        assert not re.search(r"→ 0 tokens\)", story)
