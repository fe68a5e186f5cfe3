"""The comparison panel in the browser's terms: its figures, downloads and links equal the
engine's, bad URLs get a clear 4xx, and a column click lands on that strategy's play view."""

from __future__ import annotations

import csv
import io
import re
from html import unescape
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from tests.links import link_state

from webapp.core.analysis.compare import compare
from webapp.core.analysis.pricing import Pricing
from webapp.core.inputs.library import open_scenario
from webapp.core.engine.replay import replay

SCENARIO = open_scenario("bike-shop")
SETTINGS = "window=8000&threshold=0.8&keep=2&counter=estimate&strategy=truncate-drop"


def columns_of(html: str) -> dict[str, str]:
    """The HTML of each strategy's column in full (under the cards the page opens on), by
    column key."""
    out = {}
    for chunk in html[html.index('<section id="columns"') :].split('<li class="column')[1:]:
        key = re.search(r'data-strategy="([^"]+)"', chunk).group(1)
        out[key] = chunk
    return out


@pytest.mark.parametrize("call", [1, 5, 6])
def test_every_column_shows_the_engines_figures_at_the_call(client, call):
    response = client.get(f"/compare/bike-shop?call={call}&{SETTINGS}&price=2.5")
    assert response.status_code == 200
    html = response.get_data(as_text=True)
    columns = columns_of(html)
    comparison = compare(SCENARIO, SCENARIO.settings, Pricing(price=2.5))
    assert list(columns) == [column.key for column in comparison.columns]
    for column in comparison.columns:
        engine = replay(SCENARIO, column.settings)
        at = engine.calls[call - 1]
        chunk = columns[column.key]
        shown = re.findall(r'class="num[^"]*">([\d,]+)', chunk)
        assert f"{at.tokens:,}" in shown  # this request
        assert f"{at.sent_total:,}" in shown  # SENT at this call
        assert f"{engine.calls[-1].sent_total:,}" in shown  # SENT at the end
        assert f"${column.bill.cost:.4f}" in chunk


def test_json_twin_equals_the_engine_for_every_strategy(client):
    data = client.get(f"/compare/bike-shop.json?call=5&{SETTINGS}&price=2.5&cache=anthropic").get_json()
    assert data["call"] == 5 and data["pricing"]["cache"] == "anthropic" and data["pricing"]["price"] == 2.5
    comparison = compare(SCENARIO, SCENARIO.settings, Pricing(cache="anthropic", price=2.5))
    assert [row["key"] for row in data["strategies"]] == [column.key for column in comparison.columns]
    for row, column in zip(data["strategies"], comparison.columns):
        engine = replay(SCENARIO, column.settings)
        assert row["strategy"] == column.settings.strategy and row["keep_facts"] == column.settings.keep_facts
        assert row["tokens_at_call"] == engine.calls[4].tokens
        assert row["sent_total"] == engine.calls[-1].sent_total
        assert [c["tokens"] for c in row["calls"]] == [c.tokens for c in engine.calls]
        assert row["overflows"] == sum(c.overflow for c in engine.calls)
        assert row["cached_total"] == column.cached_total
    assert data["verdict"]["winner"] == comparison.verdict.winner


