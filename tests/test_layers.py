"""The manual's budget by layer: layers on messages (scenarios and transcripts), the budget,
tokens by layer at each call, the alert line and the target, pinned messages checked at every
call, and the metrics of a call."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webapp.core.analysis.compare import compare
from webapp.core.inputs.library import open_scenario
from webapp.core.analysis.layers import layer_use, request_layers
from webapp.core.model import LAYERS, MANUAL_KEYS, REQUEST_LAYERS, Budget
from webapp.core.analysis.metrics import call_metrics, replay_hits
from webapp.core.analysis.pricing import Pricing, bill
from webapp.core.engine.replay import replay
from webapp.core.inputs.lessons import parse_scenario_toml
from webapp.core.inputs.scenarios import ScenarioError
from webapp.core.inputs.transcripts import parse_transcript
from webapp.core.settings import Settings, SettingsError, parse_settings

SUPPORT = """
id = "layered"
title = "layered"
lesson = "x"
system = "You are the support assistant of a bike shop."

[settings]
window = 1000
threshold = 0.9
strategy = "by-layer"

[[tools]]
name = "search_docs"
description = "Search the shop's documentation."

[[chat]]
context = "<memory>The customer is Ada; her order is #4471.</memory>"
layer = "memory"

[[chat]]
user = "My front wheel arrived bent."

[[chat]]
context = '''Returns policy. A part damaged in transport is replaced free of charge within 30 days of
delivery; the customer keeps the box and the packing slip, and a courier collects the damaged
part at no cost. A part damaged after delivery is repaired at the workshop's rates. Refunds go
back to the card used for the order within 5 working days of the part's return.'''
layer = "retrieval"

[[chat]]
context = '''Wheels catalogue. The 28-inch front wheel of the city bikes is part WH-28F (aluminium
rim, 36 spokes, quick release); the rear wheel is WH-28R. Stock is checked daily at the Lyon
warehouse; a wheel in stock ships the same day when ordered before noon.'''
layer = "retrieval"

[[chat]]
assistant = "Sorry! It is replaced free."

[[chat]]
user = "Safety rule: never tell a customer to ride on a bent wheel."
pinned = true

[[chat]]
assistant = "Understood."

[[chat]]
user = "Is WH-28F in stock?"

[[chat]]
assistant = "Let me search."
tool_calls = [{ id = "c1", name = "search_docs", arguments = { q = "WH-28F stock" } }]

[[chat]]
tool = "c1"
layer = "retrieval"
content = "WH-28F: 4 in stock at the Lyon warehouse."

