"""The sweep: every strategy over a range of lines and KEEP values. Each point is the
comparison's own column at that line and KEEP, the advice is the cheapest safe point, bad
ranges are refused, and the page, its twins and the command line say the same."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from urllib.parse import urlencode, urlparse

import pytest
from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

from tests.links import link_state
from webapp.cli import main
from webapp.core.analysis.compare import compare
from webapp.core.analysis.pricing import parse_pricing
from webapp.core.analysis.sweep import SWEPT, SweepPoint, SweepRange, check_range, point_settings, range_problems, sweep
from webapp.core.engine.replay import replay
from webapp.core.engine.replays import Replays
from webapp.core.inputs.library import open_scenario
from webapp.core.settings import SettingsError
from webapp.core.engine.strategy_catalog import STRATEGIES

BIKE = open_scenario("bike-shop")
SESSION = Path(__file__).parent / "fixtures" / "sessions" / "codex" / "empire-of-bits-codex-session-a.jsonl"
SMALL = SweepRange(60, 90, 10, (1, 2))
SMALL_QUERY = "line_from=60&line_to=90&line_step=10&keeps=1,2"
# Kept across the examples below, as the server keeps them across requests: a replay one sweep
# made must be right for every other that finds it.
KEPT = Replays()


@pytest.fixture(scope="module")
def bike_sweep():
    return sweep(BIKE, span=SMALL)


@hypothesis_settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(["bike-shop", "summary-forgets", "tool-pairs", "receipt", "harnesses"]),
    line=st.integers(10, 20).map(lambda n: n * 5),
    keep=st.integers(1, 4),
)
def test_each_point_is_the_comparisons_column_at_its_line_and_keep(name, line, keep):
    """Whatever the sweep shares between its replays, and with the sweeps before it, a point
    has the figures a comparison made from scratch gives at the same settings (every replay
    its own)."""
    scenario = open_scenario(name)
    result = sweep(scenario, span=SweepRange(line, line, 5, (keep,)), replays=KEPT)
    fresh = compare(scenario, point_settings(scenario.settings, line / 100, keep), fixed=SWEPT)
    expected = {}
    for column in fresh.columns:
        expected.setdefault(round(column.settings.effective_threshold, 6), {})[column.key] = SweepPoint.of(column)
    got = {}
    for point in result.points:
        got.setdefault(round(point.line, 6), {})[point.key] = point
    assert got == expected


def test_a_chat_that_never_reaches_a_line_gets_nones_figures_at_it():
    """The shortcut for lines never reached: the request sizes are those of "none", and the
    figures those of a replay made in full."""
    scenario = open_scenario("real-window")  # a 128,000-token window the chat never nears
    result = sweep(scenario, span=SweepRange(50, 60, 10, (2,)))
    plain = replay(scenario, scenario.settings.model_copy(update={"strategy": "none"}))
    for point in result.points:
        if point.strategy in ("truncate", "drop", "summarize"):
            assert point.sent == plain.calls[-1].sent_total and point.compactions == 0


def test_the_advice_is_the_cheapest_safe_point(bike_sweep):
    best = bike_sweep.recommendation.best
    safe = [point for point in bike_sweep.points if point.safe]
    assert best in safe
    assert all(best.bill <= point.bill + 1e-12 for point in safe)
    # Safe is what the verdict calls recommendable: naive-drop may break tool pairs, never safe.
    assert not any(point.safe for point in bike_sweep.points if point.strategy == "naive-drop")


def test_the_advice_says_how_far_it_is_from_the_current_settings(bike_sweep):
    advice = bike_sweep.recommendation
    current = advice.current
    assert (current.strategy, current.line, current.keep) == ("truncate-drop", 0.8, 2)
    assert advice.saving == pytest.approx(current.bill - advice.best.bill)
    for name, (now, then) in advice.changes.items():
        assert now != then
        assert then == (advice.best.line if name == "threshold" else getattr(advice.best.settings, name))
    assert "strategy" in advice.changes or advice.best.strategy == "truncate-drop"


def test_settings_as_cheap_as_the_cheapest_safe_point_are_the_advice():
    """On a session that never nears its million-token window, every safe point costs the
    same: nothing to change."""
    scenario = open_scenario(str(SESSION.parent.parent / "claude-code" / "spotter-ae4a77f8-lines-1300-1700-compaction.jsonl"))
    advice = sweep(scenario, span=SweepRange(50, 90, 20, (2,))).recommendation
    assert advice.current.safe and advice.best == advice.current and advice.changes == {}


def test_the_advice_never_changes_the_keep_of_a_product_that_draws_its_own():
    scenario = open_scenario("coding-agent")
    advice = sweep(scenario, span=SweepRange(75, 95, 10, (1, 2, 3))).recommendation
    assert STRATEGIES[advice.best.strategy].keep_rule  # LangChain's summarization, on this lesson
    assert "keep" not in advice.changes and advice.best.keep == scenario.settings.keep  # the current KEEP, among equal bills


def test_unsafe_points_are_those_the_verdict_faults(bike_sweep):
    for point in bike_sweep.points:
        faulty = point.overflows or point.invalid or point.no_room or point.facts_lost
        assert not (faulty and point.safe)


def test_a_harness_runs_at_the_line_swept_unless_its_product_only_lowers_it(bike_sweep):
    gemini = {point.line for point in bike_sweep.points if point.strategy == "gemini-cli"}
    assert gemini == {0.6, 0.7, 0.8, 0.9}
    codex = {point.line for point in bike_sweep.points if point.strategy == "codex-cli"}
    assert codex == {0.6, 0.7, 0.8, 0.9}  # its default is 90%: 90% asked stays 90%
    assert max(point.line for point in sweep(BIKE, span=SweepRange(90, 95, 5, (2,))).points if point.strategy == "codex-cli") == 0.9


@pytest.mark.parametrize(
    "span, words",
    [
        (SweepRange(90, 50, 5), "line_from (90) must not be above line_to (50)"),
        (SweepRange(0, 50, 5), "line_from: got 0, expected a whole number from 5 to 100"),
        (SweepRange(50, 101, 5), "line_to: got 101, expected a whole number from 5 to 100"),
        (SweepRange(50, 95, 0), "line_step: got 0, expected a whole number from 1 to 50"),
        (SweepRange(5, 100, 1), "96 lines asked: at most 20"),
        (SweepRange(50, 95, 5, (1, 2, 3, 4, 5, 6)), "keeps: 6 values asked, at most 5"),
        (SweepRange(50, 95, 5, (0,)), "keeps: got 0, expected whole numbers from 1 to 1000"),
    ],
)
def test_a_range_out_of_bounds_is_refused_with_what_is_accepted(span, words):
    assert range_problems(span)
    with pytest.raises(SettingsError, match=re.escape(words)):
        check_range(span)


def test_the_default_range_is_50_to_95_by_5_at_half_the_same_and_double_keep():
    span = check_range(SweepRange())
    assert span.lines == [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]
    assert span.keep_values(BIKE.settings) == [1, 2, 4]


def test_an_alert_line_or_target_above_a_swept_line_gives_way():
    workshop = open_scenario("workshop-manuals")  # alert 80%, target 85%, line 90%
    settings = point_settings(workshop.settings, 0.6, 2)
    assert (settings.threshold, settings.alert, settings.target) == (0.6, 0, 0)


# --- The page and its twins ------------------------------------------------------------------


def test_the_page_shows_the_advice_the_chart_and_every_point_as_a_link(client):
    response = client.get("/sweep/bike-shop?line_from=60&line_to=90&line_step=10&keeps=1,2")
    assert response.status_code == 200
    html = response.get_data(as_text=True)
    result = sweep(BIKE, span=SMALL)
    best = result.recommendation.best
    assert "Cheapest safe point: " + best.strategy in html
    assert 'class="compare-chart__svg compare-chart__svg--wide"' in html
    links = re.findall(r'<a href="([^"]+)" data-point="([^"]+)"', html)
    # A point at each line asked: a product that lowers the line gives its own line's point there.
    assert {point for _, point in links} == {f"{key}@{line:g}/{keep}" for key, keep, line in result.given}
    for href, point in links:
        key, rest = point.split("@")
        line, keep = rest.split("/")
        path, query = link_state(href)
        assert path == "/play/bike-shop"
        assert query.get("strategy", "truncate-drop") == key.split("+")[0]
        # Ollama's line is num_ctx, whatever the threshold: one point at every line.
        assert float(query.get("threshold", 0.8)) == pytest.approx(float(line)) or key.startswith(("codex", "claude", "ollama"))
        assert int(query.get("keep", 2)) == int(keep) or key.split("+")[0] in {
            "codex-cli", "gemini-cli", "claude-code", "anthropic-compaction", "openhands-summarizing", "openhands-masking", "langchain-summarization", "ollama",
        }


def test_a_point_links_to_a_play_view_with_the_same_bill(client):
    result = sweep(BIKE, span=SMALL)
    html = client.get("/sweep/bike-shop?line_from=60&line_to=90&line_step=10&keeps=1,2").get_data(as_text=True)
    best = result.recommendation.best
    href = re.search(rf'<a href="([^"]+)" data-point="{re.escape(best.key)}@{best.line:g}/{best.keep}"', html).group(1)
    path, state = link_state(href)
    assert path == "/play/bike-shop"
    data = client.get("/compare/bike-shop.json?" + urlencode(state)).get_json()
    column = next(c for c in data["strategies"] if c["key"] == best.key)
    assert column["bill_usd"] == pytest.approx(best.bill, abs=1e-6)


def test_json_and_csv_hold_every_point_and_the_advice(client):
    query = "?line_from=60&line_to=90&line_step=10&keeps=1,2"
    data = client.get("/sweep/bike-shop.json" + query).get_json()
    result = sweep(BIKE, span=SMALL)
    assert len(data["points"]) == len(result.points)
    assert data["range"] == {"line_from": 60, "line_to": 90, "line_step": 10, "lines": [0.6, 0.7, 0.8, 0.9], "keeps": [1, 2]}
    assert data["recommendation"]["best"]["key"] == result.recommendation.best.key
    assert data["recommendation"]["text"][0].startswith("Cheapest safe point")
    for row in data["points"]:  # each point's play view, with its settings
        assert link_state(row["play_url"])[1].get("strategy", "truncate-drop") == row["strategy"]
    response = client.get("/sweep/bike-shop.csv" + query)
    assert response.mimetype == "text/csv" and "attachment" in response.headers["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.get_data(as_text=True))))
    assert len(rows) == len(result.points)
    assert {"strategy", "line", "keep", "bill_usd", "sent_total", "cached_total", "compactions", "overflows", "invalid_requests", "facts_lost", "safe"} <= set(rows[0])


@pytest.mark.parametrize(
    "query, words",
    [
        ("line_from=90&line_to=50", "line_from (90) must not be above line_to (50)"),
        ("line_step=0", "line_step: got &#39;0&#39;"),
        ("keeps=a", "keeps: got &#39;a&#39;"),
        ("keeps=1,2,3,4,5,6", "keeps: got &#39;1,2,3,4,5,6&#39;"),
        ("line_from=5&line_to=100&line_step=1", "96 lines asked: at most 20"),
        ("window=5", "window: got &#39;5&#39;"),
    ],
)
def test_a_bad_range_is_a_400_that_says_what_is_accepted(client, query, words):
    for suffix in ("", ".json", ".csv"):
        response = client.get(f"/sweep/bike-shop{suffix}?{query}")
        assert response.status_code == 400
        assert words in response.get_data(as_text=True)


def test_an_unknown_scenario_is_a_404(client):
    assert client.get("/sweep/no-such-lesson").status_code == 404


def test_a_pasted_session_is_swept(client):
    response = client.post("/transcripts", data={"transcript": SESSION.read_text()})
    assert response.status_code in (302, 303)
    path = urlparse(response.headers["Location"]).path
    scenario_id = path.rsplit("/", 1)[-1]
    page = client.get(f"/sweep/{scenario_id}?keeps=2")
    assert page.status_code == 200
    data = client.get(f"/sweep/{scenario_id}.json?keeps=2").get_json()
    assert data["scenario"] == scenario_id and data["points"]


@pytest.mark.parametrize(
    "prices", [{"price": "5"}, {"price": "5", "output_price": "40"}, {"cache": "anthropic"}, {"cached_share": "0.2"}], ids=str
)
def test_a_new_price_re_prices_the_sweep_without_replaying(app, client, prices):
    """The sweep's replays are the server's, keyed by what is sent, not by prices: a new
    price, or another way to bill the prompt cache, gives the sweep made from scratch at
    those prices (other bills) and makes no replay, on the page as in its twins."""
    from webapp.web.services import replays

    first = client.get(f"/sweep/bike-shop.json?{SMALL_QUERY}").get_json()
    with app.app_context():
        made = replays().made
    assert made > 0
    data = client.get(f"/sweep/bike-shop.json?{SMALL_QUERY}&{urlencode(prices)}").get_json()
    fresh = sweep(BIKE, pricing=parse_pricing(prices), span=SMALL)
    assert [(row["key"], row["line"], row["keep"], row["bill_usd"]) for row in data["points"]] == [
        (point.key, round(point.line, 4), point.keep, round(point.bill, 6)) for point in fresh.points
    ]
    assert [row["bill_usd"] for row in data["points"]] != [row["bill_usd"] for row in first["points"]]
    assert data["recommendation"]["best"]["key"] == fresh.recommendation.best.key
    fragment = client.get(f"/sweep/bike-shop?{SMALL_QUERY}&{urlencode(prices)}&price=7", headers={"HX-Request": "true"})
    assert fragment.status_code == 200 and "$" in fragment.get_data(as_text=True)
    assert client.get(f"/sweep/bike-shop.csv?{SMALL_QUERY}&price=9").status_code == 200
    with app.app_context():
        assert replays().made == made


def test_a_new_price_re_prices_the_comparison_and_the_play_page_without_replaying(app, client):
    from webapp.web.services import replays

    assert client.get("/compare/bike-shop.json").status_code == 200
    assert client.get("/play/bike-shop?call=6").status_code == 200
    with app.app_context():
        made = replays().made
    cheap, dear = (client.get(f"/compare/bike-shop.json?price={price}").get_json() for price in (1, 4))
    assert [row["bill_usd"] for row in dear["strategies"]] != [row["bill_usd"] for row in cheap["strategies"]]
    assert client.get("/play/bike-shop?call=6&price=4&cache=anthropic").status_code == 200
    with app.app_context():
        assert replays().made == made


def test_the_play_page_and_the_comparison_link_to_the_sweep(client):
    for path in ("/play/bike-shop?call=3&keep=3", "/compare/bike-shop?keep=3"):
        html = client.get(path).get_data(as_text=True)
        assert re.search(r'id="open-sweep" href="/sweep/bike-shop\?keep=3"', html)


# --- The command line ------------------------------------------------------------------------


def test_the_cli_prints_a_table_per_keep_and_the_advice(capsys):
    assert main(["sweep", "bike-shop", "--line-from", "60", "--line-to", "90", "--line-step", "10", "--keeps", "1,2"]) == 0
    out = capsys.readouterr().out
    assert "keep 1:" in out and "keep 2:" in out
    best = sweep(BIKE, span=SMALL).recommendation.best
    assert f"cheapest safe point: {best.key} at line {best.line:.0%}" in out
    assert "naive-drop" in out and "x" in out.split("naive-drop")[1].splitlines()[0]


def test_the_cli_sweeps_a_real_session_as_json_and_csv(capsys):
    assert main(["sweep", str(SESSION), "--keeps", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["points"] and data["recommendation"]["current"] is not None
    assert main(["sweep", str(SESSION), "--keeps", "2", "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == len(data["points"])


def test_the_cli_counts_the_advices_compactions_in_words(capsys):
    assert main(["sweep", str(SESSION), "--window", "40000", "--keeps", "2"]) == 0
    advice = capsys.readouterr().out.split("cheapest safe point:")[1].splitlines()[0]
    count = int(advice.rsplit(", ", 1)[1].split()[0])
    assert advice.endswith(f"{count} compaction" if count == 1 else f"{count} compactions")


def test_the_cli_refuses_a_bad_range_in_one_line(capsys):
    assert main(["sweep", "bike-shop", "--line-from", "99", "--line-to", "50"]) == 2
    assert "line_from (99) must not be above line_to (50)" in capsys.readouterr().err
    assert main(["sweep", "bike-shop", "--keeps", "two"]) == 2
    assert "keeps: got 'two'" in capsys.readouterr().err


# --- Every strategy in the chart, the advice where the caption says (issue 33) ---------------


@pytest.fixture(scope="module")
def default_sweep():
    return sweep(BIKE)


def test_every_strategy_of_the_tables_is_drawn_in_the_chart(default_sweep):
    """On the bike shop's 8,000-token window claude-code's own line (the window less its
    33,000-token reserve) is 1%, below every line asked: it was in the tables only."""
    from webapp.core.drawing.sweep_chart import bill_chart

    assert any(point.key == "claude-code" and point.line < default_sweep.lines[0] for point in default_sweep.points)
    chart = bill_chart(default_sweep, lambda point: point.key)
    assert {key for series in chart.series for key in series.keys} == set(default_sweep.keys)
    claude = next(series for series in chart.series if "claude-code" in series.keys)
    assert [mark.line for mark in claude.marks] == default_sweep.lines and len({mark.y for mark in claude.marks}) == 1


def test_the_advice_is_ringed_where_the_chart_is_drawn(default_sweep):
    """The advice is at KEEP 1 and the bike shop's own KEEP is 2: the chart was at KEEP 2, and
    the caption promised a circled point that was not drawn."""
    from webapp.core.drawing.sweep_chart import bill_chart

    best = default_sweep.recommendation.best
    assert best.keep != BIKE.settings.keep
    chart = bill_chart(default_sweep, lambda point: point.key)
    assert chart.keep == best.keep and chart.best.point == best and chart.best.line == best.line


def test_the_tables_have_a_column_per_line_asked_and_mark_a_products_own_line(client, default_sweep):
    html = client.get("/sweep/bike-shop").get_data(as_text=True)
    tables = re.findall(r'<table class="sweep-table">.*?</table>', html, re.S)
    assert len(tables) == len(default_sweep.keeps)
    for table in tables:
        head = re.findall(r'<th scope="col">([^<]+)</th>', table)[1:]
        assert head == [f"{round(line * 100)}%" for line in default_sweep.lines]  # no lone 1% column
        claude = re.search(r"<tr><th scope=\"row\">claude-code.*?</tr>", table, re.S).group(0)
        assert "its own line: 1%" in claude and claude.count("is-lowered") == len(default_sweep.lines)
    assert "circled point is the advice" in html and 'class="sweep-best"' in html


def test_the_command_lines_table_has_the_pages_columns_and_marks_a_products_own_line(default_sweep):
    """The CLI's table had a lone 1% column that only claude-code filled: it now has the
    page's columns, one per line asked, and says where a product ran at its own line."""
    from webapp.sweep_command import sweep_table

    table = sweep_table(default_sweep)
    heads = [line.split()[1:] for line in table.splitlines() if line.strip().startswith("strategy")]
    assert heads and all(head == [f"{round(line * 100)}%" for line in default_sweep.lines] for head in heads)
    claude = [line for line in table.splitlines() if line.strip().startswith("claude-code")]
    assert len(claude) == len(default_sweep.keeps)
    assert all(row.count("↓") == len(default_sweep.lines) + 1 and "its own line: 1%" in row for row in claude)
