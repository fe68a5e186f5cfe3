"""Transcripts of every format in a real browser: pasted through the textarea or uploaded, the
page says which format it read, and says it again after every step and setting change."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"
SAMPLES = {
    "anthropic-parallel-tools.json": "Anthropic Messages",
    "responses-reasoning-function-call.json": "OpenAI Responses API input items",
    "swe-agent-function-calling-simple.traj.json": "SWE-agent trajectory",
    "chat-legacy-functions.json": "OpenAI chat completions",
}


@pytest.mark.parametrize("name", SAMPLES)
def test_a_pasted_transcript_says_what_it_was_read_as(page, live_server, name):
    page.goto(f"{live_server}/transcripts/new")
    page.fill("#transcript", (FIXTURES / name).read_text(encoding="utf-8"))
    page.click("#transcript-submit")
    page.wait_for_url("**/play/t-*")
    expect(page.locator("#read-as")).to_contain_text(SAMPLES[name])
    expect(page.locator("#stepper .where .big")).to_have_text("Call 1")


def test_an_uploaded_trajectory_says_it_after_every_step(page, live_server):
    page.goto(f"{live_server}/transcripts/new")
    page.set_input_files("#file", str(FIXTURES / "swe-agent-function-calling-simple.traj.json"))
    page.click("#transcript-submit")
    page.wait_for_url("**/play/t-*")
    page.keyboard.press("ArrowRight")
    expect(page.locator("#stepper .where .big")).to_have_text("Call 2")
    expect(page.locator("#read-as")).to_contain_text("SWE-agent trajectory")
    expect(page.locator("#read-as")).to_contain_text("tool_call_ids became tool_call_id")


def test_the_anthropic_tokenizer_sentence_follows_the_counter(page, live_server):
    page.goto(f"{live_server}/transcripts/new")
    page.fill("#transcript", (FIXTURES / "anthropic-parallel-tools.json").read_text(encoding="utf-8"))
    page.click("#transcript-submit")
    page.wait_for_url("**/play/t-*")
    expect(page.locator("#read-as")).to_contain_text("not with Claude's tokenizer")
    page.select_option("#f-counter", "o200k_base")
    expect(page.locator("#read-as")).to_contain_text("o200k_base")
    assert "counter=o200k_base" in page.url


def test_a_real_codex_session_pasted_into_the_textarea_plays(page, live_server):
    session = Path(__file__).parent / "fixtures" / "sessions" / "codex" / "vibecodingtracker-codex-rollout.jsonl"
    page.goto(f"{live_server}/transcripts/new")
    page.fill("#transcript", session.read_text(encoding="utf-8"))
    page.click("#transcript-submit")
    page.wait_for_url("**/play/t-*")
    expect(page.locator("#read-as")).to_contain_text("Codex session (rollout)")
    expect(page.locator("#stepper .where .big")).to_have_text("Call 1")
