"""Everything the play page draws fits, in headless Chromium: every lesson at its key calls (the
calls tests/golden.py looks at), on a phone, a laptop and a wide screen, in every language (and
at 1001 and 1200 px, where two columns leave the drawing narrowest), and in projector mode on a
1920×1080 screen.

- every text of the well (block labels and their notes, traces, levels, "Gulp!") lies inside
  the drawing, and no two of them overlap;
- the tokens written on a block lie within the block (a 5-digit figure overflowed a phone's
  zoomed block: they are shortened there);
- the hammer never covers the KEEP bracket;
- no label, KEEP's name or leader line enters the top band where "Gulp!" is written (a stack far
  over the window, cut at the band, drew KEEP's name up into it and past the drawing's top, and
  its cut blocks' leaders across "Gulp!");
- KEEP's name lies over no wall and no axis label, and neither the zoomed view's connector nor a
  leader line crosses it (beside a zoomed view it sat on the true well's right wall, by the
  dashed connector; beside a plain well the leaders of the alert and target lines' labels, pushed
  off their levels, ran across it);
- the strategy menu shows the chosen strategy's whole name;
- nothing scrolls sideways;
- on a phone the story of the call follows the stepper, so Next and the explanation are on one
  screen;
- in projector mode the title, the well, the story and the bill are all on the one 1920×1080
  screen, which does not scroll.

Besides the lessons, two real sessions pasted (tests/fixtures/sessions/), whose calls of
thousands of tokens write 5- and 6-digit figures in narrow zoomed blocks, whose MCP tools have
names of 33 characters, and whose floor is mostly what the log does not hold. One page is reused,
each URL is opened once per language and measured on every screen by a single `evaluate` each
(`visit`).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from tests.conftest import SIZES

from tests.golden import key_calls, lessons
from webapp.core.model import LANGUAGES

# Calls the issue named that the spread of a long lesson's key calls leaves out.
NAMED = {"long-haul": [40]}
SESSIONS = Path(__file__).parent / "fixtures" / "sessions"
# Pasted sessions and calls of theirs: a first call of 137,283 tokens; 14,996 and 5,127 beside each other.
PASTED = {"claude-code/spotter-ae4a77f8-agent-acompact-946d2b.jsonl": [1], "claude-code/vibecodingtracker-claude-code-v1.0.95.jsonl": [1, 11, 32]}

# The menus (of `menus`) whose chosen option, or with `every` any option, would be cut: its
# text, whole, beside the menu's arrow, wider than the menu.
CUT_MENUS = """(menus, every) => {
  const pen = document.createElement('canvas').getContext('2d');
  const problems = [];
  for (const menu of menus) {
    if (!menu.offsetParent) continue;
    pen.font = getComputedStyle(menu).font;
    for (const option of every ? menu.options : menu.selectedOptions) {
      const needs = pen.measureText(option.text).width + 28;
      if (needs > menu.clientWidth) problems.push(`the menu #${menu.id} is ${menu.clientWidth} px wide for "${option.text}" (${Math.ceil(needs)} px)`);
    }
  }
  return problems;
}"""

# What KEEP's name lies over or is crossed by, as sentences; [] when it stands where nothing else
# is drawn: clear of the walls, of the axis labels, and of the lines that cross its lane (the
# zoomed view's connector, the axis labels' leader lines).
KEEP_CLEAR = """() => {
  const problems = [];
  const keep = document.querySelector('svg.well .keep-label');
  if (!keep) return problems;
  const name = keep.getBoundingClientRect();
  const meet = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  const where = r => `${Math.round(r.left)}..${Math.round(r.right)} × ${Math.round(r.top)}..${Math.round(r.bottom)}`;
  for (const part of document.querySelectorAll('svg.well :is(.wall-left, .wall-right, .wall-bottom, .rim-left, .rim-right, .zoom-wall, .at-axis text)')) {
    const r = part.getBoundingClientRect();
    if (r.width > 0 && r.height > 0 && meet(name, r)) problems.push(`KEEP (${where(name)}) lies over the ${part.getAttribute('class')} "${part.textContent.trim()}" (${where(r)})`);
  }
  for (const line of document.querySelectorAll('svg.well :is(.zoom-connector, .leader)')) {
    if (!line.getBoundingClientRect().height && !line.getBoundingClientRect().width) continue;
    const screen = line.getScreenCTM(), length = line.getTotalLength();
    for (let along = 0; along <= length; along += 1) {
      const p = line.getPointAtLength(along).matrixTransform(screen);
      if (p.x > name.left && p.x < name.right && p.y > name.top && p.y < name.bottom) {
        problems.push(`KEEP (${where(name)}) is crossed by the ${line.getAttribute('class')} at ${Math.round(p.x)},${Math.round(p.y)}`);
        break;
      }
    }
  }
  return problems;
}"""

# Returns what is wrong with the page, as sentences; [] when everything fits.
MEASURE = """projector => {
  const problems = [];
  const inside = (r, box) => r.left >= box.left - 0.5 && r.right <= box.right + 0.5 && r.top >= box.top - 0.5 && r.bottom <= box.bottom + 0.5;
  const meet = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  const shown = e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0 ? r : null; };
  const svg = document.querySelector('svg.well');
  const box = svg.getBoundingClientRect();
  for (const e of svg.querySelectorAll('text, tspan')) {
    const r = shown(e);
    if (r && !inside(r, box)) problems.push(`"${e.textContent.trim()}" reaches ${Math.round(r.left)}..${Math.round(r.right)} × ${Math.round(r.top)}..${Math.round(r.bottom)}, outside the well's ${Math.round(box.left)}..${Math.round(box.right)} × ${Math.round(box.top)}..${Math.round(box.bottom)}`);
  }
  const texts = [...svg.querySelectorAll('text')].map(e => [e, shown(e)]).filter(([e, r]) => r);
  texts.forEach(([a, ra], i) => texts.slice(i + 1).forEach(([b, rb]) => {
    if (meet(ra, rb)) problems.push(`"${a.textContent.trim()}" overlaps "${b.textContent.trim()}"`);
  }));
  for (const e of svg.querySelectorAll('text.inside')) {
    const r = shown(e), block = e.closest('a').querySelector('rect').getBoundingClientRect();
    if (r && (r.left < block.left - 0.5 || r.right > block.right + 0.5))
      problems.push(`the tokens "${e.textContent.trim()}" are ${Math.round(r.width)} px wide on a block of ${Math.round(block.width)} px`);
  }
  problems.push(...(KEEP_CLEAR)());
  // The top band is "Gulp!"'s (or the reply's or the harness's note): no label and no leader line enters it.
  const band = svg.querySelector('.at-gulp text');
  const under = band ? band.getBoundingClientRect().bottom : box.top;
  for (const e of svg.querySelectorAll('.keep-label, .labels text, .at-axis text')) {
    const r = shown(e);
    if (r && band && r.top < under - 0.5) problems.push(`"${e.textContent.trim()}" reaches ${Math.round(r.top)}, into the top band (over ${Math.round(under)})`);
  }
  for (const line of band ? svg.querySelectorAll('.leader') : []) {
    const screen = line.getScreenCTM(), length = line.getTotalLength();
    for (let along = 0; along <= length; along += 1) {
      const p = line.getPointAtLength(along).matrixTransform(screen);
      if (p.y < under - 0.5 && p.y >= box.top) { problems.push(`a leader line runs into the top band at ${Math.round(p.x)},${Math.round(p.y)}`); break; }
    }
  }
  const hammer = svg.querySelector('.hammer');
  if (hammer) for (const part of svg.querySelectorAll('.keep-bracket, .keep-label')) {
    if (meet(hammer.getBoundingClientRect(), part.getBoundingClientRect())) problems.push('the hammer covers KEEP');
  }
  problems.push(...(CUT_MENUS)(document.querySelectorAll('#f-strategy'), false));
  const page = document.documentElement;
  if (page.scrollWidth > page.clientWidth) problems.push(`the page is ${page.scrollWidth} px wide in a ${page.clientWidth} px window`);
  if (projector) {
    if (page.scrollHeight > innerHeight) problems.push(`the page is ${page.scrollHeight} px tall on a ${innerHeight} px screen`);
    for (const [name, selector] of [['the title', '.play h1'], ['the well', 'svg.well'], ['the story', '.story'], ['the bill', '#bill']]) {
      const e = document.querySelector(selector);
      const r = e && shown(e);
      if (!r || getComputedStyle(e).visibility !== 'visible' || r.top < 0 || r.bottom > innerHeight + 0.5 || r.left < 0 || r.right > innerWidth + 0.5)
        problems.push(`${name} is not on the screen` + (r ? ` (${Math.round(r.top)}..${Math.round(r.bottom)})` : ''));
    }
  } else if (innerWidth < 640) {
    const next = document.querySelector('#stepper').getBoundingClientRect();
    const story = document.querySelector('.story').getBoundingClientRect();
    if (story.top - next.bottom > 40) problems.push(`the story starts ${Math.round(story.top - next.bottom)} px under the stepper`);
  }
  return problems;
}""".replace("CUT_MENUS", CUT_MENUS).replace("KEEP_CLEAR", KEEP_CLEAR)


@pytest.fixture(scope="module")
def urls():
    """Every lesson at its key calls, as paths."""
    from tests.golden import make_client

    client = make_client()
    return [f"/play/{lesson}?call={number}" for lesson in lessons(client) for number in sorted({*key_calls(client, lesson), *NAMED.get(lesson, [])})]


@pytest.fixture(scope="module")
def pasted(live_server, reused):
    """The pasted sessions at their calls, as paths."""
    paths = []
    for name, calls in PASTED.items():
        answer = reused.request.post(f"{live_server}/transcripts", form={"transcript": (SESSIONS / name).read_text()}, max_redirects=0)
        assert answer.status == 303, name
        paths += [f"{answer.headers['location'].removeprefix(live_server)}?call={number}" for number in calls]
    return paths


@pytest.fixture(scope="module")
def reused(browser):
    """One page for the whole sweep, under reduced motion so every block stands where it ends."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, reduced_motion="reduce")
    yield context.new_page()
    context.close()


