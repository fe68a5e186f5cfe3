"""A step sends only what changed, in Chromium: the bytes a key press fetches, growing lists that
append and end up as a fresh page draws them, no motion without a change of the stack, and
errors where the request came from."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest
from playwright.sync_api import expect

# A step's answer against the full page at the same call (issue 10's goals: 25% and 15%, not
# reached). Both steps compact, so the well is resent whole: every block a link that carries
# the call and is named for screen readers (docs/benchmarks.md gives the bytes, part by part).
# The bounds are what this design reaches (46% and 24% measured), with a small margin.
STEP_SHARE = {("bike-shop", 4): 0.50, ("long-haul", 39): 0.27}


def heading(page):
    return page.locator("#stepper .where .big")


def at_call(page, number: int) -> None:
    """The page shows call `number` and its URL says so, as a person waits before the next key."""
    expect(heading(page)).to_have_text(f"Call {number}")
    expect(page).to_have_url(re.compile(rf"[?&]call={number}(&|$)"))


def step_bytes(page, key: str) -> tuple[int, list[str]]:
    """Press `key` and add up the bodies of every response it brings."""
    bodies: list[tuple[str, int]] = []

    def record(response) -> None:
        # The page's own requests; the browser re-reading the tab's icon after a pushed URL is not.
        if response.request.resource_type in ("document", "xhr", "fetch"):
            bodies.append((response.url, len(response.body())))

    page.on("response", record)
    with page.expect_response(lambda response: "/play/" in response.url):
        page.keyboard.press(key)
    page.wait_for_timeout(500)  # anything else the swap would fetch (nothing should)
    page.remove_listener("response", record)
    return sum(size for _, size in bodies), [url for url, _ in bodies]


@pytest.mark.parametrize("scenario,call", list(STEP_SHARE))
def test_a_key_press_fetches_a_fraction_of_the_page(page, live_server, scenario, call):
    page.goto(f"{live_server}/play/{scenario}?call={call}")
    expect(heading(page)).to_have_text(f"Call {call}")
    total, urls = step_bytes(page, "ArrowRight")
    expect(heading(page)).to_have_text(f"Call {call + 1}")
    assert len(urls) == 1 and f"call={call + 1}" in urls[0]  # one request, no lazy view loaded
    full = len(page.request.get(f"{live_server}/play/{scenario}?call={call + 1}").body())
    assert total / full <= STEP_SHARE[(scenario, call)], f"{total:,} of {full:,} bytes"


def lists(page) -> dict[str, str]:
    """The growing lists as the page shows them, markup normalized."""
    out = {}
    for selector in ("#events-before", "#events-now", "#bubbles", "#bar-fills"):
        # htmx marks what it just swapped in (htmx-added) until the swap settles, a moment later
        html = re.sub(r" htmx-(?:added|settling|swapping)\b", "", page.locator(selector).inner_html())
        out[selector] = re.sub(r"\s+", " ", re.sub(r">\s+<", "><", html)).strip()
    return out


def test_lists_grown_step_by_step_equal_a_fresh_page(page, live_server):
    page.goto(live_server + "/play/bike-shop")
    for number in range(2, 7):
        page.keyboard.press("ArrowRight")
        at_call(page, number)
    grown = lists(page)
    assert grown["#bar-fills"].count("<rect") == 6
    page.goto(live_server + "/play/bike-shop?call=6")
    fresh = lists(page)
    for selector in grown:
        assert grown[selector] == fresh[selector], selector


def test_the_scrubber_jump_resends_the_lists_whole(page, live_server):
    page.goto(live_server + "/play/long-haul?call=3")
    page.locator("#scrubber").fill("30")
    at_call(page, 30)
    jumped = lists(page)
    assert jumped["#events-before"].count('class="call-tag"') == 29
    page.locator("#step-prev").click()  # one back is a jump too
    at_call(page, 29)
    assert lists(page)["#events-before"].count('class="call-tag"') == 28
    page.goto(live_server + "/play/long-haul?call=29")
    assert lists(page)["#events-before"].count('class="call-tag"') == 28


def test_back_and_forward_after_appending_steps(page, live_server):
    page.goto(live_server + "/play/bike-shop?call=3")
    for number in (4, 5):
        page.keyboard.press("ArrowRight")
        at_call(page, number)
    page.go_back()
    expect(heading(page)).to_have_text("Call 4")
    page.wait_for_load_state("load")
    assert lists(page)["#bar-fills"].count("<rect") == 4
    page.go_forward()
    expect(heading(page)).to_have_text("Call 5")
    page.wait_for_load_state("load")
    assert lists(page)["#bar-fills"].count("<rect") == 5


def test_selecting_a_block_does_not_replay_the_hammer(page, live_server):
    page.goto(live_server + "/play/bike-shop?call=4")
    page.keyboard.press("ArrowRight")  # the hammer call: this one moves
    at_call(page, 5)
    well = page.locator("svg.well")
    expect(well).to_have_class(re.compile(r"\bcompacting\b"))
    assert "still" not in well.get_attribute("class")
    assert page.locator("svg.well .hammer").evaluate("el => getComputedStyle(el).animationName") != "none"
    page.locator("#block-m7").click()
    expect(page.locator("#detail")).to_contain_text("tool result: search_parts")
    expect(page).to_have_url(re.compile(r"block=m7"))
    expect(page.locator("svg.well")).to_have_class(re.compile(r"\bstill\b"))
    assert page.locator("svg.well .hammer").evaluate("el => getComputedStyle(el).animationName") == "none"
    assert page.locator("svg.well .ghosts rect").count() == 0 or not page.locator("svg.well .ghosts rect").first.is_visible()
    assert page.evaluate("document.activeElement.id") == "block-m7"


def test_an_opened_table_view_loads_and_follows_the_steps(page, live_server):
    page.goto(live_server + "/play/bike-shop?call=2")
    page.keyboard.press("ArrowRight")
    at_call(page, 3)
    page.locator(".table-view summary").click()
    table = page.locator("#table-view")
    expect(table).to_contain_text("Call 3: the request from the floor up")
    page.click("#step-next")  # (keys pressed on the summary keep their meaning: open, close)
    at_call(page, 4)
    table.scroll_into_view_if_needed()  # it loads when seen, as a person scrolls back down to read it
    expect(table).to_contain_text("Call 4: the request from the floor up")


@pytest.fixture
def server_with_a_store(tmp_path):
    """A live server whose transcript folder the test can empty."""
    from werkzeug.serving import make_server

    from webapp import create_app

    store = tmp_path / "transcripts"
    server = make_server("127.0.0.1", 0, create_app({"TESTING": True, "TRANSCRIPT_DIR": str(store)}), threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", store
    server.shutdown()


def test_an_error_on_the_comparison_panel_lands_there_in_french(page, server_with_a_store):
    base, store = server_with_a_store
    messages = [
        {"role": "system", "content": "Tu aides."},
        {"role": "user", "content": "Bonjour, une question."},
        {"role": "assistant", "content": "Oui ?"},
        {"role": "user", "content": "Et une autre."},
        {"role": "assistant", "content": "Voilà."},
    ]
    page.goto(base + "/transcripts/new?lang=fr")
    page.fill("#transcript", json.dumps(messages))
    page.click("#transcript-submit")
    expect(page).to_have_url(re.compile(r"/play/t-"))
    scenario = re.search(r"/play/(t-[0-9a-f]+)", page.url).group(1)
    page.goto(f"{base}/compare/{scenario}?call=1&lang=fr")
    expect(page).to_have_title(re.compile(r"^Comparer"))
    for stored in Path(store).rglob(f"{scenario}*"):  # its file deleted behind the store's index
        stored.unlink()
    page.click("#compare-next")
    problem = page.locator("#compare-panel .problem")
    expect(problem).to_contain_text("410 · Retirée")  # in the page's language
    expect(problem).to_contain_text(scenario)
    expect(page).to_have_url(re.compile(rf"/compare/{scenario}\?call=1&lang=fr$"))  # the failed step is not pushed
