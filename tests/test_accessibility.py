"""Accessibility in the browser: axe-core on every page in every language, the language
picker, keyboard focus, and what a screen reader hears after a step."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest
from playwright.sync_api import expect

from tests.links import link_state
from webapp.core.model import LANGUAGES

ROOT = Path(__file__).resolve().parents[1]
# axe-core from the npm registry, fetched once into a cache directory (npm checks the
# tarball's integrity against the registry's published hash).
AXE_VERSION = "4.14.1"
AXE_DIR = ROOT / ".cache" / f"axe-core-{AXE_VERSION}"
AXE_SCRIPT = AXE_DIR / "package" / "axe.min.js"
PLAY = "/play/bike-shop"
HAMMER_CALL = 5  # the bike shop's call where the hammer falls (tests/test_bike_shop.py)

PAGES = {
    "home": "/",
    "play": PLAY + "?call=2",
    "hammer": PLAY + f"?call={HAMMER_CALL}&block=m3",
    # a pinned message, the alert line and the target: the manual's marks and panels
    "pinned": PLAY + f"?call={HAMMER_CALL}&block=m1&pin=m1&alert=0.7&target=0.75",
    # the retrieval lesson: layers beside the stack, the budget table, the metrics, a pinned rule
    "layers": "/play/workshop-manuals?call=8&block=m3",
    "overflow": PLAY + "?strategy=none&call=6",
    "error": PLAY + "?keep=0",
    "compare": f"/compare/bike-shop?call={HAMMER_CALL}",
    "sweep": "/sweep/bike-shop",
    "transcript": "/transcripts/new",
}


@pytest.fixture(scope="session")
def axe_script() -> Path:
    if not AXE_SCRIPT.exists():
        AXE_DIR.mkdir(parents=True, exist_ok=True)
        try:
            packed = subprocess.run(
                ["npm", "pack", "--silent", f"axe-core@{AXE_VERSION}", "--pack-destination", str(AXE_DIR)],
                check=True, capture_output=True, text=True, timeout=300,
            ).stdout.split()[-1]
        except (OSError, subprocess.SubprocessError) as error:
            pytest.fail(f"could not fetch axe-core {AXE_VERSION} with npm (scripts/test installs npm): {error}")
        with tarfile.open(AXE_DIR / packed) as archive:
            archive.extractall(AXE_DIR, filter="data")
    return AXE_SCRIPT


def axe_violations(browser, url: str, script: Path, width: int = 1366) -> list[dict]:
    # Playwright injects a script given by path as inline content, which the app's CSP
    # (script-src 'self') rightly blocks; this context bypasses the CSP for the audit only.
    # The CSP itself is checked by tests/test_web_browser.py without any bypass.
    context = browser.new_context(bypass_csp=True, viewport={"width": width, "height": 900})
    try:
        page = context.new_page()
        page.goto(url)
        page.add_script_tag(path=str(script))
        result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    finally:
        context.close()
    return result["violations"]


def describe(violations: list[dict]) -> str:
    return "\n".join(
        f"{v['impact']}: {v['id']} ({v['help']}) at {[node['target'] for node in v['nodes']][:5]}" for v in violations
    )


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("name", PAGES)
def test_axe_finds_no_serious_or_critical_violation(browser, live_server, axe_script, name, lang):
    path = PAGES[name]
    url = f"{live_server}{path}{'&' if '?' in path else '?'}lang={lang}"
    violations = axe_violations(browser, url, axe_script)
    serious = [v for v in violations if v["impact"] in {"serious", "critical"}]
    assert not serious, describe(serious)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("path", [PLAY + "?call=1", PLAY + f"?call={HAMMER_CALL}&projector=1", "/play/real-window?call=6", f"/compare/bike-shop?call={HAMMER_CALL}"])
def test_axe_on_a_phone_and_in_projector_mode(browser, live_server, axe_script, path, lang):
    """The phone layout (zoomed well, short labels, the scrolling chart) and projector mode."""
    violations = axe_violations(browser, f"{live_server}{path}&lang={lang}", axe_script, width=390)
    serious = [v for v in violations if v["impact"] in {"serious", "critical"}]
    assert not serious, describe(serious)


def test_axe_sees_a_violation_when_there_is_one(browser, live_server, axe_script, tmp_path):
    """The audit itself works: a page with an unlabeled field and grey-on-white text fails."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<!doctype html><html lang="en"><title>x</title><main><input type="text">'
        '<p style="color:#ccc;background:#fff">faint</p></main></html>'
    )
    violations = axe_violations(browser, bad.as_uri(), axe_script)
    assert {"label", "color-contrast"} <= {v["id"] for v in violations}


def query(url: str) -> list[tuple[str, str]]:
    return sorted(parse_qsl(urlsplit(url).query))


def test_the_language_picker_changes_only_the_language(page, live_server):
    page.goto(live_server + PLAY + "?call=3&strategy=drop&window=9000&block=m2")
    before = link_state(page.url)[1]
    picker = page.get_by_role("navigation", name="Language")
    expect(picker.get_by_role("link", name="English")).to_have_attribute("aria-current", "true")
    picker.get_by_role("link", name="Français").click()
    expect(page.locator("html")).to_have_attribute("lang", "fr")
    assert link_state(page.url)[1] == {**before, "lang": "fr"}
    expect(page.locator("#stepper .where .big")).to_have_text("Appel 3")
    page.get_by_role("navigation", name="Langue").get_by_role("link", name="中文").click()
    expect(page.locator("html")).to_have_attribute("lang", "zh-Hans")
    expect(page.locator("#stepper .where .big")).to_have_text("第 3 次调用")
    assert link_state(page.url)[1] == {**before, "lang": "zh"}


