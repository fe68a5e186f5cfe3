"""The comparison's column "as recorded" (core/analysis/as_recorded.py): what the harness
really sent by the provider's own count, beside the strategies, never the verdict."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from webapp.cli import main
from webapp.core.analysis.compare import compare
from webapp.core.analysis.pricing import Pricing, bill
from webapp.core.drawing.chart import request_chart
from webapp.core.engine.recorded import recorded_usage
from webapp.core.inputs.library import load_file, open_scenario

SESSIONS = Path(__file__).parent / "fixtures" / "sessions" / "claude-code"
CLAUDE = SESSIONS / "vibecodingtracker-claude-code-v1.0.95.jsonl"
SPOTTER = SESSIONS / "spotter-ae4a77f8-lines-1300-1700-compaction.jsonl"


def _pasted(client, path: Path) -> str:
    """The compare link of a session pasted into the transcript box."""
    response = client.post("/transcripts", data={"transcript": path.read_text()})
    assert response.status_code == 303
    return response.headers["Location"].split("?")[0].replace("/play/", "/compare/", 1)


def test_the_recorded_column_holds_the_recorded_usage_and_its_bill(client):
    link = _pasted(client, CLAUDE)
    data = client.get(link + ".json").get_json()
    recorded = data["as_recorded"]
    usage = recorded_usage(load_file(CLAUDE))
    assert recorded["family"] == "recorded" and recorded["strategy"] == "as recorded"
    # Each call's tokens are the provider's count; a call the log never answered has none, not 0.
    assert len(recorded["calls"]) == data["call_count"] == 32
    for item in recorded["calls"]:
        figure = usage.get(item["call"])
        assert item["tokens"] == (figure.input_tokens if figure else None)
        assert item["cached"] == (figure.cached_tokens if figure else None)
    assert recorded["calls"][-1]["tokens"] is None and recorded["tokens_at_call"] is None
    assert recorded["recorded_calls"] == 31
    sent = sum(u.input_tokens for u in usage.values())
    cached = sum(u.cached_tokens or 0 for u in usage.values())
    assert recorded["sent_total"] == sent and recorded["cached_total"] == cached
    # A Claude session is billed at Anthropic's prices by default (provider_prices.py).
    by_hand = bill(Pricing(cache="anthropic", price=3.0, output_price=15.0, cached_share=0.1), sent, cached, 0, 0)
    assert recorded["bill_usd"] == round(by_hand.cost, 6) and recorded["uncached_total"] == sent - cached
    # Unknowns stay unknown, and it is no strategy: never the winner, never among the strategies.
    assert recorded["facts_lost"] is None and recorded["valid_requests"] is None and recorded["written_total"] is None
    assert data["verdict"]["winner"] != "as recorded"
    assert all(row["family"] != "recorded" for row in data["strategies"])
    assert "as recorded" not in " ".join(data["verdict"]["text"])


def test_the_page_and_the_csv_show_it_apart(client):
    link = _pasted(client, CLAUDE)
    page = client.get(link + "?call=1").get_data(as_text=True)
    assert "As recorded: what the harness really sent, by the provider's own count" in page
    assert 'id="col-as-recorded"' in page and "15,257" in page
    assert "Cache writes are not in the record" in page
    last = client.get(link).get_data(as_text=True)
    assert "Nothing recorded for this call." in last
    rows = list(csv.DictReader(io.StringIO(client.get(link + ".csv").get_data(as_text=True))))
    assert [row["family"] for row in rows].count("recorded") == 1 and rows[-1]["strategy"] == "as recorded"
    assert rows[-1]["facts_lost"] == "" and rows[-1]["tokens_at_call"] == ""


def test_the_harness_compaction_is_counted_in_the_column(client):
    data = client.get(_pasted(client, SPOTTER) + ".json").get_json()
    recorded = data["as_recorded"]
    assert recorded["compactions"] == len(recorded["harness_compactions"]) == 1
    assert recorded["harness_compactions"][0]["before_call"] == 1


def test_overflows_are_counted_against_the_window(client):
    link = _pasted(client, CLAUDE)
    recorded = client.get(link + ".json?window=20000").get_json()["as_recorded"]
    assert recorded["overflow_calls"] == [item["call"] for item in recorded["calls"] if (item["tokens"] or 0) > 20000]
    assert recorded["overflows"] == len(recorded["overflow_calls"]) > 0


def test_a_lesson_has_no_such_column(client):
    data = client.get("/compare/bike-shop.json").get_json()
    assert "as_recorded" not in data
    assert "as recorded" not in client.get("/compare/bike-shop").get_data(as_text=True).lower()


def test_the_cli_prints_it_apart(capsys):
    assert main(["compare", str(CLAUDE)]) == 0
    out = capsys.readouterr().out
    section = out.split("as recorded (", 1)[1]
    assert "never the verdict" in section.splitlines()[0] and "31 of 32 calls recorded" in section.splitlines()[0]
    row = next(line for line in section.splitlines() if line.strip().startswith("as recorded"))
    assert "none" in row  # call 32 recorded no figure
    usage = recorded_usage(load_file(CLAUDE))
    assert f"{sum(u.input_tokens for u in usage.values()):,}" in row


def test_the_chart_draws_a_point_at_each_recorded_call_only():
    scenario = load_file(CLAUDE)
    chart = request_chart(compare(scenario), 1)
    usage = recorded_usage(scenario)
    assert [(p.call, p.tokens) for p in chart.recorded.points] == [(n, usage[n].input_tokens) for n in sorted(usage)]
    assert chart.recorded_at(32) is None and chart.drawn[-1] is chart.recorded
    assert chart.top_tokens >= max(u.input_tokens for u in usage.values())
    assert request_chart(compare(open_scenario("bike-shop")), 1).recorded is None
