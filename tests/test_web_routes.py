"""The web layer through Flask's test client: every route, full page and HTMX fragment."""

from __future__ import annotations

import json
import re
import shutil
from urllib.parse import urlsplit

from tests.links import base_of, link_state

import pytest

from webapp.core.inputs.library import SCENARIOS_DIR

HX = {"HX-Request": "true"}


def text(response) -> str:
    return response.get_data(as_text=True)


# --- Home --------------------------------------------------------------------------------------


def test_home_lists_each_scenario_with_its_lesson_and_a_link_to_play(client):
    response = client.get("/")
    assert response.status_code == 200
    page = text(response)
    assert "The bike shop" in page
    assert "The hammer falls on the oldest tool result" in page
    assert 'href="/play/bike-shop"' in page


def test_home_shows_scenarios_that_failed_to_load_with_file_field_and_problem(tmp_path):
    from webapp import create_app

    shutil.copy(SCENARIOS_DIR / "bike-shop.toml", tmp_path / "bike-shop.toml")
    (tmp_path / "broken.toml").write_text('id = "broken"\ntitle = "Broken"\nlesson = "x"\nsystem = "s"\nchat = []\n')
    client = create_app({"TESTING": True, "SCENARIOS_DIR": tmp_path}).test_client()
    response = client.get("/")
    assert response.status_code == 200
    page = text(response)
    assert "The bike shop" in page
    assert "broken.toml" in page
    assert "<code>chat</code>" in page


# --- The play page -----------------------------------------------------------------------------


def test_play_full_page_draws_the_well_the_bill_the_log_and_the_chat(client):
    response = client.get("/play/bike-shop?call=4")
    assert response.status_code == 200
    page = text(response)
    assert page.startswith("<!doctype html>")
    assert 'id="well-panel"' in page and "<svg" in page
    assert "6,197 of 8,000 tokens" in page
    assert "13,456" in page  # SENT after four calls
    assert 'id="events"' in page and "model_call" in page
    assert "Hi! My order #4471 came with a bent front wheel" in page
    assert "The catalog search adds a second heavy block" in page  # the narration of call 4
    assert "HX-Request" in response.headers["Vary"]


def test_play_defaults_to_the_first_call(client):
    page = text(client.get("/play/bike-shop"))
    assert "Call 1 of 6" in page


def step(client, url: str, came_from: str | None, **headers):
    """An htmx request for `url` from the page at `came_from` (None: htmx did not say)."""
    sent = {**HX, "HX-Target": "well", **headers}
    if came_from:
        sent["HX-Current-URL"] = "http://localhost" + came_from
    return client.get(url, headers=sent)


def oob_ids(page: str) -> set[str]:
    return set(re.findall(r'<\w+ id="([\w-]+)"[^>]*hx-swap-oob=', page))


def test_htmx_request_gets_every_panel_when_the_page_it_came_from_is_unknown(client):
    response = step(client, "/play/bike-shop?call=5", None)
    assert response.status_code == 200
    page = text(response)
    assert "<html" not in page and "<body" not in page
    assert page.count('<div id="well">') == 1  # the target, not out of band
    assert {"stepper", "bill-figures", "events-before", "chat", "bubbles", "narration", "facts", "detail"} - {"chat"} <= oob_ids(page)
    # The live regions stay in the page; only their content is swapped.
    assert re.search(r'id="events-now"[^>]*hx-swap-oob="innerHTML"', page)
    assert re.search(r'id="call-summary"[^>]*hx-swap-oob="innerHTML"', page)
    assert "<title>Call 5 of 6" in page
    for header in ("HX-Request", "HX-Current-URL", "HX-Target", "HX-Trigger"):
        assert header in response.headers["Vary"]


