"""The sweep of a pasted 1,000-message session, as a visitor sees it on the production server
(`compaction-playground serve`, two workers): pasted through the real textarea, its sweep page
shows a progress bar at once, and the result appears in its place, without a reload. (How fast
the page first answers is measured by bench/jobs.py, not here.)"""

from __future__ import annotations

import json
import re
import time
import urllib.parse

from playwright.sync_api import expect

from bench.transcript import pasteable_transcript
from tests.servers import production_server


def test_a_pasted_1000_message_sessions_sweep_shows_a_bar_then_its_result_without_a_reload(page, tmp_path):
    # A chat of its own (the server keeps results by their inputs: an earlier run's is not this one's).
    body = json.dumps(pasteable_transcript(1000, seed=time.time_ns()), ensure_ascii=False)
    # Its transcripts and jobs in the checkout's instance folder, as `serve` keeps them.
    with production_server(tmp_path / "server") as base:
        page.goto(f"{base}/transcripts/new")
        # Into the real textarea at once (Playwright's fill types 1.3 MB for longer than the test may wait).
        page.locator("#transcript").evaluate("(area, text) => { area.value = text; area.dispatchEvent(new Event('input', {bubbles: true})); }", body)
        page.click("#transcript-submit")
        page.wait_for_url(re.compile(r"/play/t-[0-9a-f]{16}"), timeout=60_000)
        name = urllib.parse.urlsplit(page.url).path.removeprefix("/play/")
        answer = page.goto(f"{base}/sweep/{name}?window=128000&keeps=2")
        assert answer.status == 200
        expect(page.locator("#job-progress-bar")).to_be_visible()
        expect(page.locator("#advice")).to_have_count(0)
        page.evaluate("window.stillTheSamePage = true")  # gone if the page were loaded again
        expect(page.locator("#advice")).to_be_visible(timeout=300_000)
        assert page.evaluate("window.stillTheSamePage === true"), "the result came in place, not by a reload"
        expect(page.locator("#job-progress-bar")).to_have_count(0)
        assert page.url.endswith(f"/sweep/{name}?window=128000&keeps=2"), "the address is still the sweep's link"
        again = page.goto(f"{base}/sweep/{name}?window=128000&keeps=2")  # asked again: at once
        assert again.status == 200 and page.locator("#job-progress-bar").count() == 0 and page.locator("#advice").count() == 1
