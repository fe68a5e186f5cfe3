"""The sweep in headless Chromium: reached from the comparison, a point clicked lands on its
play view; and its chart fits the screen at every size, in every language."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.conftest import SIZES
from webapp.core.model import LANGUAGES
from webapp.core.engine.strategy_catalog import STRATEGIES

# What is wrong with the shown chart, as sentences: a text outside the drawing, two texts that
# overlap, a page wider than the screen.
CHART_PROBLEMS = """() => {
  const problems = [];
  const shown = e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0 ? r : null; };
  const svg = [...document.querySelectorAll('#sweep-chart svg.compare-chart__svg')].find(shown);
  if (!svg) return ['no chart is shown'];
  const box = svg.getBoundingClientRect();
  const texts = [...svg.querySelectorAll('text')].map(e => [e, shown(e)]).filter(([e, r]) => r);
  for (const [e, r] of texts)
    if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5)
      problems.push(`"${e.textContent.trim()}" runs past the chart`);
  texts.forEach(([a, ra], i) => texts.slice(i + 1).forEach(([b, rb]) => {
    if (ra.left < rb.right - 0.5 && rb.left < ra.right - 0.5 && ra.top < rb.bottom - 0.5 && rb.top < ra.bottom - 0.5)
      problems.push(`"${a.textContent.trim()}" overlaps "${b.textContent.trim()}"`);
  }));
  const page = document.documentElement;
  if (page.scrollWidth > page.clientWidth) problems.push(`the page is ${page.scrollWidth} px wide in a ${page.clientWidth} px window`);
  return problems;
}"""


# The data-point of the first point of the wide chart that is on top at its centre (points of
# close bills overlap; the tables list them all).
CLICKABLE = """() => {
  for (const a of document.querySelectorAll('#sweep-chart svg.compare-chart__svg--wide a.sweep-point')) {
    a.scrollIntoView({block: 'center'});
    const r = a.querySelector('circle').getBoundingClientRect();
    const top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    if (top && a.contains(top)) return a.dataset.point;
  }
  return null;
}"""


def test_open_the_sweep_from_the_comparison_and_click_a_point(page, live_server):
    page.goto(live_server + "/compare/bike-shop?keep=2")
    page.click("#open-sweep")
    expect(page.locator("h1")).to_contain_text("Choose your settings")
    assert "/sweep/bike-shop" in page.url
    chosen = page.evaluate(CLICKABLE)
    assert chosen, "no point of the chart can be clicked"
    key, rest = chosen.split("@")
    line = rest.split("/")[0]
    page.locator(f'#sweep-chart svg.compare-chart__svg--wide a.sweep-point[data-point="{chosen}"] circle').click()
    expect(page).to_have_url(re.compile(r"/play/bike-shop(/|\?|$)"))
    expect(page.locator("#f-strategy")).to_have_value(key.split("+")[0])
    if STRATEGIES[key.split("+")[0]].family == "textbook":
        expect(page.locator("#f-threshold")).to_have_value(line)


def test_the_advice_opens_the_advised_point(page, live_server):
    page.goto(live_server + "/sweep/bike-shop")
    advised = page.locator("td.is-best a").first
    href = advised.get_attribute("href")
    page.click("#open-best")
    expect(page).to_have_url(re.compile(re.escape(href.replace("&amp;", "&")) + "$"))


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("width", SIZES)
def test_the_sweep_chart_fits_at_every_size(sized, live_server, width, lang):
    for scenario in ("bike-shop", "harnesses"):
        sized.goto(f"{live_server}/sweep/{scenario}?lang={lang}")
        assert sized.evaluate(CHART_PROBLEMS) == [], (scenario, width, lang)