def test_a_plus_one_step_sends_only_what_changed_and_appends_the_growing_lists(client):
    page = text(step(client, "/play/bike-shop?call=5", "/play/bike-shop?call=4"))
    # what a step does not change stays: the settings form, the warnings, the settings as code
    assert not {"controls", "warnings", "settings-code"} & oob_ids(page)
    # the event log gets call 4's group appended (it was the current one), the live region call 5
    appended = re.search(r'<ol hx-swap-oob="beforeend:#events-before">(.*?)</ol>\s*<div id="events-now"', page, re.S).group(1)
    assert "call 4" in appended and "call 5" not in appended and "call 3" not in appended
    # one new bar, and the chat's new bubbles; the bubble that was current only loses its mark
    assert re.search(r'<svg hx-swap-oob="beforeend:#bar-fills">\s*<rect class="bar"[^>]*>(?:(?!<rect).)*</svg>', page, re.S)
    assert re.search(r'<span id="who-m8" class="who" hx-swap-oob="true">', page)
    assert '<ol hx-swap-oob="beforeend:#bubbles">' in page
    # the collapsed table view is not sent: a loader fetches it when it is opened
    assert re.search(r'<div id="table-view" class="loading" hx-get="/play/bike-shop\?call=5" hx-trigger="toggle once from:closest details, intersect once"', page)
    # a jump of more than one call sends the lists whole
    jump = text(step(client, "/play/bike-shop?call=5", "/play/bike-shop?call=2"))
    assert re.search(r'<ol id="events-before" class="log" hx-swap-oob="true">', jump)
    assert re.search(r'<svg hx-swap-oob="innerHTML:#bar-fills">', jump)
    assert re.search(r'<ol id="bubbles" class="bubbles" hx-swap-oob="true">', jump)


def test_selecting_a_block_sends_the_detail_and_no_motion(client):
    page = text(step(client, "/play/bike-shop?call=5&block=m3", "/play/bike-shop?call=5"))
    assert "detail" in oob_ids(page) and "[Truncated to save context" in page
    assert not {"events-before", "events-now", "bill-figures", "facts", "controls", "bubbles"} & oob_ids(page)
    assert re.search(r'<svg class="well compacting still', page)  # the hammer does not fall again
    moving = text(step(client, "/play/bike-shop?call=5", "/play/bike-shop?call=4"))
    assert re.search(r'<svg class="well compacting"', moving)


def test_a_plain_page_moves_only_when_it_comes_from_another_call(client):
    assert 'class="well compacting still' in text(client.get("/play/bike-shop?call=5"))
    came = client.get("/play/bike-shop?call=5", headers={"Referer": "http://localhost/play/bike-shop?call=4"})
    assert 'class="well compacting"' in text(came) and "Referer" in came.headers["Vary"]
    french = client.get("/play/bike-shop?call=5&lang=fr", headers={"Referer": "http://localhost/play/bike-shop?call=5"})
    assert 'class="well compacting still' in text(french)  # another language is the same stack


def test_an_opened_collapsed_view_gets_just_its_content(client):
    page = text(client.get("/play/bike-shop?call=5", headers={**HX, "HX-Target": "table-view"}))
    assert page.lstrip().startswith('<table id="table-view"') and "hx-swap-oob" not in page
    code = text(client.get("/play/bike-shop?call=5&window=9000", headers={**HX, "HX-Target": "settings-code"}))
    assert code.lstrip().startswith('<div id="settings-code"') and "9000" in code


def test_settings_form_is_not_swapped_back_into_itself(client):
    from_form = text(step(client, "/play/bike-shop?call=2&window=9000", "/play/bike-shop?call=2", **{"HX-Trigger": "controls"}))
    from_link = text(step(client, "/play/bike-shop?call=2&window=9000", "/play/bike-shop?call=2", **{"HX-Trigger": "step-next"}))
    assert 'id="controls"' not in from_form and "controls-state" in oob_ids(from_form)
    assert re.search(r'id="controls"[^>]*hx-swap-oob="true"', from_link)


def test_every_panel_declares_inputs_that_exist(app):
    from webapp.web.htmx import panels
    from webapp.web.state import URL_PARAMS

    with app.test_request_context():
        declared = {panel.block: panel.inputs for panel in panels("play.html")}
    assert {"well", "stepper", "events", "chat", "bar_fills", "table_view", "settings_code", "title_tag", "languages"} <= set(declared)
    assert all(inputs and inputs <= set(URL_PARAMS) for inputs in declared.values())


