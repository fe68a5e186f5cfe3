"""The manual's budget on the play page, through Flask's test client: pinning a message from
the page (kept in the URL), the alert and target lines, the metrics panel and the JSON twin's
metrics, and bad values refused in the page's language."""

from __future__ import annotations

import html
import re

import pytest

from tests.test_web_routes import oob_ids, step, text

MANUAL_METRICS = {
    "tokens_used_total",
    "tokens_by_layer",
    "context_utilization_pct",
    "compression_events",
    "cache_hit_rate",
    "estimated_cost_usd",
}


def pin_link(page: str) -> tuple[str, str]:
    """The selected block's pin control: its words and where it goes."""
    found = re.search(r'<a id="pin-toggle" class="btn" href="([^"]*)">(.*?)</a>', page, re.S)
    assert found, "the detail panel has no pin control"
    return re.sub(r"<[^>]+>", "", found.group(2)).strip(), html.unescape(found.group(1))


def test_pinning_a_message_from_its_block_is_a_link_that_keeps_it_in_the_url(client):
    words, href = pin_link(text(client.get("/play/bike-shop?call=5&block=m1")))
    assert words.endswith("Pin this message") and href == "/play/bike-shop/pin=m1?call=5&block=m1"
    pinned = text(client.get(href))
    # marked in the well and in the table view, and checked in the facts panel
    assert re.search(r'<a id="block-m1" class="user pinned', pinned)
    assert re.search(r'<span class="pin" role="img" aria-label="pinned">⚑</span> <a href="\?call=5&amp;block=m1">user</a>', pinned)
    facts = re.search(r'<div id="facts">(.*?)</div>', pinned, re.S).group(1)
    assert "Pinned messages" in facts and "message 1 of the chat" in facts and "in the request, unchanged" in facts
    # every other link of the page keeps the pin from the page's address, and the control now unpins
    assert 'href="?call=6&amp;block=m1"' in pinned
    words, href = pin_link(pinned)
    assert words == "Unpin" and href == "/play/bike-shop?call=5&block=m1"
    assert "pinned" not in re.search(r'<a id="block-m1" class="([^"]*)"', text(client.get(href))).group(1)


def test_a_pinned_message_is_carried_by_the_settings_form(client):
    page = text(client.get("/play/bike-shop?call=5&pin=m1,m3"))
    assert '<input type="hidden" form="controls" name="pin" value="m1,m3">' in page


def test_the_floor_and_summaries_have_no_pin_control(client):
    page = text(client.get("/play/bike-shop?call=5&block=floor"))
    assert 'id="pin-toggle"' not in page


@pytest.mark.parametrize(
    ("query", "name", "got"),
    [
        ("pin=zz", "pin", "'zz'"),
        ("pin=m1,m999", "pin", "'m999'"),
        ("alert=2", "alert", "'2'"),
        ("target=abc", "target", "'abc'"),
        ("alert=0.9", "alert", "'0.9'"),  # at or above the red line (0.8)
    ],
)
def test_a_bad_pin_alert_or_target_is_a_clear_400_in_the_pages_language(client, query, name, got):
    response = client.get(f"/play/bike-shop?call=5&{query}&lang=fr")
    assert response.status_code == 400
    problems = re.findall(r"<li>([^<]*)</li>", html.unescape(text(response)))
    assert any(problem.startswith(f"{name}\u00a0: reçu {got}, attendu ") for problem in problems), problems


def test_alert_and_target_lines_are_drawn_and_named_in_the_legend_only_when_set(client):
    plain = text(client.get("/play/bike-shop?call=4"))
    assert "level-alert" not in plain and "level-target" not in plain
    assert "red line: compaction required" in plain and "alert line" not in plain
    page = text(client.get("/play/bike-shop?call=4&alert=0.7&target=0.75"))
    assert re.search(r'<rect class="level-alert in-well" y="[\d.]+" height="2"/>', page)
    assert re.search(r'<rect class="level-target in-well" y="[\d.]+" height="2"/>', page)
    # on the axis, with their share and their tokens
    assert re.search(r'<text class="axis mark-alert"[^>]*>70%</text>\s*<text class="axis small mark-alert"[^>]*>5,600</text>', page)
    assert re.search(r'<text class="axis mark-target"[^>]*>75%</text>\s*<text class="axis small mark-target"[^>]*>6,000</text>', page)
    legend = re.search(r'<div id="legend-panel">(.*?)</div>', page, re.S).group(1)
    assert "alert line: a warning only" in legend and "target: compaction aims below it" in legend