[[chat]]
assistant = "Yes, 4 are in stock."
"""


@pytest.fixture(scope="module")
def layered():
    return parse_scenario_toml(SUPPORT, "layered.toml")


def test_the_scenario_format_carries_layers_groups_and_pins(layered):
    assert layered.prefix_layers == ("system", "memory")
    assert layered.prefix[1] == {"role": "system", "content": "<memory>The customer is Ada; her order is #4471.</memory>"}
    by_id = {item.id: item for item in layered.script}
    assert [(i, by_id[i].layer, by_id[i].group) for i in ("m2", "m3", "m9")] == [
        ("m2", "retrieval", "g1"),
        ("m3", "retrieval", "g1"),
        ("m9", "retrieval", "g4"),
    ]
    assert by_id["m2"].message == {"role": "system", "content": by_id["m2"].message["content"]}
    assert by_id["m1"].layer == "history" and by_id["m4"].group == ""
    assert layered.pinned == frozenset({"m5"})
    assert layered.budget == Budget()


def test_a_bad_layer_or_budget_is_named_with_its_field():
    bad_layer = SUPPORT.replace('layer = "memory"', 'layer = "cache"', 1)
    with pytest.raises(ScenarioError) as error:
        parse_scenario_toml(bad_layer, "bad.toml")
    assert "chat[0].context.layer" in str(error.value) and "'memory' or 'retrieval'" in str(error.value)
    too_much = SUPPORT + "\n[budget]\nhistory = 0.9\nretrieval = 0.5\n"
    with pytest.raises(ScenarioError) as error:
        parse_scenario_toml(too_much, "greedy.toml")
    assert "budget" in str(error.value) and "more than the whole window" in str(error.value)
    unknown = SUPPORT + "\n[budget]\nrag = 0.2\n"
    with pytest.raises(ScenarioError, match=r"budget\.rag: unknown field"):
        parse_scenario_toml(unknown, "rag.toml")


def test_the_defaults_are_the_manuals_shares_of_its_200000_token_window():
    tokens = Budget().tokens(200_000)
    assert tokens == {
        "system": 2_000, "tools": 3_000, "memory": 5_000, "retrieval": 20_000,
        "history": 40_000, "reply": 10_000, "margin": 20_000, "free": 100_000,
    }


SHARES = st.fixed_dictionaries({layer: st.floats(0, 0.14) for layer in LAYERS})


@given(SHARES, st.integers(100, 10_000_000))
def test_budgets_and_free_room_add_up_to_the_window(shares, window):
    tokens = Budget(**shares).tokens(window)
    assert sum(tokens.values()) == window
    assert tokens["free"] >= 0
    assert all(window * shares[layer] - 1 < tokens[layer] <= window * shares[layer] + 1e-6 for layer in LAYERS)


@given(SHARES, st.integers(1, 5000), st.lists(st.integers(0, 3000), min_size=5, max_size=5))
def test_layers_and_free_room_add_up_to_the_window(shares, window, tokens):
    settings = Settings(window=max(100, window))
    request = dict(zip(REQUEST_LAYERS, tokens))
    uses, free = layer_use(settings, Budget(**shares), request)
    assert [use.layer for use in uses] == list(LAYERS)
    assert sum(use.tokens for use in uses) + free == settings.window
    for use in uses[:5]:
        assert use.over == (use.tokens > use.budget_tokens)
    # The reply's room and the margin are what the request leaves of theirs.
    left = settings.window - sum(tokens)
    reply, margin = uses[5], uses[6]
    assert reply.tokens == min(reply.budget_tokens, max(0, left))
    assert margin.tokens == min(margin.budget_tokens, max(0, left - reply.tokens))
    assert free == left - reply.tokens - margin.tokens


@pytest.mark.parametrize("counter", ["estimate", "cl100k_base", "o200k_base"])
def test_tokens_by_layer_add_up_to_the_request(layered, counter):
    result = replay(layered, parse_settings({"counter": counter, "window": 100_000}, layered.settings))
    for call in result.calls:
        layers = request_layers(result, call)
        assert list(layers) == list(REQUEST_LAYERS)
        assert sum(layers.values()) == call.tokens
        assert all(tokens >= 0 for tokens in layers.values())
    first, last = (request_layers(result, call) for call in (result.calls[0], result.calls[-1]))
    assert first["memory"] > 0 and first["retrieval"] > 0
    assert last["retrieval"] > first["retrieval"], "the search result joined the retrieval layer"
    assert (first["system"], first["memory"]) == (last["system"], last["memory"]), "fixed layers stay put"
    if counter == "estimate":
        assert first["tools"] == 0, "the seed's estimate does not see the tool definitions"
    else:
        assert first["tools"] > 0


def test_a_transcript_marks_layers_with_the_manuals_delimiters():
    transcript = {
        "messages": [
            {"role": "system", "content": "You are a support assistant."},
            {"role": "system", "content": "<memory>Ada prefers email.</memory>"},
            {"role": "user", "content": "Can I return a wheel?"},
            {"role": "developer", "content": "  <context>Returns within 30 days.</context>"},
            {"role": "system", "content": "Be brief. <context> is not at the start here."},
            {"role": "assistant", "content": "Yes, within 30 days."},
            {"role": "user", "content": "<context>a user's own text stays history</context>"},
        ]
    }
    scenario = parse_transcript(json.dumps(transcript), "pasted")
    assert scenario.prefix_layers == ("system", "memory")
    assert [(item.id, item.layer, item.group) for item in scenario.script] == [
        ("m1", "history", ""),
        ("m2", "retrieval", "g1"),
        ("m3", "history", ""),
        ("m4", "history", ""),
        ("m5", "history", ""),
    ]
    assert scenario.script[1].message == transcript["messages"][3], "the message is sent as given"


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"alert": 0.9}, "alert"),
        ({"alert": 0.95, "threshold": 0.9}, "alert"),
        ({"target": 0.8}, "target"),
        ({"target": 1}, "target"),
        ({"alert": -0.1}, "alert"),
        ({"pin": "m1,hello"}, "pin"),
        ({"pin": "m0"}, "pin"),
    ],
)
def test_bad_alert_target_or_pin_is_refused_with_what_is_accepted(values, field):
    with pytest.raises(SettingsError) as error:
        parse_settings(values)
    assert [name for name, _ in error.value.bad] == [field]
    assert str(error.value).startswith(f"{field}: got ")


def test_alert_target_and_pin_read_as_lines_and_ids():
    settings = parse_settings({"window": 10_000, "threshold": 0.9, "alert": 0.8, "target": 0.85, "pin": " m3, -m5 ,m3,m12"})
    assert (settings.limit, settings.alert_line, settings.aim) == (9000, 8000, 8500)
    assert settings.pin == "m3,-m5,m12"
    assert settings.pinned(frozenset({"m5", "m7"})) == frozenset({"m3", "m7", "m12"})
    off = Settings()
    assert (off.alert_line, off.aim) == (None, off.limit)


def test_bad_alert_is_a_400_naming_the_field(client):
    response = client.get("/play/bike-shop?alert=0.9")
    assert response.status_code == 400
    assert "alert: got &#39;0.9&#39;" in response.get_data(as_text=True)


def test_a_warning_at_the_alert_line_and_compaction_down_to_the_target(layered):
    settings = parse_settings({"window": 360, "alert": 0.7, "target": 0.75}, layered.settings)
    result = replay(layered, settings)
    for call in result.calls:
        warned = [event for event in call.events if event.kind == "warning"]
        assert bool(warned) == (settings.alert_line < call.tokens <= settings.limit)
        if call.compaction is not None and call.compaction.changed:
            assert call.compaction.tokens_before > settings.limit
    compacted = [call for call in result.calls if call.compaction and call.compaction.changed]
    assert compacted and all(call.tokens <= settings.aim for call in compacted)
    assert [(c.number, c.compaction.tokens_before, c.tokens, c.compaction.levels) for c in compacted] == [
        (4, 349, 164, ("retrieval", "drop"))
    ]
    # Without a target it stops as soon as the request is under the red line, as the reference
    # does: compressing the documents is enough, and the next request passes the line again.
    plain = replay(layered, settings.model_copy(update={"target": 0}))
    assert [(c.number, c.tokens, c.compaction.levels) for c in plain.calls if c.compaction] == [(4, 298, ("retrieval",))]
    no_alert = replay(layered, settings.model_copy(update={"alert": 0}))
    assert not any(event.kind == "warning" for call in no_alert.calls for event in call.events)


def test_each_call_checks_every_pinned_message_that_has_entered(layered):
    result = replay(layered, parse_settings({"window": 100_000, "pin": "m4"}, layered.settings))
    assert [tuple(status.id for status in call.pinned) for call in result.calls] == [(), ("m4", "m5"), ("m4", "m5"), ("m4", "m5")]
    assert all(status.present and status.unchanged for call in result.calls for status in call.pinned)
    unpinned = replay(layered, parse_settings({"window": 100_000, "pin": "-m5"}, layered.settings))
    assert all(call.pinned == () for call in unpinned.calls)


def test_the_manuals_metrics_of_a_call(layered):
    settings = parse_settings({"window": 330, "strategy": "truncate-drop", "counter": "o200k_base"}, layered.settings)
    result = replay(layered, settings)
    pricing = Pricing(cache="anthropic")
    comparison = compare(layered, settings, pricing)
    column = comparison.column("truncate-drop")
    hits = replay_hits(result, pricing)
    assert hits == column.hits
    compactions = 0
    for call in result.calls:
        metrics = call_metrics(result, call.number, pricing)
        assert metrics == call_metrics(result, call.number, pricing, hits)
        assert set(metrics) == {
            "tokens_used_total", "tokens_by_layer", "context_utilization_pct",
            "compression_events", "cache_hit_rate", "estimated_cost_usd",
        }
        assert list(metrics["tokens_by_layer"]) == ["system", "tools", "ltm", "rag", "history"]
        assert metrics["tokens_used_total"] == call.tokens == sum(metrics["tokens_by_layer"].values())
        assert metrics["context_utilization_pct"] == round(call.tokens / 330 * 100, 2)
        compactions += bool(call.compaction and call.compaction.changed)
        assert metrics["compression_events"] == compactions
        hit = hits[call.number - 1]
        assert metrics["cache_hit_rate"] == round(hit.cached / call.tokens, 4)
        assert metrics["estimated_cost_usd"] == round(bill(pricing, call.tokens, hit.cached, hit.written, 0).cost, 6)
    assert compactions >= 1
    assert sum(call_metrics(result, call.number, pricing)["estimated_cost_usd"] for call in result.calls) == pytest.approx(
        column.bill.cost, abs=1e-5
    )
    assert MANUAL_KEYS["memory"] == "ltm" and MANUAL_KEYS["retrieval"] == "rag"


def test_the_cache_hit_rate_of_a_long_chat():
    result = replay(open_scenario("long-haul"))
    hits = replay_hits(result, Pricing())
    rates = [call_metrics(result, call.number, hits=hits)["cache_hit_rate"] for call in result.calls]
    assert rates[0] == 0, "nothing is cached before the first request"
    assert max(rates) > 0.5
    for call, rate, hit in zip(result.calls, rates, hits):
        assert rate == round(hit.cached / call.tokens, 4)


@pytest.mark.parametrize("call", range(1, 7))
def test_the_overflow_notice_is_drawn_in_the_well(client, call):
    """by-layer's notice is a block of its own, not a script message: the well draws it (and
    the traces of dropped messages around it) without looking it up in the script."""
    response = client.get(f"/play/bike-shop?strategy=by-layer&window=1200&preview=0&call={call}")
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    assert ('id="block-n1"' in page) == (call >= 2)


def test_pinning_an_id_the_chat_does_not_have_is_said(layered):
    result = replay(layered, parse_settings({"pin": "m4,m40,-m41"}, layered.settings))
    assert result.warnings == ["Pinned ids that name no message of this chat: 2 (it has 10 messages, numbered from m1, the first request)."]
    assert replay(layered, parse_settings({"pin": "m4"}, layered.settings)).warnings == []


def test_the_command_line_json_has_layers_pins_and_metrics(capsys):
    from webapp.cli import main

    assert main(["replay", "workshop-manuals", "--json", "--strategy", "truncate-drop", "--pin=-m3"]) == 0
    calls = json.loads(capsys.readouterr().out)["calls"]
    last = calls[-1]
    assert last["metrics"]["tokens_used_total"] == last["tokens"] == sum(last["layers"].values())
    assert last["metrics"]["compression_events"] == 2 and last["pinned"] == []
    assert [block["id"] for block in last["blocks"] if block["layer"] == "retrieval"][:2] == ["m10", "m11"]
    assert main(["replay", "workshop-manuals", "--json"]) == 0
    last = json.loads(capsys.readouterr().out)["calls"][-1]
    assert last["pinned"] == [{"id": "m3", "present": True, "unchanged": True}]
    assert [block["id"] for block in last["blocks"] if block["pinned"]] == ["m3"]


def test_the_command_line_table_shows_tokens_by_layer_against_the_budget(capsys):
    from webapp.cli import main

    assert main(["replay", "workshop-manuals", "--layers"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[-5:] == ["system", "tools", "ltm", "rag", "history"]
    assert lines[8].split()[-5:] == ["47", "48", "35", "1,719*", "515"], "retrieval over its share from call 7"
    assert lines[-1].split() == ["budget", "60", "60", "90", "1,500", "840"]