def test_hammer_call_shows_the_compact_event_before_and_after(client):
    page = text(client.get("/play/bike-shop?call=5"))
    assert "compacting" in page and 'class="hammer"' in page
    assert ">compaction</a> <span>6,443 → 3,087 tokens · cache: changes the request from message 3 of the chat on" in page
    assert "Compaction shrank the request from 6,443 to 3,087 tokens." in page
    # the shrunk tool result is labelled with its note, old and new size
    assert '✂ <tspan class="long">tool result: </tspan>get_order</tspan>' in page and "72 ← 3,428" in page
    # calls without compaction have no hammer
    assert 'class="hammer"' not in text(client.get("/play/bike-shop?call=6"))


def test_compact_falls_after_the_request_enters_and_before_turn_start(client):
    data = client.get("/play/bike-shop.json?call=5").get_json()
    kinds = [event["kind"] for event in data["current"]["events"]]
    assert kinds.index("user_message") < kinds.index("compact") < kinds.index("turn_start")


def test_each_block_has_an_accessible_name_with_role_tokens_and_state(client):
    page = text(client.get("/play/bike-shop?call=5"))
    # An SVG link's name is its <title>, which is also the tooltip a mouse shows.
    names = re.findall(r'<a id="block-[^"]*"[^>]*><title>([^<]*)</title>', page)
    assert len(names) == 10  # the floor and nine messages
    assert any("tool result: get_order, 72 tokens, truncated to a note (was 3,428 tokens), outside KEEP" in n for n in names)
    assert any(n.startswith("user, 45 tokens, kept as sent, in KEEP") for n in names)


def test_table_view_has_the_same_blocks(client):
    page = text(client.get("/play/bike-shop?call=5"))
    table = page[page.index('<table id="table-view">'): page.index("</table>")]
    assert table.count("<tr") == 11  # header + floor + nine blocks
    assert "truncated, was 3,428" in table


def test_strategies_change_the_picture(client):
    drop = text(client.get("/play/bike-shop?call=5&strategy=drop"))
    assert "3 dropped" in drop and 'class="trace in-well"' in drop
    summary = text(client.get("/play/bike-shop?call=5&strategy=summarize"))
    assert "summary of 3 messages" in summary and 'class="summary"' in summary


def test_overflow_says_gulp_with_the_numbers(client):
    page = text(client.get("/play/bike-shop?call=6&strategy=none&window=5000&counter=o200k_base"))
    assert "Gulp! 6,562 > 5,000" in page
    assert "cannot fit" in page  # the replay's warning
    # the loop counts with the estimate, the provider with its tokenizer: the page says so
    page = text(client.get("/play/bike-shop?call=6&strategy=none&window=5000"))
    assert "Gulp! The model counts 6,562 > 5,000" in page


def test_the_models_real_window_is_drawn_when_the_compactor_was_told_another(client):
    page = text(client.get("/play/real-window?call=6"))
    assert 'class="real-rim in-well"' in page
    assert "Gulp! 8,523 > 8,000" in page
    assert "more than the model&#39;s 8,000-token window" in page
    fixed = text(client.get("/play/real-window?call=6&window=8000&model_window=0"))
    assert 'class="real-rim' not in fixed and 'class="gulp"' not in fixed


def test_bill_uses_the_price_per_million(client):
    page = text(client.get("/play/bike-shop?call=6&price=10"))
    dearer = client.get("/play/bike-shop.json?call=6&price=10").get_json()["cost"]
    usual = client.get("/play/bike-shop.json?call=6").get_json()["cost"]
    assert "19,770" in page and f"${dearer:.4f}" in page
    assert "Cost at $10.00 / M, prompt cache applied" in page
    assert dearer == pytest.approx(4 * usual, abs=1e-6)  # no summarizer here: the bill is the input price's


@pytest.mark.parametrize(("scenario", "strategy"), [("bike-shop", "truncate-drop"), ("coding-agent", "summarize"), ("long-haul", "drop")])
def test_the_play_pages_bill_at_the_last_call_is_the_comparisons(client, scenario, strategy):
    """One basis for money: the play page bills the cache and the summarizer as the comparison does."""
    comparison = client.get(f"/compare/{scenario}.json?strategy={strategy}").get_json()
    column = next(column for column in comparison["strategies"] if column["key"] == strategy)
    play = client.get(f"/play/{scenario}.json?strategy={strategy}&call={comparison['call']}").get_json()
    assert play["cost"] == column["bill_usd"]
    metrics = [client.get(f"/play/{scenario}.json?strategy={strategy}&call={n}").get_json()["metrics"]["estimated_cost_usd"] for n in range(1, comparison["call"] + 1)]
    assert sum(metrics) == pytest.approx(play["cost"], abs=1e-5)  # the manual's metrics, call by call, add up to it