def test_the_settings_form_offers_the_alert_line_and_the_target(client):
    page = text(client.get("/play/bike-shop?call=4&alert=0.7&target=0.75"))
    assert re.search(r'<input id="f-alert" name="alert" type="number" min="0" max="1" step="any" value="0.7">', page)
    assert re.search(r'<input id="f-target" name="target" type="number" min="0" max="1" step="any" value="0.75">', page)


def test_the_json_twin_has_the_manuals_metrics_for_the_call(client):
    before = client.get("/play/bike-shop.json?call=4").get_json()
    after = client.get("/play/bike-shop.json?call=5").get_json()
    for data in (before, after):
        metrics = data["metrics"]
        assert set(metrics) == MANUAL_METRICS
        assert set(metrics["tokens_by_layer"]) == {"system", "tools", "ltm", "rag", "history"}
        assert metrics["tokens_used_total"] == data["current"]["tokens"] == sum(metrics["tokens_by_layer"].values())
        assert metrics["context_utilization_pct"] == pytest.approx(100 * data["current"]["tokens"] / 8000, abs=0.01)
    assert (before["metrics"]["compression_events"], after["metrics"]["compression_events"]) == (0, 1)
    dearer = client.get("/play/bike-shop.json?call=5&price=5").get_json()["metrics"]["estimated_cost_usd"]
    assert dearer > after["metrics"]["estimated_cost_usd"] > 0


def test_the_metrics_panel_shows_each_metric_in_words_with_the_manuals_name(client):
    page = text(client.get("/play/bike-shop?call=5"))
    panel = re.search(r'<dl id="metrics-figures"[^>]*>(.*?)</dl>', page, re.S).group(1)
    for words, key, value in [
        ("Tokens in this request", "tokens_used_total", "3,087"),
        ("Share of the model(?:'|&#39;)s window used", "context_utilization_pct", "38.6%"),
        ("Compactions so far", "compression_events", "1"),
    ]:
        # the manual's name may wrap after an underscore on a phone, never inside a word
        assert re.search(rf"<dt>{words} <code>{key.replace('_', '_<wbr>')}</code></dt><dd>{re.escape(value)}</dd>", panel), key
    assert "<code>tokens_by_layer</code>" in panel and "long-term memory <code>ltm</code>" in panel
    french = text(client.get("/play/bike-shop?call=5&lang=fr"))
    assert re.search(r"<dt>Part de la fenêtre du modèle utilisée <code>context_<wbr>utilization_<wbr>pct</code></dt><dd>38,6[\u00a0\u202f]%</dd>", french)


def test_a_step_sends_the_metrics_and_selecting_a_block_does_not(client):
    assert "metrics-figures" in oob_ids(text(step(client, "/play/bike-shop?call=5", "/play/bike-shop?call=4")))
    assert "metrics-figures" not in oob_ids(text(step(client, "/play/bike-shop?call=5&block=m3", "/play/bike-shop?call=5")))
    pinned = oob_ids(text(step(client, "/play/bike-shop?call=5&pin=m3&block=m3", "/play/bike-shop?call=5&block=m3")))
    assert {"facts", "detail", "legend-panel"} <= pinned


def test_the_event_log_explains_the_manuals_events_in_the_glossary(client):
    page = text(client.get("/glossary"))
    for kind in ("warning", "notice", "pinned_kept"):
        assert re.search(rf'<div id="event-{kind}"><dt>[^<]+ <code>{kind}</code></dt><dd>', page)
    for anchor in ("alert-line", "target", "layers", "pinned", "metrics"):
        assert f'<div id="{anchor}"><dt>' in page


