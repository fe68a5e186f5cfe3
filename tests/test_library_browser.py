"""The scenario library in a real browser: every scenario to its end under every strategy, the
"next thing that happens" control, a lesson visible at its call, and a pasted transcript."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from webapp.core.inputs.library import SCENARIOS_DIR
from webapp.core.inputs.library import load_library
from webapp.core.engine.strategy_catalog import STRATEGIES

LIBRARY = load_library(SCENARIOS_DIR)


def heading(page):
    return page.locator("#stepper .where .big")


@pytest.mark.parametrize("scenario_id", list(LIBRARY.scenarios))
def test_every_scenario_plays_to_its_end_under_every_strategy(page, live_server, scenario_id):
    calls = LIBRARY.get(scenario_id).call_count
    errors: list[str] = []
    page.on("response", lambda response: errors.append(f"{response.status} {response.url}") if response.status >= 400 and not response.url.endswith("/favicon.ico") else None)
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" and "Failed to load resource" not in message.text else None)
    for strategy in STRATEGIES:
        page.goto(f"{live_server}/play/{scenario_id}?call=1&strategy={strategy}")
        expect(heading(page)).to_have_text("Call 1")
        page.keyboard.press("End")  # the Last link, through HTMX
        expect(heading(page)).to_have_text(f"Call {calls}")
        expect(page.locator("svg.well")).to_be_visible()
        assert f"call={calls}" in page.url
        # the scenario's own strategy is its default, left out of the URL
        own = LIBRARY.get(scenario_id).settings.strategy
        assert f"strategy={strategy}" in page.url if strategy != own else "strategy=" not in page.url
    assert errors == []


def test_next_thing_that_happens_stops_where_the_lesson_is(page, live_server):
    page.goto(f"{live_server}/play/chars-lie?call=1")
    stops = []
    while "call=" in (page.locator("a#step-event").get_attribute("href") or ""):
        page.locator("a#step-event").click()
        page.wait_for_url(lambda url: f"call={stops[-1] if stops else 1}" not in url)
        stops.append(int(heading(page).inner_text().split()[-1]))
    assert stops == [2, 3, 6, 7]
    # The last call leads on to the next lesson, which opens at its first call.
    expect(page.locator("#step-event")).to_contain_text("Next lesson")
    page.locator("a#step-event").click()
    page.wait_for_url(lambda url: "/play/long-haul" in url)
    expect(heading(page)).to_have_text("Call 1")


def test_the_naive_dropper_lesson_is_on_screen_at_call_5(page, live_server):
    page.goto(f"{live_server}/play/tool-pairs?call=4")
    page.keyboard.press("ArrowRight")
    expect(heading(page)).to_have_text("Call 5")
    expect(page.locator("#events .kind-invalid_request")).to_contain_text("has no matching call")
    expect(page.locator("svg.well .orphan")).to_have_count(3)
    page.select_option("#f-strategy", "drop")
    expect(page.locator("#events .kind-invalid_request")).to_have_count(0)
    expect(page.locator("svg.well .orphan")).to_have_count(0)


def test_a_transcript_pasted_in_the_browser_replays(page, live_server):
    messages = [
        {"role": "system", "content": "You are a travel agent."},
        {"role": "user", "content": "Find me a flight from Lyon to Oslo on 3 March."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "f1", "type": "function", "function": {"name": "search_flights", "arguments": "{\"from\": \"LYS\", \"to\": \"OSL\"}"}}]},
        {"role": "tool", "tool_call_id": "f1", "content": json.dumps([{"flight": f"SK{n}", "price": 100 + n} for n in range(300)])},
        {"role": "assistant", "content": "The cheapest is SK0 at 100 euros."},
        {"role": "user", "content": "Book it."},
    ]
    page.goto(f"{live_server}/")
    page.click("#bring-transcript")
    page.fill("#transcript", json.dumps({"messages": messages}))
    page.click("#transcript-submit")
    page.wait_for_url("**/play/t-*")
    expect(heading(page)).to_have_text("Call 1")
    expect(page.locator("#stepper .of")).to_contain_text("of 3")
    page.keyboard.press("ArrowRight")
    expect(heading(page)).to_have_text("Call 2")
    expect(page.locator("svg.well")).to_contain_text("tool result: search_flights")
    page.fill("#f-window", "2000")
    page.press("#f-window", "Enter")
    expect(page.locator("#well-title .sub").first).to_contain_text("of 2,000 tokens")
    page.click("#step-last")
    expect(heading(page)).to_have_text("Call 3")
    expect(page.locator("#events")).to_contain_text("compact")
    link = page.url
    page.goto(link)  # the link works on its own
    expect(heading(page)).to_have_text("Call 3")


def test_a_broken_transcript_is_reported_in_the_browser(page, live_server):
    page.goto(f"{live_server}/transcripts/new")
    page.fill("#transcript", json.dumps([{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "x", "content": "{}"}]))
    page.click("#transcript-submit")
    expect(page.locator(".transcript-problems")).to_contain_text("messages[1].tool_call_id")
    expect(page.locator(".transcript-problems")).to_contain_text("has no matching call")
    expect(page.locator("#transcript")).to_have_value(json.dumps([{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "x", "content": "{}"}]))


def test_room_for_the_reply_comes_back_when_the_line_is_lowered(page, live_server):
    # The window, 4,096, is not a multiple of 100: the form must still accept it.
    page.goto(f"{live_server}/play/reply-room?call=5")
    expect(page.locator("#events .kind-no_room_for_reply")).to_be_visible()
    page.fill("#f-threshold", "0.8")
    page.press("#f-threshold", "Enter")
    expect(page.locator("#events .current")).to_contain_text("compact")
    expect(page.locator("#events .kind-no_room_for_reply")).to_have_count(0)
    assert "threshold=0.8" in page.url and "window=" not in page.url  # 4,096 is the scenario's own window
