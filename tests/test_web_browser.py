"""What a person clicks and sees, in headless Chromium (Playwright)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

PLAY = "/play/bike-shop"


def heading(page):
    return page.locator("#stepper .where .big")


def at_call(page, number: int) -> None:
    """The page shows call `number` and its URL says so: htmx pushes the URL just after the
    swap, and a person's next key or click comes after that."""
    expect(heading(page)).to_have_text(f"Call {number}")
    # The first call is the default, left out of the links (a URL typed with call=1 says it too).
    expect(page).to_have_url(re.compile(r"^(?!.*[?&]call=(?!1(&|$)))" if number == 1 else rf"[?&]call={number}(&|$)"))


def csp_errors(page) -> list[str]:
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if "Content Security Policy" in message.text else None)
    return errors


def test_step_to_the_third_request_and_see_the_hammer(page, live_server):
    violations = csp_errors(page)
    page.goto(live_server + PLAY)
    expect(heading(page)).to_have_text("Call 1")
    # A marker on window survives HTMX swaps and dies with a full page load.
    page.evaluate("window.stillTheSamePage = true")
    for number in range(2, 6):
        page.click("#step-next")
        expect(heading(page)).to_have_text(f"Call {number}")
    assert page.evaluate("window.stillTheSamePage === true")
    assert re.search(r"[?&]call=5(&|$)", page.url)
    expect(page.locator("#stepper .of")).to_contain_text("request 3 of 3")
    expect(page.locator("svg.well .hammer")).to_be_visible()
    compact = page.locator("#events .call-group.current .kind-compact")
    expect(compact).to_contain_text("compact")
    expect(compact).to_contain_text("6,443 → 3,087 tokens")
    expect(page.locator("#bill")).to_contain_text("16,543")
    expect(page.locator("#call-summary")).to_contain_text("Compaction shrank the request from 6,443 to 3,087 tokens.")
    assert violations == []


def test_change_the_strategy(page, live_server):
    page.goto(live_server + PLAY + "?call=5")
    page.evaluate("window.stillTheSamePage = true")
    page.select_option("#f-strategy", "summarize")
    expect(page.locator("svg.well")).to_contain_text("summary of 3 messages")
    assert "strategy=summarize" in page.url and re.search(r"[?&]call=5(&|$)", page.url)
    assert page.evaluate("window.stillTheSamePage === true")
    page.fill("#f-window", "5000")
    page.press("#f-window", "Enter")
    expect(page.locator("#well-title .sub")).to_contain_text("of 5,000 tokens")
    assert "window=5000" in page.url


def test_a_permalink_opens_and_reloads_to_the_same_state(page, live_server):
    page.goto(live_server + PLAY + "?call=5&strategy=drop&keep=2&price=10")
    expect(heading(page)).to_have_text("Call 5")
    expect(page.locator("svg.well")).to_contain_text("3 dropped")
    page.reload()
    expect(heading(page)).to_have_text("Call 5")
    expect(page.locator("svg.well")).to_contain_text("3 dropped")
    expect(page.locator("#f-strategy")).to_have_value("drop")
    expect(page.locator("#f-price")).to_have_value("10")


def test_back_and_forward_restore_the_state(page, live_server):
    page.goto(live_server + PLAY + "?call=1")
    page.click("#step-next")
    at_call(page, 2)
    page.click("#step-next")
    at_call(page, 3)
    # Going back reloads the page (htmx keeps no history cache: refreshOnHistoryMiss). The next
    # back waits for that load, as htmx only hears popstate once its script has run.
    page.go_back()
    at_call(page, 2)
    expect(page.locator("#scrubber")).to_have_value("2")
    page.wait_for_load_state("load")
    page.go_back()
    at_call(page, 1)
    page.wait_for_load_state("load")
    page.go_forward()
    at_call(page, 2)


def test_step_with_the_keyboard(page, live_server):
    page.goto(live_server + PLAY + "?call=1")
    page.keyboard.press("ArrowRight")
    at_call(page, 2)
    page.keyboard.press("End")
    at_call(page, 6)
    page.keyboard.press("ArrowLeft")
    at_call(page, 5)
    page.keyboard.press("Home")
    at_call(page, 1)
    expect(page.locator(".keys")).to_contain_text("Space")


def test_play_advances_by_itself_and_space_pauses(page, live_server):
    page.goto(live_server + PLAY + "?speed=2")
    page.keyboard.press("Space")
    expect(heading(page)).to_have_text("Call 3", timeout=6000)
    page.keyboard.press("Space")
    expect(page.locator("#play-toggle")).to_contain_text("Play")
    stopped_at = heading(page).inner_text()
    page.wait_for_timeout(1600)
    expect(heading(page)).to_have_text(stopped_at)
    assert "play=1" not in page.url


