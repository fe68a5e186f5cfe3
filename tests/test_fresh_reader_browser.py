"""What a fresh reader of the comparison, the sweep and the play page saw drawn badly, in headless
Chromium (issue 33, stop 38's list):

- on a phone the long haul's chart painted its markers over "red line 6,400": the window's and
  the red line's labels are drawn over every series;
- "‹ Précédent" filled its button edge to edge at 390 px: every step button holds its text with
  room on both sides, in every language;
- Chinese verdicts broke a strategy's name at its hyphens ("clear-tool-" / "results"), and so
  could the sweep's advice.
"""

from __future__ import annotations

import pytest

from webapp.core.model import LANGUAGES

# Each character of the charts' rule labels ("window 8,000", "red line 6,400") whose middle is
# covered by something else: what lies there instead.
COVERED_LABELS = """() => {
  const covered = [];
  for (const svg of document.querySelectorAll('svg.compare-chart__svg')) {
    if (!svg.getBoundingClientRect().width) continue;
    for (const label of svg.querySelectorAll('.chart-rule-label')) {
      for (let i = 0; i < label.getNumberOfChars(); i++) {
        const box = label.getExtentOfChar(i);
        if (!box.width || !label.textContent[i].trim()) continue;
        const middle = new DOMPoint(box.x + box.width / 2, box.y + box.height / 2).matrixTransform(label.getScreenCTM());
        const top = document.elementFromPoint(middle.x, middle.y);
        if (top && !label.contains(top)) covered.push(`"${label.textContent.trim()}"[${i}] under ${top.tagName}.${top.getAttribute('class')}`);
      }
    }
  }
  return covered;
}"""


@pytest.mark.parametrize("width", [390, 1280])
def test_the_charts_window_and_red_line_labels_are_drawn_over_the_series(sized, live_server, width):
    failures = []
    for path in ("/compare/long-haul", "/compare/coding-agent", "/compare/harnesses"):
        sized.goto(f"{live_server}{path}", wait_until="domcontentloaded")
        sized.locator("#chart").scroll_into_view_if_needed()
        failures += [f"{path} at {width} px: {problem}" for problem in sized.evaluate(COVERED_LABELS)]
    assert not failures, "\n".join(failures[:12])


# Each step button whose shown text (words hidden for screen readers left out) comes closer than
# 4 px to its edge: [text, room left, room right].
TIGHT_BUTTONS = """() => [...document.querySelectorAll('.steps > .btn')].filter(b => b.getBoundingClientRect().width).map(b => {
  const shown = [...b.querySelectorAll('*'), b].flatMap(e => [...e.childNodes].filter(n => n.nodeType === 3 && n.textContent.trim()
    && e.getBoundingClientRect().width > 1)).map(n => { const r = document.createRange(); r.selectNodeContents(n); return r.getBoundingClientRect(); });
  const box = b.getBoundingClientRect();
  const left = Math.min(...shown.map(r => r.left)), right = Math.max(...shown.map(r => r.right));
  return [b.textContent.trim(), Math.round(left - box.left), Math.round(box.right - right)];
}).filter(([, left, right]) => left < 4 || right < 4)"""


@pytest.mark.parametrize("width", [390])
def test_every_step_button_holds_its_words_on_a_phone(sized, live_server, width):
    failures = []
    for path in ("/compare/long-haul?call=30", "/play/long-haul?call=30", "/sweep/bike-shop"):
        for lang in LANGUAGES:
            sized.goto(f"{live_server}{path}{'&' if '?' in path else '?'}lang={lang}", wait_until="domcontentloaded")
            failures += [f"{path} in {lang}: {tight}" for tight in sized.evaluate(TIGHT_BUTTONS)]
    assert not failures, "\n".join(failures)


# The strategy names of the verdict and the advice that a line break splits.
SPLIT_NAMES = """() => [...document.querySelectorAll('.verdict .strategy-name')]
  .filter(name => name.getClientRects().length > 1).map(name => name.textContent)"""


@pytest.mark.parametrize("width", [390])
def test_the_verdict_and_the_advice_never_break_a_strategys_name(sized, live_server, width):
    failures = []
    for path in ("/compare/coding-agent", "/compare/bike-shop", "/compare/long-haul", "/compare/harnesses", "/sweep/bike-shop"):
        for lang in LANGUAGES:
            sized.goto(f"{live_server}{path}?lang={lang}", wait_until="domcontentloaded")
            sized.evaluate("() => document.querySelectorAll('.verdict details').forEach(fold => fold.open = true)")
            assert sized.locator(".verdict .strategy-name").count(), f"{path} in {lang}: no strategy's name is marked"
            failures += [f"{path} in {lang}: {name}" for name in sized.evaluate(SPLIT_NAMES)]
    assert not failures, "\n".join(failures)