def test_after_a_step_the_picker_links_keep_the_new_state(page, live_server):
    page.goto(live_server + PLAY + "?call=1&lang=fr")
    page.keyboard.press("ArrowRight")
    expect(page.locator("#stepper .where .big")).to_have_text("Appel 2")
    english = page.get_by_role("navigation", name="Langue").get_by_role("link", name="English")
    assert ("call", "2") in query(english.get_attribute("href"))
    english.click()
    expect(page.locator("#stepper .where .big")).to_have_text("Call 2")


def test_a_step_is_announced_politely_in_the_page_language(page, live_server):
    page.goto(live_server + PLAY + f"?call={HAMMER_CALL - 1}&lang=fr")
    summary = page.locator("#call-summary")
    now = page.locator("#events-now")
    expect(summary).to_have_attribute("aria-live", "polite")
    expect(now).to_have_attribute("role", "log")  # a log is a polite live region
    # A live region is announced when its content changes, not when it is replaced: mark
    # both elements and check that the step keeps them.
    page.evaluate("() => document.querySelectorAll('#call-summary, #events-now').forEach(el => el.dataset.kept = 'yes')")
    page.keyboard.press("ArrowRight")
    expect(summary).to_contain_text(f"Appel {HAMMER_CALL} sur 6")
    expect(summary).to_contain_text("La compaction a réduit la requête")
    expect(now).to_contain_text(f"appel {HAMMER_CALL}")
    expect(now.locator(".kind-compact")).to_contain_text("tokens")
    expect(now.locator(".call-group")).to_have_count(1)  # only the new call's events are announced
    assert page.evaluate("() => [...document.querySelectorAll('#call-summary, #events-now')].map(el => el.dataset.kept)") == ["yes", "yes"]
    expect(page.locator("#events .call-group")).to_have_count(HAMMER_CALL)  # the whole log is still shown


def focus_ring(page) -> dict:
    return page.evaluate(
        """() => {
            const el = document.activeElement;
            const style = getComputedStyle(el);
            const shape = el.querySelector && el.querySelector('rect');
            return {tag: el.tagName.toLowerCase(), id: el.id, text: (el.textContent || '').trim().slice(0, 40),
                    outline: style.outlineStyle !== 'none' ? parseFloat(style.outlineWidth) : 0,
                    // a block of the well shows focus by the dark outline of its rectangle
                    stroke: shape && getComputedStyle(shape).stroke === 'rgb(17, 24, 39)'
                        ? parseFloat(getComputedStyle(shape).strokeWidth) : 0};
        }"""
    )


def test_every_control_is_reached_by_tab_with_a_visible_focus(page, live_server):
    page.goto(live_server + PLAY + f"?call={HAMMER_CALL}&lang=fr")
    reached = []
    for _ in range(120):
        page.keyboard.press("Tab")
        ring = focus_ring(page)
        if ring["tag"] == "body":
            break
        assert ring["outline"] >= 2 or ring["stroke"] >= 3, f"no visible focus on {ring}"
        reached.append(ring)
    texts = {ring["text"] for ring in reached}
    ids = {ring["id"] for ring in reached}
    assert {"Français", "中文", "English"} <= texts
    assert {"step-next", "scrubber", "f-strategy", "f-window", "play-toggle"} <= ids
    blocks = page.locator("svg.well a[id^=block-]")
    assert sum(ring["stroke"] >= 3 for ring in reached) >= blocks.count()


def contrast(first: str, second: str) -> float:
    """WCAG contrast ratio of two computed colours ("rgb(r, g, b)")."""

    def luminance(colour: str) -> float:
        channels = [int(part) / 255 for part in colour[colour.index("(") + 1 : colour.index(")")].split(",")[:3]]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    high, low = sorted([luminance(first), luminance(second)], reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize("strategy", ["truncate-drop", "summarize"])
def test_blocks_and_the_numbers_on_them_have_enough_contrast(page, live_server, strategy):
    """Text on a block needs 4.5:1 against it (WCAG AA); a block needs 3:1 against the panel
    (non-text contrast) by its fill or its outline, the hatched floor aside."""
    page.goto(live_server + PLAY + f"?call={HAMMER_CALL}&strategy={strategy}")
    pairs = page.evaluate(
        """() => [...document.querySelectorAll('svg.well a[id^=block-]')].map(block => {
            const style = getComputedStyle(block.querySelector('rect'));
            const text = block.querySelector('text.inside');
            return {name: block.querySelector('title').textContent, shape: style.fill, outline: style.stroke,
                    text: text ? getComputedStyle(text).fill : null};
        })"""
    )
    assert pairs
    panel = page.evaluate("() => getComputedStyle(document.querySelector('.well-panel')).backgroundColor")
    for pair in pairs:
        if not pair["shape"].startswith("rgb"):
            continue  # the floor's hatch pattern
        assert max(contrast(pair["shape"], panel), contrast(pair["outline"], panel)) >= 3, pair
        if pair["text"]:
            assert contrast(pair["text"], pair["shape"]) >= 4.5, pair
    assert any(pair["text"] for pair in pairs)
