"""The look at every size, in headless Chromium: a phone (390 px), a laptop (1280×800) and a
wide screen (1920 px), in every language. Nothing scrolls sideways, the bill's figures stay in
their card, starting autoplay moves nothing, and on a laptop the stack is in view."""

from __future__ import annotations

import re

import pytest

from tests.conftest import SIZES
from playwright.sync_api import expect

from tests.test_fit_browser import CUT_MENUS
from webapp.core.model import LANGUAGES

PAGES = [
    "/",
    "/play/bike-shop?call=5",
    "/play/real-window?call=6",
    "/play/reply-room?call=5",
    "/play/long-haul?call=40",
    "/play/bike-shop?call=5&block=m3",
    "/play/bike-shop?call=5&block=m1&pin=m1&alert=0.7&target=0.75",
    "/play/workshop-manuals?call=8&block=m3",
    "/play/workshop-manuals?call=10&strategy=truncate-drop&pin=-m3",
    "/compare/bike-shop?call=5",
    "/compare/long-haul?call=64",
    "/transcripts/new",
    "/glossary",
    "/play/bike-shop?keep=0",
]


def with_lang(path: str, lang: str) -> str:
    return f"{path}{'&' if '?' in path else '?'}lang={lang}"



def overflowing(page) -> list[str]:
    """Elements that reach past the right edge of the page, described for a failure message."""
    return page.evaluate(
        """() => {
            const width = document.documentElement.clientWidth;
            return [...document.querySelectorAll('body *')]
                .filter(e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.right > width + 0.5; })
                .slice(0, 5)
                .map(e => `${e.tagName.toLowerCase()}#${e.id}.${e.getAttribute('class') || ''} ends at ${Math.round(e.getBoundingClientRect().right)}`);
        }"""
    )


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("width", SIZES)
def test_no_page_scrolls_sideways(sized, live_server, width, lang):
    for path in PAGES:
        sized.goto(live_server + with_lang(path, lang))
        scroll = sized.evaluate("document.documentElement.scrollWidth")
        assert scroll <= width, f"{path} in {lang} is {scroll} px wide at {width}: {overflowing(sized)}"


def boxes(page, selector: str) -> list[dict]:
    return page.evaluate(
        """selector => [...document.querySelectorAll(selector)].map(e => {
            const r = e.getBoundingClientRect();
            return {text: e.textContent.trim(), left: r.left, right: r.right, top: r.top, bottom: r.bottom};
        })""",
        selector,
    )


def overlap(a: dict, b: dict) -> bool:
    return a["left"] < b["right"] - 0.5 and b["left"] < a["right"] - 0.5 and a["top"] < b["bottom"] - 0.5 and b["top"] < a["bottom"] - 0.5


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("width", SIZES)
def test_the_bills_figures_stay_apart_and_inside_their_card(sized, live_server, width, lang):
    sized.goto(live_server + with_lang("/play/bike-shop?call=5", lang))
    card = boxes(sized, "#bill")[0]
    figures = boxes(sized, "#bill .figures dd") + boxes(sized, "#bill .figures dt")
    assert len(figures) == 8
    for figure in figures:
        assert card["left"] <= figure["left"] and figure["right"] <= card["right"], f"{figure['text']!r} spills out of the bill"
    for i, a in enumerate(figures):
        for b in figures[i + 1 :]:
            assert not overlap(a, b), f"{a['text']!r} overlaps {b['text']!r}"


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("width", [390, 1280])
def test_the_picker_shows_every_language_beside_or_under_the_title(sized, live_server, width, lang):
    sized.goto(live_server + with_lang("/play/bike-shop", lang))
    brand = boxes(sized, "header.site .brand")[0]
    links = boxes(sized, "#languages a")
    assert len(links) == len(LANGUAGES)
    for link in links:
        assert 0 <= link["left"] and link["right"] <= width, f"{link['text']} is off screen"
        assert not overlap(link, brand), f"{link['text']} overlaps the title"
    tagline = boxes(sized, "header.site .tagline")[0]
    # A tagline squeezed into a one-word column is several times taller than it is wide.
    assert tagline["right"] - tagline["left"] > 0.5 * width


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("width", [390, 1280, 1920])
def test_starting_autoplay_moves_nothing(sized, live_server, width, lang):
    sized.goto(live_server + with_lang("/play/long-haul?call=3&speed=0.5", lang))
    sized.locator("#play-toggle").scroll_into_view_if_needed()  # under the well on a phone: the click would scroll
    before = {name: boxes(sized, selector)[0] for name, selector in [("toggle", "#play-toggle"), ("scrubber", "#scrubber"), ("well", "#well-panel")]}
    sized.click("#play-toggle")
    expect(sized).to_have_url(re.compile(r"[?&]play=1(&|$)"))
    after = {name: boxes(sized, selector)[0] for name, selector in [("toggle", "#play-toggle"), ("scrubber", "#scrubber"), ("well", "#well-panel")]}
    sized.click("#play-toggle")  # pause, so no step is left in flight when the page closes
    for name in before:
        for edge in ("left", "right", "top"):
            assert abs(before[name][edge] - after[name][edge]) <= 1, f"the {name}'s {edge} moved from {before[name][edge]} to {after[name][edge]}"
    scrubber = after["scrubber"]
    assert scrubber["right"] - scrubber["left"] >= min(300, width * 0.6), "the scrubber is squeezed"


KEY_CALLS = [
    "/play/bike-shop?call=1",
    "/play/bike-shop?call=5",
    "/play/bike-shop?call=6&strategy=none&window=5000",
    "/play/real-window?call=6",
    "/play/reply-room?call=5",
    "/play/summary-forgets?call=6",
    "/play/receipt?call=8",
    "/play/long-haul?call=18",
]