def test_selecting_a_block_shows_its_content_and_each_counter(client):
    page = text(client.get("/play/bike-shop?call=5&block=m3"))
    detail = page[page.index('id="detail"'):page.index('id="bill"')]
    assert "[Truncated to save context" in detail
    for counter in ("estimate (characters / 4)", "cl100k_base", "o200k_base"):
        assert counter in detail
    floor = text(client.get("/play/bike-shop?call=1&block=floor"))
    assert "You are the support assistant of a bike shop." in floor
    future = text(client.get("/play/bike-shop?call=1&block=m9"))
    assert "has not entered the history yet" in future


def test_every_link_and_form_keeps_the_whole_state(client):
    address = "/play/bike-shop?call=3&strategy=drop&window=9000&threshold=0.7&keep=1&price=10&lang=en"
    page = text(client.get(address))
    # links to another page whole; the page's many links to itself only their query ("?call=4…"),
    # which keeps the settings from the page's address: its <base>, the state's own spelling
    base = base_of(page, address)
    assert urlsplit(base).path == "/play/bike-shop/strategy=drop;window=9000;threshold=0.7;keep=1;price=10"
    links = re.findall(r'href="((?:/play/bike-shop)?\?[^"]*|/play/bike-shop[./][^"]*)"(?: lang="([\w-]+)")?', page)
    assert len(links) > 20
    for link, language_link in links:
        _, query = link_state(link, base)
        assert query["strategy"] == "drop" and query["window"] == "9000", link
        assert query["threshold"] == "0.7" and query["keep"] == "1" and query["price"] == "10", link
        # only the language links change the language (their lang attribute is the HTML tag)
        assert query["lang"] == {"zh-Hans": "zh"}.get(language_link, language_link or "en"), link
        if link.startswith("?"):
            assert "strategy" not in link and "window" not in link, "a link to this page carries only what it changes"


def test_language_links_keep_the_state_and_translate_the_scenario(client):
    page = text(client.get("/play/bike-shop?call=5&strategy=drop"))
    link = re.search(r'href="([^"]*)" lang="fr"', page).group(1).replace("&amp;", "&")
    assert "call=5" in link and "strategy=drop" in link and "lang=fr" in link
    french = text(client.get(link))
    assert '<html lang="fr">' in french
    assert "Le magasin de vélos" in french and "La troisième demande" in french
    chinese = text(client.get("/", headers={"Accept-Language": "zh-CN,zh;q=0.9"}))
    assert "自行车店" in chinese


def test_narration_says_when_the_settings_are_not_the_scenarios_own(client):
    own = text(client.get("/play/bike-shop?call=5"))
    assert "you changed them" not in own
    changed = text(client.get("/play/bike-shop?call=5&strategy=summarize"))
    assert "you changed them" in changed
    back = re.search(r'href="([^"]*)"[^>]*>Back to its settings', changed).group(1).replace("&amp;", "&")
    assert back == "/play/bike-shop?call=5"  # the scenario's own settings are the defaults, left out of the address


def test_keep_facts_checkbox_sends_off_then_on(client):
    page = text(client.get("/play/bike-shop?keep_facts=0&keep_facts=1"))
    assert re.search(r'id="f-keep-facts"[^>]*checked', page)
    page = text(client.get("/play/bike-shop?keep_facts=0"))
    assert not re.search(r'id="f-keep-facts"[^>]*checked', page)


def test_autoplay_fragment_triggers_the_next_call_while_playing(client):
    page = text(client.get("/play/bike-shop?call=2&play=1&speed=2", headers=HX))
    match = re.search(r'id="autoplay"[^>]*hx-get="([^"]*)"[^>]*hx-trigger="load delay:1100ms"', page)
    assert match and "call=3" in match.group(1) and "play=1" in match.group(1)
    assert "Pause" in page
    last = text(client.get("/play/bike-shop?call=6&play=1"))
    assert 'id="autoplay"' not in last


