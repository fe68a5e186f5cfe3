"""The comparison cards and chart at every size, in headless Chromium (issue 24, point 3): no
two texts of a card overlap, nothing scrolls sideways, and on a phone the chart fits its box,
the current call and every line's name in view."""

from __future__ import annotations

import pytest

from tests.conftest import SIZES

from webapp.core.model import LANGUAGES


# The text-bearing parts of a card: every element whose own text (not its children's) is shown.
CARD_TEXTS = """() => [...document.querySelectorAll('#columns .column')].map(card => {
    const texts = [...card.querySelectorAll('*')].filter(e =>
        [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())
        && !e.closest('.visually-hidden') && e.getClientRects().length);
    return texts.map(e => { const r = e.getBoundingClientRect();
        return {text: e.textContent.trim().slice(0, 40), tag: e.tagName, left: r.left, right: r.right, top: r.top, bottom: r.bottom}; });
})"""



def overlap(a: dict, b: dict) -> bool:
    return a["left"] < b["right"] - 0.5 and b["left"] < a["right"] - 0.5 and a["top"] < b["bottom"] - 0.5 and b["top"] < a["bottom"] - 0.5


def nested(a: dict, b: dict) -> bool:
    """One box inside the other: an element and the inline element it holds (a dt and its code)."""
    inside = lambda x, y: x["left"] >= y["left"] - 0.5 and x["right"] <= y["right"] + 0.5 and x["top"] >= y["top"] - 0.5 and x["bottom"] <= y["bottom"] + 0.5  # noqa: E731
    return inside(a, b) or inside(b, a)


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("width", SIZES)
def test_no_two_texts_of_a_comparison_card_overlap(sized, live_server, width, lang):
    sized.goto(f"{live_server}/compare/bike-shop?lang={lang}")
    sized.click("#every-strategy > summary")  # every card in full, one click away
    cards = sized.evaluate(CARD_TEXTS)
    assert len(cards) >= 7
    for texts in cards:
        assert any(t["tag"] == "A" and "JSON" in t["text"] for t in texts), "the card's request download is measured"
        for i, a in enumerate(texts):
            for b in texts[i + 1 :]:
                if not nested(a, b):
                    assert not overlap(a, b), f"{width} px, {lang}: {a['text']!r} is drawn over {b['text']!r}"
    scroll = sized.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, f"/compare/bike-shop in {lang} is {scroll} px wide at {width}"


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("width", [390])
def test_on_a_phone_the_chart_fits_its_box_with_its_legend(sized, live_server, width, lang):
    sized.goto(f"{live_server}/compare/bike-shop?lang={lang}")
    figure = sized.locator("#chart .compare-chart")
    sizes = figure.evaluate("e => [e.scrollWidth, e.clientWidth, e.getBoundingClientRect().right]")
    assert sizes[0] <= sizes[1] and sizes[2] <= width, f"the chart scrolls sideways: {sizes}"
    chart = sized.locator(".compare-chart__svg--narrow")
    box = chart.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= width
    current = sized.locator(".compare-chart__svg--narrow .chart-current").bounding_box()
    assert box["x"] <= current["x"] and current["x"] + current["width"] <= box["x"] + box["width"] + 0.5
    names = sized.locator(".chart-legend li")
    assert names.count() == sized.locator(".compare-chart__svg--narrow .chart-series").count() >= 2
    for i in range(names.count()):
        item = names.nth(i).bounding_box()
        assert item["x"] >= 0 and item["x"] + item["width"] <= width
    assert not sized.locator(".compare-chart__svg--wide").is_visible()
