"""The values the agent used again, as a person sees them in headless Chromium: the selected
block's detail and the facts panel."""

from __future__ import annotations

from playwright.sync_api import expect


def test_the_selected_block_says_which_of_its_values_the_agent_uses_again(page, live_server):
    page.goto(live_server + "/play/bike-shop?call=6")
    # The first tool result (get_order) brought in the wheel's name, which the replies of
    # calls 2 and 4 write again (its part number is an authored fact, checked as that).
    page.locator("svg.well a#block-m3").click()
    detail = page.locator("#detail .references-used")
    expect(detail).to_contain_text("Mavic Aksium 700c front wheel, quick release from this block is used again at calls 2, 4")
    assert "block=m3" in page.url
    facts = page.locator("#facts .references")
    # The return label the last tool result gives is in the reply of this very call: new, not "again".
    expect(facts).to_contain_text("RMA-20931: new in this request, and this call's reply writes it")
    expect(facts).not_to_contain_text("again")


def test_a_value_gone_before_its_use_is_marked_lost_in_the_facts_panel(page, live_server):
    # Claude Code's summary has replaced the test run's output (m3), and does not name the
    # failing file that the reply of call 5 names again.
    page.goto(live_server + "/play/coding-agent?call=5&strategy=claude-code&block=m3")
    lost = page.locator("#facts .references li.lost")
    expect(lost).to_contain_text("tests/test_billing.py")
    expect(lost).to_contain_text("gone from the request")
    expect(page.locator("#detail .references-used")).to_contain_text("with this strategy it is gone from the request at call 5")
