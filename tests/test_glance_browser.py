"""The comparison at a glance, its projector mode, the sweep's fit and the phone's play page, in
headless Chromium (issue 33):

- the comparison, as it opens on the three lessons, is at most 3 screens tall at 1280×800 and 6
  at 390×844, with the verdict and truncate, drop and summarize starting within the first
  screen and a half;
- its folds (every strategy in full, the figures call by call) open without JavaScript, and at
  1920 px the figures call by call are no small scroll box: every column and the highlighted
  call are in view;
- projector mode fits the comparison and the sweep on one 1920×1080 screen;
- the sweep never scrolls sideways, and from a laptop up its tables fit their box;
- on a phone the play page shows the whole well and the Next button on its first screen.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.conftest import SIZES
from webapp.core.model import LANGUAGES

LESSONS = ("bike-shop", "coding-agent", "long-haul")
PANEL = ("truncate", "drop", "summarize")

# Where the page's parts start (page coordinates) and how tall it is.
OPENING = """panel => ({
  height: document.documentElement.scrollHeight,
  verdict: document.querySelector('#verdict').getBoundingClientRect().top + scrollY,
  cards: Object.fromEntries(panel.map(key => {
    const link = document.querySelector(`#glance a.column__link[data-strategy="${key}"]`);
    return [key, link ? link.closest('li').getBoundingClientRect().top + scrollY : null];
  })),
})"""


@pytest.mark.parametrize("scenario", LESSONS)
@pytest.mark.parametrize("width", [1280, 390])
def test_the_comparison_opens_with_the_verdict_and_the_panel_in_view(sized, live_server, width, scenario):
    height = SIZES[width]
    screens = 3 if width > 640 else 6
    for lang in LANGUAGES:
        sized.goto(f"{live_server}/compare/{scenario}?lang={lang}")
        found = sized.evaluate(OPENING, list(PANEL))
        where = f"/compare/{scenario} in {lang} at {width}×{height}"
        assert found["height"] <= screens * height, f"{where} is {found['height']} px tall, over {screens} screens"
        assert found["verdict"] < 1.5 * height, f"{where}: the verdict starts at {found['verdict']:.0f} px"
        for key, top in found["cards"].items():
            assert top is not None, f"{where}: no card for {key}"
            assert top < 1.5 * height, f"{where}: {key} starts at {top:.0f} px, past the first screen and a half"


def test_every_strategy_opens_without_javascript(browser, live_server):
    context = browser.new_context(viewport={"width": 1280, "height": 800}, java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{live_server}/compare/bike-shop?call=5")
    columns = page.locator("#columns .column")
    expect(columns.first).to_be_hidden()
    page.click("#every-strategy > summary")
    expect(columns.first).to_be_visible()
    assert columns.count() >= 15
    page.click("#call-figures > summary")
    expect(page.locator("#call-table tr.is-current")).to_be_visible()
    context.close()


@pytest.mark.parametrize("scenario", ["long-haul", "coding-agent", "harnesses"])
def test_at_1920_the_figures_call_by_call_show_every_column_and_the_highlighted_call(browser, live_server, scenario):
    """They sat in a 380 px scroll box beside the chart, which hid the highlighted call and a
    column."""
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    page = context.new_page()
    page.goto(f"{live_server}/compare/{scenario}?call=10")
    page.click("#call-figures > summary")
    box = page.locator("#call-table")
    sizes = box.evaluate("e => [e.scrollWidth, e.clientWidth, e.scrollHeight, e.clientHeight]")
    assert sizes[0] <= sizes[1] and sizes[2] <= sizes[3], f"{scenario}: the table scrolls in its box {sizes}"
    current = page.locator("#call-table tr.is-current")
    current.scroll_into_view_if_needed()
    expect(current).to_be_in_viewport()
    context.close()


# What of the page is off the one screen, as sentences; [] when everything is on it.
ON_ONE_SCREEN = """parts => {
  const problems = [];
  const page = document.documentElement;
  if (page.scrollHeight > innerHeight) problems.push(`the page is ${page.scrollHeight} px tall on a ${innerHeight} px screen`);
  if (page.scrollWidth > innerWidth) problems.push(`the page is ${page.scrollWidth} px wide on a ${innerWidth} px screen`);
  for (const selector of parts) {
    const e = [...document.querySelectorAll(selector)].find(e => e.getBoundingClientRect().height > 0);
    const r = e && e.getBoundingClientRect();
    if (!r || r.top < 0 || r.bottom > innerHeight + 0.5 || r.left < 0 || r.right > innerWidth + 0.5)
      problems.push(`${selector} is not on the screen` + (r ? ` (${Math.round(r.top)}..${Math.round(r.bottom)})` : ''));
  }
  return problems;
}"""

PROJECTED = {
    "/compare/bike-shop": ["h1", "#compare-stepper", "#verdict", "#glance", "#chart svg"],
    "/compare/coding-agent": ["h1", "#compare-stepper", "#verdict", "#glance", "#chart svg"],
    "/compare/long-haul": ["h1", "#compare-stepper", "#verdict", "#glance", "#chart svg"],
    "/sweep/bike-shop": ["h1", "#advice", "#sweep-chart svg"],
}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_projector_mode_fits_the_comparison_and_the_sweep_on_a_1920x1080_screen(browser, live_server, lang):
    context = browser.new_context(viewport={"width": 1920, "height": 1080}, reduced_motion="reduce")
    page = context.new_page()
    failures = []
    for path, parts in PROJECTED.items():
        answer = page.goto(f"{live_server}{path}?projector=1&lang={lang}")
        assert answer.status == 200, path
        expect(page.locator("header.site")).to_be_hidden()
        failures += [f"{path}: {problem}" for problem in page.evaluate(ON_ONE_SCREEN, parts)]
    context.close()
    assert not failures, "\n".join(failures)


# The sweep's page and tables: how much wider than their box they are.
SWEEP_WIDTHS = """() => ({
  page: [document.documentElement.scrollWidth, document.documentElement.clientWidth],
  tables: [...document.querySelectorAll('#sweep-tables .chart-table')].map(e => [e.scrollWidth, e.clientWidth]),
})"""


@pytest.mark.parametrize("width", SIZES)
def test_the_sweep_fits_its_page(sized, live_server, width):
    """At 1280 px its tables were wider than their box: the 95% column was cut."""
    for scenario in ("bike-shop", "harnesses", "long-haul"):
        for lang in LANGUAGES:
            sized.goto(f"{live_server}/sweep/{scenario}?lang={lang}")
            found = sized.evaluate(SWEEP_WIDTHS)
            where = f"/sweep/{scenario} in {lang} at {width} px"
            assert found["page"][0] <= found["page"][1], f"{where} scrolls sideways: {found['page']}"
            assert found["tables"]
            if width > 640:  # a phone scrolls a table in its box, the strategies' names held
                assert all(inner <= box for inner, box in found["tables"]), f"{where}: a table is wider than its box {found['tables']}"


# Where the well and the Next button are on the first screen of a phone.
FIRST_SCREEN = """() => Object.fromEntries(['svg.well', '#step-next'].map(selector => {
  const r = document.querySelector(selector).getBoundingClientRect();
  return [selector, [r.top, r.bottom]];
}))"""


@pytest.mark.parametrize("width", [390])
def test_on_a_phone_the_play_page_shows_the_well_and_next_on_its_first_screen(sized, live_server, width):
    """The controls and the story came before the well: each Next meant scrolling down to the
    hammer and back up."""
    from tests.golden import lessons, make_client

    failures = []
    for lesson in lessons(make_client()):
        for lang in ("en", "fr"):
            path = f"/play/{lesson}?call=2&lang={lang}"
            sized.goto(live_server + path, wait_until="domcontentloaded")
            for selector, (top, bottom) in sized.evaluate(FIRST_SCREEN).items():
                if top < 0 or bottom > SIZES[width]:
                    failures.append(f"{path}: {selector} spans {top:.0f}..{bottom:.0f}, off the first {SIZES[width]} px")
    assert not failures, "\n".join(failures)
