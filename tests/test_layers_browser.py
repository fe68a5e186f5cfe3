"""The manual's budget as a person sees it, in headless Chromium: pinning a block by clicking
it, the layers' bands beside the well and the metrics panel."""

from __future__ import annotations

import re

from playwright.sync_api import expect


def test_pin_a_block_by_clicking_it_then_unpin_it(page, live_server):
    page.goto(live_server + "/play/bike-shop?call=5")
    page.evaluate("window.stillTheSamePage = true")
    page.click("#block-m1")
    expect(page.locator("#detail-title")).to_contain_text("message 1 of the chat")
    page.click("#pin-toggle")
    expect(page.locator("#block-m1")).to_have_class(re.compile(r"\bpinned\b"))
    assert re.search(r"[/;?&]pin=m1([;?&]|$)", page.url)
    expect(page.locator("#facts")).to_contain_text("Pinned messages")
    expect(page.locator("#facts .pins")).to_contain_text("in the request, unchanged")
    expect(page.locator("svg.well .labels .pin")).to_have_count(1)
    expect(page.locator("#legend-panel")).to_contain_text("pinned: never compressed")
    # stepping keeps the pin
    page.click("#step-next")
    expect(page.locator("#stepper .where .big")).to_have_text("Call 6")
    assert re.search(r"[/;?&]pin=m1([;?&]|$)", page.url)
    expect(page.locator("#block-m1")).to_have_class(re.compile(r"\bpinned\b"))
    page.click("#pin-toggle")
    expect(page.locator("#pin-toggle")).to_contain_text("Pin this message")
    assert "pin=" not in page.url
    expect(page.locator("#block-m1")).not_to_have_class(re.compile(r"\bpinned\b"))
    assert page.evaluate("window.stillTheSamePage === true")  # htmx swaps, no page load


def test_pin_without_javascript(browser, live_server):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        page.goto(live_server + "/play/bike-shop?call=5&block=m1")
        page.click("#pin-toggle")
        assert re.search(r"[/;?&]pin=m1([;?&]|$)", page.url)
        expect(page.locator("#facts .pins")).to_contain_text("message 1 of the chat")
        page.click("#step-next")  # a link of only its query: the pin stays, from the address
        assert re.search(r"[/;?&]pin=m1([;?&]|$)", page.url) and "call=6" in page.url
        expect(page.locator("#facts .pins")).to_contain_text("message 1 of the chat")
    finally:
        context.close()


def test_the_metrics_panel_follows_the_call(page, live_server):
    page.goto(live_server + "/play/bike-shop?call=4")
    figures = page.locator("#metrics-figures")
    expect(figures).to_contain_text("compression_events")
    expect(figures.locator("div", has_text="compression_events").locator("dd")).to_have_text("0")
    page.click("#step-next")
    expect(figures.locator("div", has_text="compression_events").locator("dd")).to_have_text("1")
    expect(figures.locator("div", has_text="tokens_used_total").locator("dd")).to_have_text("3,087")


def test_the_layers_strip_sits_inside_the_well_beside_the_blocks_and_ends_with_the_stack(page, live_server):
    page.goto(live_server + "/play/bike-shop?call=5&strategy=by-layer")
    boxes = page.evaluate(
        """() => {
            const box = (element) => { const r = element.getBoundingClientRect(); return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };
            const well = document.querySelector('svg.well');
            return {
                wallLeft: box(well.querySelector('.wall-left')),
                wallRight: box(well.querySelector('.wall-right')),
                blocks: [...well.querySelectorAll('.true-blocks a[id^=block-] rect')].map(box),
                uses: [...well.querySelectorAll('.layers rect:not(.plan):not(.room)')].map((r) => ({...box(r), layer: r.classList[0], over: r.classList.contains('over'), stroke: getComputedStyle(r).stroke})),
                plans: [...well.querySelectorAll('.layers rect.plan, .layers rect.room')].map(box),
            };
        }"""
    )
    strip = [*boxes["uses"], *boxes["plans"]]
    blocks_left = min(block["left"] for block in boxes["blocks"])
    # inside the walls, left of every block: the blocks moved over to make room
    assert all(boxes["wallLeft"]["right"] <= band["left"] and band["right"] <= blocks_left for band in strip)
    assert max(block["right"] for block in boxes["blocks"]) <= boxes["wallRight"]["left"]
    # the request's layers end where the stack ends
    assert abs(min(band["top"] for band in boxes["uses"]) - min(block["top"] for block in boxes["blocks"])) < 1.5
    history = next(band for band in boxes["uses"] if band["layer"] == "history")
    assert history["over"] and history["stroke"] == "rgb(207, 42, 29)"  # outlined red: over its share
    expect(page.locator("#layers tr.over")).to_contain_text("conversation history")


def test_the_retrieval_lesson_plays_with_its_bands_and_metrics(page, live_server):
    page.goto(live_server + "/play/workshop-manuals?call=7")
    well = page.locator("svg.well")
    # the manual's three lines, and the retrieved pages in their layer's colour, as their band
    for line in ("level-alert", "threshold", "level-target"):
        expect(well.locator(f"rect.{line}")).to_be_visible()
    expect(page.locator("#block-m6")).to_have_class(re.compile(r"\bretrieval\b"))
    expect(well.locator(".layers rect.retrieval:not(.plan)")).to_have_class(re.compile(r"\bover\b"))
    expect(page.locator("#layers tr.over")).to_contain_text("retrieved documents")
    metrics = page.locator("#metrics-figures")
    figure = lambda key: metrics.locator("div", has_text=key).locator("dd").first  # noqa: E731
    expect(figure("compression_events")).to_have_text("0")
    # the hammer: by-layer compresses the oldest retrieved pages first; the metrics follow
    page.click("#step-next")
    expect(page.locator("#stepper .where .big")).to_have_text("Call 8")
    expect(figure("compression_events")).to_have_text("1")
    expect(figure("tokens_used_total")).to_have_text("2,297")
    expect(figure("context_utilization_pct")).to_have_text("76.6%")
    expect(page.locator("#block-m6")).to_have_class(re.compile(r"\btruncated\b"))
    # at the end the pinned safety rule is still sent, word for word
    page.click("#step-last")
    expect(page.locator("#stepper .where .big")).to_have_text("Call 10")
    expect(page.locator("#facts .pins")).to_contain_text("in the request, unchanged")
    expect(figure("compression_events")).to_have_text("2")