def test_json_twin(client):
    response = client.get("/play/bike-shop.json?call=5&strategy=truncate")
    assert response.status_code == 200 and response.mimetype == "application/json"
    data = response.get_json()
    assert data["scenario"] == "bike-shop" and data["call"] == 5 and data["calls"] == 6
    assert data["settings"]["strategy"] == "truncate"
    assert data["current"]["compaction"]["tokens_before"] == 6443
    assert data["current"]["compaction"]["truncated"] == ["m3"]
    uncached = 16543 * 2.5 / 1e6  # the default price, as on the command line, before the cache
    assert 0 < data["cost"] < uncached


# --- Security ---------------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["/", "/play/bike-shop?call=5", "/play/bike-shop.json", "/play/nope", "/play/bike-shop?call=0"])
def test_security_headers_on_every_response(client, url):
    headers = client.get(url).headers
    csp = headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "style-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "same-origin"
    assert "HX-Request" in headers["Vary"]


@pytest.mark.parametrize("url", ["/", "/play/bike-shop?call=5&block=m3", "/play/bike-shop?call=6&strategy=summarize", "/play/nope"])
def test_pages_have_no_inline_script_style_or_handlers(client, url):
    page = text(client.get(url))
    assert not re.search(r"<script(?![^>]*\bsrc=)", page)
    assert not re.search(r"<style", page)
    assert not re.search(r"\sstyle=", page)
    assert not re.search(r"\son[a-z]+=", page)


def test_transcript_text_is_escaped(tmp_path):
    from webapp import create_app

    messages = [{"role": "user", "content": "<script>alert(1)</script> & <b>bold</b>"}, {"role": "assistant", "content": "ok"}]
    (tmp_path / "xss.json").write_text(json.dumps(messages))
    client = create_app({"TESTING": True, "SCENARIOS_DIR": tmp_path}).test_client()
    page = text(client.get("/play/xss?block=m1"))
    assert "<script>alert(1)" not in page and "<b>bold" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


# --- Bad input ---------------------------------------------------------------------------------

BAD = [
    ("/play/bike-shop?call=-3", 400, "call: got &#39;-3&#39;, expected a whole number from 1 to 6"),
    ("/play/bike-shop?call=999", 400, "call: got &#39;999&#39;, expected a whole number from 1 to 6"),
    ("/play/bike-shop?call=two", 400, "call: got &#39;two&#39;"),
    ("/play/bike-shop?window=abc", 400, "window: got &#39;abc&#39;, expected a whole number from 100 to 10000000"),
    ("/play/bike-shop?threshold=7", 400, "threshold: got &#39;7&#39;, expected a number above 0 to 1"),
    ("/play/bike-shop?strategy=magic", 400, "strategy: got &#39;magic&#39;, expected one of none, truncate, drop"),
    ("/play/bike-shop?strategy=claude-code&output_reserve=lots", 400, "output_reserve: got &#39;lots&#39;, expected a whole number from 0 to 10000000"),
    ("/play/bike-shop?counter=words", 400, "counter: got &#39;words&#39;, expected one of estimate, cl100k_base, o200k_base"),
    ("/play/bike-shop?price=-1", 400, "price: got &#39;-1&#39;, expected a number from 0 to 1000"),
    ("/play/bike-shop?price=nan", 400, "price: got &#39;nan&#39;"),
    ("/play/bike-shop?block=../etc", 400, "block: got &#39;../etc&#39;"),
    ("/play/bike-shop?block=m99", 400, "this scenario has no such block"),
    ("/play/bike-shop?speed=9", 400, "speed: got &#39;9&#39;"),
    ("/play/bike-shop?lang=xx", 400, "lang: got &#39;xx&#39;"),
    ("/play/bike-shop?play=maybe", 400, "play: got &#39;maybe&#39;"),
    ("/play/nope", 404, "No scenario is named &#39;nope&#39;. Scenarios: bike-shop, real-window, tool-pairs, receipt, summary-forgets, reply-room, chars-lie, long-haul, coding-agent, workshop-manuals, harnesses, local-model."),
    ("/play/Bike_Shop", 404, "lowercase letters, digits and dashes"),
    ("/play/..%2F..%2Fetc%2Fpasswd", 404, "There is no page at this address."),
    ("/play/..", 404, "No scenario is named &#39;..&#39;"),
    ("/play/nope.json", 404, "No scenario is named &#39;nope&#39;"),
    ("/play/bike-shop.json?call=0", 400, "call: got &#39;0&#39;"),
    ("/nowhere", 404, "There is no page at this address."),
]