def test_the_layers_are_bands_beside_the_stack_with_their_budget_and_the_table_says_the_figures(client):
    # The pattern page's lessons keep their plain well; the manual's strategy shows the layers.
    assert 'class="layers' not in text(client.get("/play/bike-shop?call=5"))
    page = text(client.get("/play/bike-shop?call=5&strategy=by-layer"))
    assert re.search(r'<svg class="well[^"]* layered', page)
    strip = re.search(r'<g class="layers on-well" aria-hidden="true">(.*?)</g>', page, re.S).group(1)
    bands = re.findall(r'<rect class="(plan |room )?(\w+)( over)?" y="([\d.]+)" height="([\d.]+)"/>', strip)
    plans = {layer: float(height) for plan, layer, _, _, height in bands if plan}
    uses = {layer: (float(y), float(height), bool(over)) for plan, layer, over, y, height in bands if not plan}
    assert list(plans) == ["system", "tools", "memory", "retrieval", "history", "reply", "margin"]
    # every budget at the well's scale: history's 20% is twice retrieval's 10%; the reply's
    # room and the margin are drawn once, as their budget
    assert plans["history"] == pytest.approx(2 * plans["retrieval"], abs=0.2)
    # the history (3,045 tokens) is over its budget (1,600), and marked so; the request's
    # layers stack up to the top of the stack, each layer's band as tall as its tokens
    assert uses["history"][2] and not uses["system"][2]
    assert uses["history"][1] == pytest.approx(plans["history"] * 3045 / 1600, rel=0.01)
    table = re.search(r'<table class="layers-table">(.*?)</table>', page, re.S).group(1)
    over = re.findall(r'<tr class="over"><th scope="row">(.*?)</th>', table)
    assert len(over) == 1 and "conversation history <code>history</code>" in over[0]
    assert re.search(r"long-term memory <code>ltm</code></th><td class=\"num\">0</td><td class=\"num\">200 <span class=\"sub\">\(2.5%\)</span>", table)


def test_the_overflow_notice_is_a_block_to_select_and_an_event_in_the_log(client):
    # The bike shop in a 3,500-token window: by-layer's levels are not enough at call 6.
    url = "/play/bike-shop?strategy=by-layer&window=3500&call=6"
    page = text(client.get(url))
    assert re.search(r'<a id="block-n1" class="notice" href="[^"]*block=n1"><title>overflow notice, \d+ tokens, added by the loop, outside KEEP</title>', page)
    assert re.search(r">notice to the user</a> <span>still too big after every level: a notice tells the user that old details may be gone</span>", page)
    selected = text(client.get(url + "&block=n1"))
    assert '<h2 id="detail-title">overflow notice <span class="sub"></span></h2>' in selected
    assert "Some old details may no longer be accessible." in selected and 'id="pin-toggle"' not in selected
    assert "<td>added by the loop</td>" in selected


def test_the_alert_line_logs_a_warning_between_it_and_the_red_line(client):
    # The bike shop's call 4 sends 6,197 tokens: past an alert line at 50% (4,000), under the red line (6,400).
    page = text(client.get("/play/bike-shop?alert=0.5&call=4"))
    assert ">alert</a> <span>6,197 tokens: past the alert line (4,000), under the red line (6,400)</span>" in page
    assert "kind-warning" not in text(client.get("/play/bike-shop?call=4"))


def test_the_json_twin_has_the_budget_by_layer_as_the_table_shows_it(client):
    data = client.get("/play/bike-shop.json?call=5&strategy=by-layer").get_json()
    budget = {row["layer"]: row for row in data["budget"]["layers"]}
    assert list(budget) == ["system", "tools", "memory", "retrieval", "history", "reply", "margin"]
    assert budget["history"] == {"layer": "history", "tokens": 3045, "budget_tokens": 1600, "over": True}
    # the layers and the free room fill the window exactly
    assert sum(row["tokens"] for row in budget.values()) + data["budget"]["free"] == 8000