def test_csv_download_has_one_row_per_strategy_with_the_engines_numbers(client):
    response = client.get(f"/compare/bike-shop.csv?call=6&{SETTINGS}")
    assert response.status_code == 200
    assert response.mimetype == "text/csv"
    assert "attachment" in response.headers["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.get_data(as_text=True))))
    comparison = compare(SCENARIO, SCENARIO.settings, Pricing(price=3))
    assert len(rows) == len(comparison.columns)
    for row, column in zip(rows, comparison.columns):
        engine = replay(SCENARIO, column.settings)
        assert row["strategy"] == column.settings.strategy
        assert int(row["sent_total"]) == engine.calls[-1].sent_total
        assert int(row["tokens_at_call"]) == engine.calls[5].tokens
        assert int(row["compactions"]) == column.compactions
        assert row["valid_requests"] == str(all(call.valid for call in engine.calls))


@pytest.mark.parametrize("strategy,keep_facts", [("none", 0), ("drop", 0), ("summarize", 1)])
def test_request_download_is_exactly_what_the_loop_sends(client, strategy, keep_facts):
    response = client.get(f"/play/bike-shop/request.json?call=5&strategy={strategy}&keep_facts={keep_facts}")
    assert response.status_code == 200
    assert "attachment" in response.headers["Content-Disposition"]
    body = response.get_json()
    settings = SCENARIO.settings.model_copy(update={"strategy": strategy, "keep_facts": bool(keep_facts)})
    call = replay(SCENARIO, settings).calls[4]
    assert body["messages"] == call.request(SCENARIO.prefix)
    assert body["tools"] == SCENARIO.tools


def test_each_column_links_to_its_play_view_at_the_same_call_and_settings(client):
    html = client.get("/compare/bike-shop?call=4&window=9000&keep=1").get_data(as_text=True)
    for key, chunk in columns_of(html).items():
        href = re.search(r'class="column__link" href="([^"]+)"', chunk).group(1).replace("&amp;", "&")
        path, query = link_state(href)
        assert path == "/play/bike-shop"
        assert query["call"] == "4" and query["window"] == "9000" and query["keep"] == "1"
        # the scenario's own settings are left out of a link
        assert query.get("strategy", SCENARIO.settings.strategy) == key.removesuffix("+facts")
        assert query.get("keep_facts", "0") == ("1" if key.endswith("+facts") else "0")
        assert client.get(href).status_code == 200


def test_htmx_gets_the_panel_fragment_and_a_plain_get_the_full_page(client):
    full = client.get("/compare/bike-shop?call=2")
    fragment = client.get("/compare/bike-shop?call=2", headers={"HX-Request": "true"})
    assert "<html" in full.get_data(as_text=True)
    body = fragment.get_data(as_text=True)
    assert "<html" not in body and body.lstrip().startswith('<div id="compare-panel"')
    assert "HX-Request" in fragment.headers["Vary"]


def test_the_page_obeys_the_content_security_policy(client):
    html = client.get("/compare/bike-shop?call=5").get_data(as_text=True)
    assert not re.search(r"\sstyle=", html)
    assert not re.search(r"\son[a-z]+=", html)
    assert not re.search(r"<script(?![^>]*\ssrc=)", html)


@pytest.mark.parametrize(
    "query,expected",
    [
        ("cache=gemini", "cache: got 'gemini', expected one of openai, anthropic"),
        ("cached_share=2", "cached_share: got &#39;2&#39;, expected a number from 0 to 1"),
        ("call=99", "call"),
    ],
)
def test_bad_parameters_get_a_400_naming_the_problem(client, query, expected):
    response = client.get(f"/compare/bike-shop?{query}")
    assert response.status_code == 400
    body = response.get_data(as_text=True)
    assert expected.replace("'", "&#39;") in body or expected in body


def test_an_unknown_scenario_is_a_404_everywhere(client):
    for url in ("/compare/nope", "/compare/nope.json", "/compare/nope.csv", "/play/nope/request.json"):
        assert client.get(url).status_code == 404


def test_the_play_page_links_to_the_panel_at_the_same_call_and_settings(client):
    html = client.get("/play/bike-shop?call=3&strategy=drop&window=9000").get_data(as_text=True)
    href = re.search(r'href="(/compare/bike-shop\?[^"]+)"', html).group(1).replace("&amp;", "&")
    query = parse_qs(urlparse(href).query)
    assert query["call"] == ["3"] and query["strategy"] == ["drop"] and query["window"] == ["9000"]
    assert client.get(href).status_code == 200


def test_a_column_click_opens_that_strategys_play_view_at_the_same_call(live_server, page):
    page.goto(f"{live_server}/compare/bike-shop?call=5")
    column = page.get_by_role("link", name=re.compile(r"^drop\b"))
    column.click()
    page.wait_for_url(re.compile(r"/play/bike-shop[/?]"))
    _, query = link_state(page.url)
    assert query["strategy"] == "drop" and query["call"] == "5"
    assert page.locator("#f-strategy").input_value() == "drop"
    assert "Call 5" in page.locator(".where").inner_text()


def test_stepping_in_the_panel_swaps_it_in_place_and_keeps_the_url(live_server, page):
    page.goto(f"{live_server}/compare/bike-shop?call=4")
    page.locator("#compare-next").click()
    page.wait_for_url(re.compile(r"call=5"))
    assert "Call 5" in page.locator(".compare-panel .where").inner_text()
    # The last call is where the comparison opens: its link is the bare one.
    page.locator("#compare-next").click()
    page.wait_for_url(re.compile(r"/compare/bike-shop$"))
    assert "Call 6" in page.locator(".compare-panel .where").inner_text()
    assert page.title().startswith("Compare strategies")


def test_choosing_the_breakpoint_cache_rebills_in_place_and_keeps_focus(live_server, page):
    page.goto(f"{live_server}/compare/bike-shop?call=6&price=2.5")
    comparison = compare(SCENARIO, SCENARIO.settings, Pricing(cache="anthropic", price=2.5))
    winner = comparison.column(comparison.verdict.winner)
    page.click("#compare-settings > summary")
    page.locator("#c-cache").focus()
    page.locator("#c-cache").select_option("anthropic")
    page.wait_for_url(re.compile(r"cache=anthropic"))
    lead = page.locator(".verdict__lead")
    assert winner.strategy in lead.inner_text() and f"${winner.bill.cost:.4f}" in lead.inner_text()
    assert page.evaluate("document.activeElement.id") == "c-cache"


def test_every_field_of_the_panel_is_valid_as_served_for_every_scenario(app, client):
    """A browser refuses to send a form whose field breaks its own min, max or step: on a
    4,096-token window a step of 100 blocked every change of the panel's settings."""
    from html.parser import HTMLParser
    from decimal import Decimal

    class Numbers(HTMLParser):
        def __init__(self):
            super().__init__()
            self.fields = []

        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if tag == "input" and attrs.get("type") == "number":
                self.fields.append(attrs)

    for scenario_id in app.extensions["scenario_library"].scenarios:
        parser = Numbers()
        parser.feed(client.get(f"/compare/{scenario_id}?cached_share=0.125&price=0.075").get_data(as_text=True))
        assert parser.fields
        for field in parser.fields:
            if not field.get("value"):
                continue
            value = Decimal(field["value"])
            assert Decimal(field["min"]) <= value <= Decimal(field["max"]), (scenario_id, field)
            if field["step"] != "any":
                assert (value - Decimal(field["min"])) % Decimal(field["step"]) == 0, (scenario_id, field)


@pytest.mark.parametrize("lang,name", [("fr", "summarize + faits gardés"), ("zh", "summarize + 保留关键事实")])
def test_the_chart_names_the_strategies_in_the_page_language(client, lang, name):
    page = client.get(f"/compare/bike-shop?call=5&lang={lang}").get_data(as_text=True)
    chart = page[page.index('<section id="chart"'): page.index('<section id="method"')]
    assert name in chart and "keep facts" not in chart


def test_a_new_price_from_the_panel_resends_the_bill_but_not_the_chart_nor_the_form(client):
    came_from = {"HX-Request": "true", "HX-Target": "compare-panel", "HX-Current-URL": "http://localhost/compare/long-haul?call=40"}
    rebilled = client.get("/compare/long-haul?call=40&cache=anthropic", headers={**came_from, "HX-Trigger": "compare-controls"})
    body = rebilled.get_data(as_text=True)
    assert rebilled.headers["HX-Reswap"] == "none" and rebilled.headers["HX-Push-Url"].endswith("?call=40&cache=anthropic")
    assert 'id="verdict"' in body and 'id="columns"' in body and "Anthropic" in body
    assert 'id="chart"' not in body and 'id="compare-controls"' not in body
    stepped = client.get("/compare/long-haul?call=41", headers={**came_from, "HX-Trigger": "compare-next"}).get_data(as_text=True)
    assert 'id="chart"' in stepped and 'id="compare-controls"' in stepped and 'id="verdict"' not in stepped
    # Every part of the panel is there, out of band, as the full page draws it.
    full = client.get("/compare/long-haul?call=40&cache=anthropic").get_data(as_text=True)
    for part in re.findall(r'<section id="(?:verdict|columns)".*?</section>', body, re.S):
        assert part.replace(' hx-swap-oob="true"', "") in full


@pytest.mark.parametrize(
    "path,expected",
    [
        ("/compare/tool-pairs?lang=fr", "1 requête refusée, dès l'appel 5"),
        ("/compare/long-haul?lang=fr", "3 requêtes refusées, dès l'appel 21"),
        ("/compare/tool-pairs", "1 request refused, from call 5"),
    ],
)
def test_refused_requests_are_counted_with_the_right_plural(client, path, expected):
    """naive-drop's column: "1 refusées" was French for every count."""
    page = client.get(path).get_data(as_text=True).replace("&#39;", "'")
    assert expected in page


# --- The page at a glance (issue 33) ---------------------------------------------------------

GLANCE = re.compile(r'<li class="column glance__card[^>]*>\s*<h3[^>]*>\s*<a class="column__link" href="[^"]*" data-strategy="([^"]+)"')


def fold(html: str, fold_id: str) -> str:
    """The markup of one <details> of the page, from its tag to its end."""
    start = html.index(f'<details id="{fold_id}"')
    return html[start : html.index("</details>\n", html.index("</summary>", start))]


@pytest.mark.parametrize("scenario_id", ["bike-shop", "coding-agent", "long-haul"])
def test_the_page_opens_on_truncate_drop_and_summarize_and_the_verdicts_pick(client, scenario_id):
    html = client.get(f"/compare/{scenario_id}").get_data(as_text=True)
    winner = compare(open_scenario(scenario_id)).verdict.winner
    assert GLANCE.findall(html) == list(dict.fromkeys(["truncate", "drop", "summarize", winner]))
    # The verdict, then those cards, then the chart, then the folds.
    order = [html.index(part) for part in ('id="verdict"', 'id="glance"', 'id="chart"', 'id="every-strategy"')]
    assert order == sorted(order)


def test_a_sessions_own_harness_is_among_the_cards_the_page_opens_on(client):
    session = Path(__file__).parent / "fixtures/sessions/claude-code/spotter-ae4a77f8-agent-acompact-946d2b.jsonl"
    link = client.post("/transcripts", data={"transcript": session.read_text()}).headers["Location"]
    html = client.get(link.replace("/play/", "/compare/")).get_data(as_text=True)
    assert GLANCE.findall(html)[:4] == ["truncate", "drop", "summarize", "claude-code"]


def test_every_strategy_the_table_call_by_call_and_the_method_are_in_the_page_without_javascript(client):
    """One click away, in <details> (which opens without a script), never fetched later: the
    page as served holds every column in full, the figures of every call and the method."""
    html = client.get("/compare/bike-shop?call=5").get_data(as_text=True)
    comparison = compare(SCENARIO)
    every = fold(html, "every-strategy")
    assert every.count('<li class="column') == len(comparison.columns) and "hx-get" not in every
    for column in comparison.columns:
        assert f'data-strategy="{column.key}"' in every
    table = fold(html, "call-figures")
    assert table.count("<tr") == comparison.call_count + 1 and '<tr class="is-current">' in table
    assert "Prefixes are compared message by message" in fold(html, "method-notes")
    assert len(GLANCE.findall(html)) < len(comparison.columns)
    # The twins keep every strategy too.
    assert len(client.get("/compare/bike-shop.json?call=5").get_json()["strategies"]) == len(comparison.columns)
    assert len(client.get("/compare/bike-shop.csv?call=5").get_data(as_text=True).splitlines()) == len(comparison.columns) + 1


def test_the_verdicts_head_opens_the_page_and_its_lines_strategy_by_strategy_are_folded(client):
    html = client.get("/compare/coding-agent").get_data(as_text=True)
    verdict = html[html.index('<section id="verdict"') : html.index("</section>", html.index('<section id="verdict"'))]
    head, folded = verdict.split('<details class="verdict__why">')
    assert "Cheapest safe choice: clear-tool-results" in head and "loses a critical fact" not in head
    assert "truncate loses a critical fact (the nightly" in folded


@pytest.mark.parametrize("kind", ["compare", "sweep"])
def test_projector_mode_answers_and_offers_its_way_back(client, kind):
    html = client.get(f"/{kind}/bike-shop?projector=1").get_data(as_text=True)
    assert re.search(r'<div class="compare[^"]* projector"', html)
    back = re.search(r'<a id="projector-toggle" href="([^"]+)"', html).group(1)
    assert "projector" not in back and client.get(back).status_code == 200
    plain = client.get(f"/{kind}/bike-shop").get_data(as_text=True)
    assert not re.search(r'<div class="compare[^"]* projector"', plain)
    assert "projector=1" in re.search(r'<a id="projector-toggle" href="([^"]+)"', plain).group(1)


@pytest.mark.parametrize("kind", ["compare", "sweep"])
def test_the_play_pages_path_spelling_of_projector_mode_leads_to_the_page(client, kind):
    moved = client.get(f"/{kind}/bike-shop/projector=1;keep=1?call=3")
    assert moved.status_code == 301
    assert urlparse(moved.headers["Location"]).path == f"/{kind}/bike-shop"
    assert parse_qs(urlparse(moved.headers["Location"]).query) == {"call": ["3"], "keep": ["1"], "projector": ["1"]}
    assert client.get(f"/{kind}/bike-shop/nonsense").status_code == 404


@pytest.mark.parametrize("page", ["/compare/bike-shop", "/compare/bike-shop.json", "/sweep/bike-shop", "/sweep/bike-shop.json"])
@pytest.mark.parametrize("line", ["alert=0.4", "target=0.6"])
def test_an_alert_line_or_target_set_by_hand_gives_way_to_a_products_lower_line(client, page, line):
    """Claude Code's own line on the bike shop's 8,000-token window is 1%: a hand-set alert
    line or target above it is turned off in its column (the comparison and the sweep answered
    500), and the column's link opens its play view."""
    answer = client.get(f"{page}?{line}")
    assert answer.status_code == 200, answer.get_data(as_text=True)[:500]
    if page.endswith(".json"):
        name, value = line.split("=")
        assert answer.get_json()["settings"][name] == float(value)
    else:
        links = [unescape(link) for link in re.findall(r'href="(/play/bike-shop[^"]*claude-code[^"]*)"', answer.get_data(as_text=True))]
        assert links and all(client.get(link).status_code == 200 for link in links)