@pytest.mark.parametrize("path", KEY_CALLS)
@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("width", [1280])
def test_on_a_laptop_the_stack_and_the_hammer_are_in_view(sized, live_server, width, lang, path):
    sized.goto(live_server + with_lang(path, lang))
    parts = boxes(sized, "svg.well a[id^=block-] rect") + boxes(sized, "svg.well .hammer")
    assert parts, path
    lowest = max(part["bottom"] for part in parts)
    assert lowest <= SIZES[width], f"{path} in {lang}: the stack ends at {lowest}, below the fold"
    narration = boxes(sized, ".story")[0]
    assert narration["top"] < SIZES[width] / 2, f"{path} in {lang}: the story of the call starts at {narration['top']}"


WELLS = [*KEY_CALLS, "/play/long-haul?call=40", "/play/long-haul?call=64&strategy=none", "/play/bike-shop?call=5&strategy=drop&window=128000"]


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("width", SIZES)
def test_no_two_text_labels_of_the_well_overlap(sized, live_server, width, lang):
    for path in WELLS:
        sized.goto(live_server + with_lang(path, lang))
        texts = [box for box in boxes(sized, "svg.well text") if box["right"] > box["left"]]
        assert len(texts) >= 5, path
        for i, a in enumerate(texts):
            for b in texts[i + 1 :]:
                assert not overlap(a, b), f"{path} in {lang} at {width}: {a['text']!r} overlaps {b['text']!r}"


@pytest.mark.parametrize("width", [390, 1280])
def test_call_ones_blocks_can_be_selected(sized, live_server, width):
    sized.goto(live_server + "/play/bike-shop?call=1")
    blocks = sized.locator("svg.well a[id^=block-]")
    assert blocks.count() == 2  # the floor and the first request, drawn tall enough to click
    for box in boxes(sized, "svg.well a[id^=block-] rect"):
        assert box["bottom"] - box["top"] >= 20
    blocks.nth(1).click()
    expect(sized.locator("#detail")).to_be_visible()
    expect(sized).to_have_url(re.compile(r"[?&]block=m1(&|$)"))


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("width", [1280])
def test_projector_mode_is_a_link_kept_in_the_url(sized, live_server, width, lang):
    sized.set_viewport_size({"width": 1280, "height": 720})
    sized.goto(live_server + with_lang("/play/bike-shop?call=4", lang))
    sized.click("#projector-toggle")
    expect(sized).to_have_url(re.compile(r"[/;?&]projector=1([;?&]|$)"))
    for hidden in ("#controls", "#events", "#chat", "header.site"):
        expect(sized.locator(hidden)).to_be_hidden()
    for shown in (".play h1", ".story", "#bill"):  # the lesson's title, the story and the bill stay
        expect(sized.locator(shown)).to_be_visible()
    narration_size = float(sized.locator(".story").evaluate("e => getComputedStyle(e.querySelector('.narration, .call-summary')).fontSize").removesuffix("px"))
    assert narration_size >= 20
    sized.click("#step-next")
    expect(sized).to_have_url(re.compile(r"[?&]call=5(&|$)"))
    assert "projector=1" in sized.url  # a step keeps the mode
    parts = boxes(sized, "svg.well a[id^=block-] rect") + boxes(sized, "svg.well .hammer")
    assert max(part["bottom"] for part in parts) <= 720
    sized.click("#projector-toggle")
    expect(sized.locator("#controls")).to_be_visible()
    assert "projector" not in sized.url


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("width", [390])
def test_on_a_phone_every_menu_shows_any_option_whole(sized, live_server, width, lang):
    """The comparison's "Prompt cache" and "Token counter" menus were cut on a phone ("OpenAI
    autom", "o200k_base (G"): whichever option the learner picks is read whole."""
    failures = []
    for path in ["/compare/bike-shop", "/compare/coding-agent?cache=anthropic", "/play/bike-shop?call=5"]:
        sized.goto(live_server + with_lang(path, lang))
        sized.evaluate("document.querySelectorAll('details').forEach(fold => fold.open = true)")  # the comparison's settings are folded
        menus = sized.locator("select")
        assert menus.count() >= 2, path
        failures += [f"{path}: {problem}" for problem in menus.evaluate_all(f"menus => ({CUT_MENUS})(menus, true)")]
    assert not failures, "\n".join(failures)


@pytest.fixture(scope="module")
def last_calls():
    """Every lesson at its last call, where the stepper offers the next lesson, as paths."""
    from tests.golden import lessons, make_client

    client = make_client()
    return [f"/play/{lesson}?call={client.get(f'/play/{lesson}.json').get_json()['calls']}" for lesson in lessons(client)]


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("width", [641, 680, 700])
def test_no_lessons_last_call_scrolls_sideways_just_above_a_phone(browser, live_server, last_calls, width, lang):
    """Just wider than a phone the steps are a row of buttons, and "Leçon suivante → 4. Un
    résultat qu'on ne peut pas obtenir deux fois" was one 720 px line: it wraps instead."""
    context = browser.new_context(viewport={"width": width, "height": 900}, reduced_motion="reduce")
    page = context.new_page()
    wide = []
    for path in last_calls:
        page.goto(live_server + with_lang(path, lang), wait_until="domcontentloaded")
        scroll, window = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
        if scroll > window:
            wide.append(f"{path} in {lang} is {scroll} px wide at {window}: {overflowing(page)}")
    context.close()
    assert len(last_calls) >= 10
    assert not wide, "\n".join(wide)