# Each window a test looks at, by its name in the tests' ids: the three screens, the two widths
# where two columns leave the drawing narrowest (as tall as a laptop), and the projector's screen.
SCREENS = {**{width: (width, height) for width, height in SIZES.items()}, 1001: (1001, 800), 1200: (1200, 800), "projector": (1920, 1080)}


def visit(page, base: str, paths: list[str], screens, measure: str = MEASURE) -> dict[tuple, list[str]]:
    """What `measure` finds wrong with each path on each screen (told whether it is the
    projector's), every path opened once and the window resized between two measures: the layout
    is the style sheet's alone (static/app.js reads no size and places nothing), so a resized
    window draws what one opened at that size does."""
    problems = {}
    for path in paths:
        page.goto(base + path, wait_until="domcontentloaded")
        for screen in screens:
            width, height = SCREENS[screen]
            page.set_viewport_size({"width": width, "height": height})
            problems[path, screen] = [f"{path}: {problem}" for problem in page.evaluate(measure, screen == "projector")]
    return problems


def found(problems: dict[tuple, list[str]], paths: list[str], screen) -> list[str]:
    return [problem for path in paths for problem in problems[path, screen]]


@pytest.fixture(scope="module")
def wells(reused, live_server, urls, pasted):
    """In a language: the lessons' key calls and the pasted sessions' calls, each opened once and
    measured at every width the next three tests look at."""
    screens = [390, 1280, 1920, 1001, 1200]
    return functools.cache(lambda lang: visit(reused, live_server, [f"{path}&lang={lang}" for path in urls + pasted], screens))


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("width", SIZES)
def test_every_label_of_the_well_fits_at_every_key_call(wells, urls, pasted, width, lang):
    """The lessons on every screen; the pasted sessions on a phone, where labels and figures
    take their short forms (wider screens: the next test)."""
    paths = urls + (pasted if width < 640 else [])
    failures = found(wells(lang), [f"{path}&lang={lang}" for path in paths], width)
    assert not failures, f"{len(failures)} problems at {width} px, e.g.:\n" + "\n".join(failures[:12])


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("width", [width for width in SIZES if width >= 640])
def test_a_pasted_sessions_labels_fit_on_wide_screens(wells, pasted, width, lang):
    """A real session's long tool names (mcp__context7__resolve-library-id) are clipped in the
    middle beside a narrow zoomed view, and its floor's part not in the log is a line of its own."""
    failures = found(wells(lang), [f"{path}&lang={lang}" for path in pasted], width)
    assert not failures, f"{len(failures)} problems at {width} px, e.g.:\n" + "\n".join(failures[:12])


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("width", [1001, 1200])
def test_labels_fit_where_a_wide_screen_draws_the_well_narrowest(wells, urls, pasted, width, lang):
    """Two columns from 1001 px: the drawing is 470 to 580 px wide there, narrower than at 1280,
    and writes the phone's short labels (app.css, `@container well`)."""
    failures = found(wells(lang), [f"{path}&lang={lang}" for path in urls + pasted], width)
    assert not failures, f"{len(failures)} problems at {width} px, e.g.:\n" + "\n".join(failures[:12])