def test_select_a_block_with_the_mouse_and_with_the_keyboard(page, live_server):
    page.goto(live_server + PLAY + "?call=5")
    page.locator("svg.well a[id^=block-].tool").first.click()
    detail = page.locator("#detail")
    expect(detail).to_be_visible()
    expect(detail).to_contain_text("tool result: get_order")
    expect(detail).to_contain_text("o200k_base")
    expect(detail).to_contain_text("[Truncated to save context")
    assert "block=m3" in page.url
    page.locator("svg.well a#block-floor").focus()
    page.keyboard.press("Enter")
    expect(detail).to_contain_text("You are the support assistant of a bike shop.")


def test_the_scrubber_jumps_to_a_call(page, live_server):
    page.goto(live_server + PLAY)
    page.locator("#scrubber").fill("4")
    expect(heading(page)).to_have_text("Call 4")
    page.get_by_role("link", name="Request 3 (call 5)").click()
    expect(heading(page)).to_have_text("Call 5")


def test_a_value_out_of_range_is_refused_with_a_message(page, live_server):
    page.goto(live_server + PLAY + "?call=2")
    page.fill("#f-keep", "0")
    page.press("#f-keep", "Tab")
    # The form's own limits stop it in the browser: nothing is sent, the field says why.
    assert page.locator("#f-keep").evaluate("el => el.validationMessage") != ""
    page.wait_for_timeout(300)
    assert "keep=0" not in page.url
    expect(heading(page)).to_have_text("Call 2")
    # A URL gets past the browser; the server says what was wrong and what is accepted.
    page.goto(live_server + PLAY + "?keep=0")
    expect(page.locator(".problem")).to_contain_text("keep: got '0', expected a whole number from 1 to 1000")


def test_reduced_motion_shows_a_still_picture(browser, live_server):
    context = browser.new_context(reduced_motion="reduce", viewport={"width": 1366, "height": 900})
    page = context.new_page()
    page.goto(live_server + PLAY + "?call=5")
    hammer = page.locator("svg.well .hammer")
    expect(hammer).to_be_visible()
    assert hammer.evaluate("el => getComputedStyle(el).animationName") == "none"
    settle = page.locator("svg.well .settle[transform]").first
    assert settle.evaluate("el => getComputedStyle(el).transform") == "none"
    context.close()


def test_the_page_works_without_javascript(browser, live_server):
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1366, "height": 900})
    page = context.new_page()
    page.goto(live_server + PLAY)
    expect(heading(page)).to_have_text("Call 1")
    page.click("#step-next")
    expect(heading(page)).to_have_text("Call 2")
    page.select_option("#f-strategy", "drop")
    page.locator("#controls button[type=submit]").click()
    expect(page.locator("#f-strategy")).to_have_value("drop")
    assert "strategy=drop" in page.url and "call=2" in page.url
    page.locator("#scrubber").fill("5")
    page.locator("#scrub button[type=submit]").click()
    expect(heading(page)).to_have_text("Call 5")
    expect(page.locator("svg.well")).to_contain_text("3 dropped")
    page.locator("svg.well .at-labels a").filter(has_text="user").first.click()
    expect(page.locator("#detail")).to_contain_text("Tokens under each counter")
    # the block's link is only its query: the settings the form sent stay, from the page's address
    expect(page.locator("#f-strategy")).to_have_value("drop")
    assert "strategy=drop" in page.url and "block=" in page.url
    page.click("#step-next")
    expect(heading(page)).to_have_text("Call 6")
    expect(page.locator("#f-strategy")).to_have_value("drop")
    context.close()


@pytest.mark.parametrize("path", ["/", PLAY + "?call=5&block=m3"])
def test_no_content_security_policy_violation(page, live_server, path):
    violations = csp_errors(page)
    page.goto(live_server + path)
    page.wait_for_timeout(300)
    assert violations == []


def test_focus_stays_on_the_control_that_was_used(page, live_server):
    page.goto(live_server + PLAY)
    page.locator("#step-next").focus()
    page.keyboard.press("Enter")
    expect(heading(page)).to_have_text("Call 2")
    assert page.evaluate("document.activeElement.id") == "step-next"
    page.locator("#block-m3").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#detail")).to_contain_text("tool result: get_order")
    assert page.evaluate("document.activeElement.id") == "block-m3"
    page.locator("#f-window").fill("9000")
    page.keyboard.press("Tab")
    expect(page.locator("#well-title .sub")).to_contain_text("of 9,000 tokens")
    assert page.evaluate("document.activeElement.id") == "f-model-window"


def test_the_real_window_lesson_in_the_browser(page, live_server):
    page.goto(live_server + "/play/real-window?call=6")
    expect(page.locator("svg.well .gulp")).to_contain_text("8,523 > 8,000")
    page.fill("#f-window", "8000")
    page.fill("#f-model-window", "0")
    page.keyboard.press("Enter")
    expect(page.locator("svg.well .hammer")).to_be_visible()
    expect(page.locator("svg.well .gulp")).to_have_count(0)