@pytest.mark.parametrize("url,status,message", BAD)
def test_bad_urls_get_a_clear_4xx_page(client, url, status, message):
    response = client.get(url)
    assert response.status_code == status
    page = text(response)
    assert message in page
    assert "Traceback" not in page


@pytest.mark.parametrize("url,status,message", [b for b in BAD if b[0].startswith("/play/") and ".json" not in b[0]])
def test_bad_urls_get_a_clear_4xx_fragment_for_htmx(client, url, status, message):
    response = client.get(url, headers={**HX, "HX-Target": "well"})
    assert response.status_code == status
    page = text(response)
    assert "<html" not in page and message in page
    assert response.headers["HX-Retarget"] == "#well"  # where the request came from
    assert response.headers["HX-Push-Url"] == "false"


def test_all_problems_are_listed_at_once(client):
    page = text(client.get("/play/bike-shop?window=abc&threshold=7&call=0"))
    assert "window: got" in page and "threshold: got" in page and "call: got" in page


def test_413_and_500_pages_say_what_happened(app):
    from flask import abort

    @app.route("/too-big")
    def too_big():
        abort(413)

    @app.route("/broken")
    def broken():
        raise RuntimeError("secret internals")

    client = app.test_client()
    response = client.get("/too-big")
    assert response.status_code == 413 and "too large" in text(response)
    response = client.get("/broken")
    assert response.status_code == 500
    assert "Something went wrong on our side" in text(response) and "secret internals" not in text(response)


# --- Replays are cached, boundedly -------------------------------------------------------------


def test_replay_cache_is_bounded_and_reused():
    from webapp import create_app

    app = create_app({"TESTING": True, "REPLAY_CACHE_SIZE": 2})
    client = app.test_client()
    cache = app.extensions["replay_cache"]
    client.get("/play/bike-shop?window=8000")
    client.get("/play/bike-shop?window=8000&call=3")
    assert len(cache) == 1
    client.get("/play/bike-shop?window=9000")
    client.get("/play/bike-shop?window=10000")
    assert len(cache) == 2


def test_gunicorn_entry_point_builds_the_app():
    import webapp

    app = webapp.create_app()
    assert app.test_client().get("/").status_code == 200


def test_page_state_url_applies_changes_keeps_the_rest_and_leaves_defaults_out(app):
    from webapp.web.state import read_state

    with app.test_request_context("/play/bike-shop?call=3&window=9000&price=2"):
        state = read_state("bike-shop", {"call": "3", "window": "9000", "price": "2", "keep": "2"})
        assert state.url(call=4, strategy="drop") == "/play/bike-shop/strategy=drop;window=9000;price=2?call=4"
        assert link_state(state.url(call=4, strategy="drop"))[1] == {"call": "4", "strategy": "drop", "window": "9000", "price": "2"}
        assert link_state(state.url(settings=state.scenario.settings, block="m3"))[1] == {"call": "3", "price": "2", "block": "m3"}
        assert state.url(relative=True, call=4) == "?call=4", "a link to the same settings: only the query"
        assert state.url(call=1, window=8000, price=2.5) == "/play/bike-shop"
        assert state.url("compare.page", call=5, cache="anthropic", window=8000) == "/compare/bike-shop?call=5&cache=anthropic&price=2"
        assert dict(state.hidden("call", "window")) == {"price": "2"}