@pytest.mark.parametrize("lang", LANGUAGES)
def test_projector_mode_shows_title_well_story_and_bill_on_one_screen(reused, live_server, urls, lang):
    paths = [f"{path}&projector=1&lang={lang}" for path in urls]
    failures = found(visit(reused, live_server, paths, ["projector"]), paths, "projector")
    assert not failures, f"{len(failures)} problems in projector mode, e.g.:\n" + "\n".join(failures[:12])


# Where KEEP is drawn in a plain well (beside a zoomed view it has a lane of its own), and each
# axis leader line's run: _well.html's markup.
KEEP_ZONE = re.compile(r'<rect class="keep-zone in-well" y="([\d.]+)" height="([\d.]+)"')
AXIS_LEADER = re.compile(r'<path class="leader mark-\w+" d="M\d+,([\d.]+) L\d+,([\d.]+)"')
# The lessons' settings, and with an alert and a target line that crowd the red line's label.
CROWDED = ("", "&alert=0.7&target=0.75")


def leader_beside_keep(html: str) -> bool:
    """Whether an axis label's leader line runs beside KEEP's bracket, within the length of its
    name (about 40 px): where it could cross the name, and only there."""
    zone = KEEP_ZONE.search(html)
    if not zone:
        return False
    top, bottom = float(zone[1]), float(zone[1]) + float(zone[2])
    return any(min(map(float, run)) < bottom + 25 and max(map(float, run)) > top - 25 for run in AXIS_LEADER.findall(html))