def test_the_retrieval_lesson_draws_its_layers_and_its_pinned_rule(client):
    page = text(client.get("/play/workshop-manuals?call=8&block=m3"))
    # retrieved pages are their layer, in words, and take the manual's name on a phone
    assert '<a id="block-m6" class="retrieval truncated" href="?call=8&amp;block=m6"><title>retrieved documents, 54 tokens, truncated to a note (was 266 tokens), outside KEEP</title>' in page
    assert '<tspan class="cut">✂ <tspan class="long">retrieved documents</tspan><tspan class="short">rag</tspan></tspan><tspan class="amount note" x="12" dy="19">54 ← 266</tspan>' in page
    # the scenario pins the safety rule: marked, named so, and unpinned with -m3
    assert re.search(r'<a id="block-m3" class="user pinned selected"[^>]*><title>user, 45 tokens, kept as sent, outside KEEP, pinned</title>', page)
    words, href = pin_link(page)
    assert words == "Unpin" and href == "/play/workshop-manuals/pin=-m3?call=8&block=m3"
    unpinned = text(client.get(href))
    assert "Pinned messages" not in unpinned and 'class="user selected"' in unpinned
    assert pin_link(unpinned) == ("⚑ Pin this message", "/play/workshop-manuals?call=8&block=m3")


def test_in_a_zoomed_view_the_strip_stops_at_the_views_top(client):
    # Call 2 of the retrieval lesson is a sliver of its window: the zoomed view carries the
    # strip, and retrieval's budget (1,500 tokens) is far taller than the view (300).
    page = text(client.get("/play/workshop-manuals?call=2"))
    top = float(re.search(r'<rect class="zoom-level level-zoom" y="([\d.]+)" height="2.5"/>', page).group(1)) + 1.25
    strip = re.search(r'<g class="layers on-zoom" aria-hidden="true">(.*?)</g>', page, re.S).group(1)
    tops = [float(y) for y in re.findall(r' y="([\d.]+)"', strip)]
    assert tops and min(tops) >= top - 0.1
    assert 'class="room' not in strip  # the room under the rim is outside a zoomed view


def test_a_pasted_transcripts_message_is_pinned_from_the_page_and_kept_by_every_strategy(client):
    import json

    chat = [{"role": "system", "content": "You help with a bike."}]
    for turn in range(8):
        rule = turn == 1  # the second request states the safety rule: message 3
        chat.append({"role": "user", "content": "Never ride it: the fork is recalled (R-2291)." if rule else f"Question {turn}: " + "tell me more. " * 60})
        chat.append({"role": "assistant", "content": f"Answer {turn}: " + "here is more. " * 60})
    link = client.post("/transcripts", data={"transcript": json.dumps(chat)}).headers["Location"].split("?")[0]
    last = client.get(link + ".json?window=2000").get_json()["calls"]
    assert "m3" in client.get(f"{link}.json?window=2000&call={last}").get_json()["current"]["gone"]  # unpinned, it goes
    words, href = pin_link(text(client.get(f"{link}?window=2000&call={last}&block=m3")))
    assert words.endswith("Pin this message") and "pin=m3" in href
    pinned = text(client.get(href))
    facts = re.search(r'<div id="facts">(.*?)</div>', pinned, re.S).group(1)
    assert "message 3 of the chat" in facts and "in the request, unchanged" in facts
    for strategy in ("truncate-drop", "drop", "summarize", "by-layer"):
        data = client.get(f"{link}.json?window=2000&call={last}&pin=m3&strategy={strategy}").get_json()
        assert data["current"]["pinned"] == [{"id": "m3", "present": True, "unchanged": True}], strategy


def test_the_room_kept_free_says_when_the_request_eats_into_it(client):
    # Call 9 of the retrieval lesson sends 2,628 of 3,000 tokens: the reply's 150 stay free,
    # the margin's 300 are down to 222.
    table = re.search(r'<table class="layers-table">(.*?)</table>', text(client.get("/play/workshop-manuals?call=9")), re.S).group(1)
    rows = dict(re.findall(r'<code>(reply|margin)</code></th><td class="num">(.*?)</td>', table))
    assert rows == {"reply": "kept free", "margin": "222 left"}
    assert re.search(r'<code>margin</code></th><td class="num">222 left</td><td class="num">300 <span class="sub">\(10%\)</span> <strong class="over-mark">the request eats into it</strong>', table)