def test_an_htmx_step_pushes_the_short_url(client):
    response = client.get("/play/bike-shop?call=5&strategy=truncate-drop&window=8000&keep_facts=0&keep_facts=0", headers=HX)
    assert response.headers["HX-Push-Url"] == "/play/bike-shop?call=5"
    response = client.get("/compare/bike-shop?call=2&cache=openai&price=2.5&output_price=", headers=HX)
    assert response.headers["HX-Push-Url"] == "/compare/bike-shop?call=2"


def test_vary_names_every_header_that_changes_the_answer(client):
    for path in ("/", "/play/bike-shop?call=2", "/compare/bike-shop", "/play/bike-shop.json"):
        vary = {value.strip() for value in client.get(path).headers["Vary"].split(",")}
        assert {"HX-Request", "HX-Trigger", "HX-History-Restore-Request", "Accept-Language"} <= vary, path
    french = client.get("/play/bike-shop?lang=fr").headers["Vary"]
    assert "Accept-Language" not in french  # the URL chose the language
    assert client.get("/?lang=xx").headers["Vary"].count("Accept-Language") == 1


def test_a_plain_next_link_gives_the_whole_event_log_and_chat(client):
    """Without JavaScript, Next is a plain link: the page it loads says where it came from
    (Referer), yet it is a whole page, so its lists start at call 1 as a fresh page's do."""
    fresh = text(client.get("/play/bike-shop?call=3"))
    followed = text(client.get("/play/bike-shop?call=3", headers={"Referer": "http://localhost/play/bike-shop?call=2"}))
    for list_id in ("events-before", "bubbles"):
        pattern = rf'<ol id="{list_id}".*?</ol>'
        assert re.search(pattern, followed, re.S).group(0) == re.search(pattern, fresh, re.S).group(0), list_id
    assert '<span class="call-tag">call 1</span>' in followed


@pytest.mark.parametrize("query", ["", "call=5", "call=5&strategy=drop&lang=fr&projector=1", "play=1&speed=2&block=m3", "window=5000&price=1.5"])
def test_links_written_by_the_shortcut_equal_the_general_writers(app, query):
    """The well's block links and the stepper's call links are written by a shortcut that
    writes the rest of the query once."""
    from webapp.web.state import read_state

    with app.test_request_context():
        view = read_state("bike-shop", dict(pair.split("=") for pair in query.split("&") if pair))
        to_block, to_call = view.link_to("block"), view.link_to("call", play=False)
        for block in ("floor", "m3", "m12"):
            assert to_block(block) == view.url(relative=True, block=block)
        for number in (1, 2, 6):
            assert to_call(number) == view.url(relative=True, call=number, play=False)
        to_speed = view.link_to("speed")
        for speed in ("0.5", "1", "2"):
            assert to_speed(speed) == view.url(relative=True, speed=speed)


def test_the_well_is_sent_without_indentation_but_its_words_keep_their_spaces(client):
    page = text(client.get("/play/bike-shop?call=5"))
    well = page[page.index('<svg class="well'): page.index("</svg>", page.index('<svg class="well'))]
    assert not re.search(r">\s*\n\s*<", well) and not re.search(r">  +<", well)
    assert '<tspan class="long">tool result: </tspan>get_order</tspan><tspan class="amount note" x="12" dy="19">72 ← 3,428</tspan>' in well
    assert '<tspan class="long">assistant </tspan>→ get_order <tspan class="amount">53</tspan>' in well


@pytest.mark.parametrize("scenario_id", ["bike-shop", "transcript"])
def test_a_step_finds_its_scenario_once(client, monkeypatch, scenario_id):
    """The limits, the page and the page it came from all need the scenario: it is looked up
    (a transcript read from the store) once per request."""
    from webapp.web import scenario_lookup

    if scenario_id == "transcript":
        body = {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Bye"}]}
        scenario_id = client.post("/transcripts", data={"transcript": json.dumps(body)}).headers["Location"].split("/play/")[1].split("?")[0]
    looked_up = []
    find = scenario_lookup._find
    monkeypatch.setattr(scenario_lookup, "_find", lambda name: looked_up.append(name) or find(name))
    came_from = f"http://localhost/play/{scenario_id}"
    answer = client.get(f"/play/{scenario_id}?call=2", headers={"HX-Request": "true", "HX-Current-URL": came_from})
    assert answer.status_code == 200
    assert looked_up == [scenario_id]