@pytest.fixture(scope="module")
def keep_beside_leaders():
    """Each lesson's calls, with its settings and with a crowded axis, where an axis leader
    runs beside KEEP's bracket: five at most, first and last among them and evenly between.
    The page's heights do not depend on the screen, so the markup tells."""
    from tests.golden import make_client

    client = make_client()
    paths = []
    for lesson in lessons(client):
        calls = client.get(f"/play/{lesson}.json").get_json()["calls"]
        for settings in CROWDED:
            beside = [f"/play/{lesson}?call={number}{settings}" for number in range(1, calls + 1) if leader_beside_keep(client.get(f"/play/{lesson}?call={number}{settings}").text)]
            paths += [beside[round(i * (len(beside) - 1) / 4)] for i in range(5)] if len(beside) > 5 else beside
    return list(dict.fromkeys(paths))


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_no_leader_line_or_axis_label_crosses_keeps_name_on_a_phone(reused, live_server, keep_beside_leaders, lang):
    """/play/workshop-manuals?call=9&lang=fr at 390 px drew the alert and target labels' leaders
    across KEEP's rotated name: it moves along its bracket to where none runs."""
    assert len(keep_beside_leaders) >= 10, keep_beside_leaders
    paths = [f"{path}&lang={lang}" for path in keep_beside_leaders]
    failures = found(visit(reused, live_server, paths, [390], KEEP_CLEAR), paths, 390)
    assert not failures, f"{len(failures)} problems at 390 px, e.g.:\n" + "\n".join(failures[:12])


@pytest.fixture(scope="module")
def runaway():
    """Without compaction long-haul and harnesses stack far over the window, and the drawing
    cuts the stack at its top band: for each, the first such call, the one whose KEEP, cut
    there, is shortest (its name runs past the bracket's end) and the last."""
    from webapp.core.drawing.well import layout
    from webapp.core.drawing.well_parts import TOP
    from webapp.core.engine.replay import replay
    from webapp.core.inputs.library import open_scenario
    from webapp.core.settings import with_strategy

    paths = []
    for lesson in ("long-haul", "harnesses"):
        scenario = open_scenario(lesson)
        result = replay(scenario, with_strategy(scenario.settings, scenario.settings, "none"))
        wells = {number: layout(result, number) for number in range(1, len(result.calls) + 1)}
        cut = [number for number, well in wells.items() if well.stack_top_y < TOP and well.keep_top is not None]
        shortest = min(cut, key=lambda number: wells[number].keep_bottom - wells[number].keep_top)
        paths += [f"/play/{lesson}?call={number}&strategy=none" for number in sorted({cut[0], shortest, cut[-1]})]
    return paths


