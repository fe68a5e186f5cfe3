"""A lost fact looks lost, a fact not yet seen looks neutral, and the long lists open on the
page, as a person sees them in headless Chromium, stepping with the Next button."""

from __future__ import annotations

from playwright.sync_api import expect


def colour(locator) -> str:
    return locator.evaluate("element => getComputedStyle(element).color")


def test_stepping_onto_the_summary_that_forgets_turns_the_fact_lost_there_and_not_before(page, live_server):
    page.goto(live_server + "/play/summary-forgets?call=1")
    fact = page.locator("#facts ul.facts").first.locator("li.fact").first
    expect(fact).to_have_class("fact waiting")
    expect(fact).to_contain_text("not in the chat yet; needed from call 7")
    expect(fact.locator(".mark")).to_have_text("·")
    unseen = colour(fact)
    page.goto(live_server + "/play/summary-forgets?call=5")
    expect(fact).to_have_class("fact present")
    page.locator("#step-next").click()  # to call 6, where the summary folds the lookup away
    expect(page.locator(".where .big")).to_contain_text("6")
    expect(fact).to_have_class("fact lost")
    expect(fact).to_contain_text("lost at call 6; needed from call 7")
    expect(fact.locator(".mark")).to_have_text("✗")
    assert colour(fact) != unseen  # drawn apart from a fact not yet seen


def test_the_cache_paragraph_opens_from_its_one_line(page, live_server):
    page.goto(live_server + "/play/bike-shop?call=5")
    folded = page.locator("#narration details.narration-cost")
    expect(folded.locator("summary")).to_be_visible()
    expect(folded.locator("p")).to_be_hidden()
    height = folded.locator("summary").bounding_box()["height"]
    assert height < 3 * 22  # a line or two, not the paragraph
    folded.locator("summary").click()
    expect(folded.locator("p")).to_contain_text("The later the first change, the cheaper")