@pytest.fixture(scope="module")
def runaway_wells(reused, live_server, runaway):
    """In a language: the runaway stacks, each opened once on the three screens and once in
    projector mode."""
    def measure(lang: str) -> dict[tuple, list[str]]:
        problems = visit(reused, live_server, [f"{path}&lang={lang}" for path in runaway], SIZES)
        projected = visit(reused, live_server, [f"{path}&lang={lang}&projector=1" for path in runaway], ["projector"])
        return problems | {(path.removesuffix("&projector=1"), screen): found for (path, screen), found in projected.items()}

    return functools.cache(measure)


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("width", [*SIZES, "projector"])
def test_a_stack_far_over_the_window_keeps_every_label_under_gulp(runaway_wells, runaway, width, lang):
    """/play/harnesses?call=23&strategy=none drew KEEP's name over "Gulp!", and from call 24 past
    the drawing's top: KEEP is cut at the band with the stack, its name stays under it."""
    failures = found(runaway_wells(lang), [f"{path}&lang={lang}" for path in runaway], width)
    assert not failures, f"{len(failures)} problems at {width}, e.g.:\n" + "\n".join(failures[:12])


# --- The comparisons and the sweeps -----------------------------------------------------------

# What is wrong with a comparison or a sweep, its folds opened, as sentences; [] when everything
# fits: a chart's text outside its drawing or over another text of it; a card's text over another
# of that card (an element and one it holds aside); a page wider than the screen.
PANEL_MEASURE = """() => {
  for (const fold of document.querySelectorAll('details')) fold.open = true;
  const problems = [];
  const shown = e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0 ? r : null; };
  const meet = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  const within = (a, b) => a.left >= b.left - 0.5 && a.right <= b.right + 0.5 && a.top >= b.top - 0.5 && a.bottom <= b.bottom + 0.5;
  const where = r => `${Math.round(r.left)}..${Math.round(r.right)} × ${Math.round(r.top)}..${Math.round(r.bottom)}`;
  for (const svg of document.querySelectorAll('svg.compare-chart__svg')) {
    const box = shown(svg);
    if (!box) continue;
    const texts = [...svg.querySelectorAll('text')].map(e => [e, shown(e)]).filter(([e, r]) => r);
    for (const [e, r] of texts) if (!within(r, box)) problems.push(`the chart's "${e.textContent.trim()}" (${where(r)}) runs past the chart (${where(box)})`);
    texts.forEach(([a, ra], i) => texts.slice(i + 1).forEach(([b, rb]) => {
      if (meet(ra, rb)) problems.push(`the chart's "${a.textContent.trim()}" is drawn over "${b.textContent.trim()}"`);
    }));
  }
  for (const card of document.querySelectorAll('.column')) {
    const texts = [...card.querySelectorAll('*')].filter(e => [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())
      && !e.closest('.visually-hidden, svg') && e.getClientRects().length).map(e => [e, e.getBoundingClientRect()]);
    texts.forEach(([a, ra], i) => texts.slice(i + 1).forEach(([b, rb]) => {
      if (meet(ra, rb) && !within(ra, rb) && !within(rb, ra))
        problems.push(`in the card ${card.querySelector('.column__title').textContent.trim().split(/\\s/)[0]}, "${a.textContent.trim().slice(0, 40)}" is drawn over "${b.textContent.trim().slice(0, 40)}"`);
    }));
  }
  const page = document.documentElement;
  if (page.scrollWidth > page.clientWidth) problems.push(`the page is ${page.scrollWidth} px wide in a ${page.clientWidth} px window`);
  return problems;
}"""


@pytest.fixture(scope="module")
def panel_pages():
    """Every lesson's comparison, as it opens, and its sweep."""
    from tests.golden import make_client

    return [f"/{page}/{lesson}" for lesson in lessons(make_client()) for page in ("compare", "sweep")]


@pytest.fixture(scope="module")
def panels(reused, live_server, panel_pages):
    """In a language: every comparison and sweep, each opened once and measured on the three screens."""
    return functools.cache(lambda lang: visit(reused, live_server, [f"{path}?lang={lang}" for path in panel_pages], SIZES, PANEL_MEASURE))


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("width", SIZES)
def test_every_comparison_and_sweep_fits(panels, panel_pages, width, lang):
    """The coding agent's comparison drew its axis title over "20,000", and in French at 1920 px
    "Résumeur" over "23 755 en entrée, 84 en sortie"."""
    failures = found(panels(lang), [f"{path}?lang={lang}" for path in panel_pages], width)
    assert not failures, f"{len(failures)} problems at {width} px, e.g.:\n" + "\n".join(failures[:12])
