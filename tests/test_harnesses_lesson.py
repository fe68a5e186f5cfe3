"""Lesson 11, The harnesses (scenarios/harnesses.toml): the figures its narration and
docs/harnesses.md state, at the calls they are stated for, and its comparison page."""

from __future__ import annotations

import json
import re

import pytest

from tests.links import link_state
from webapp.core.analysis.compare import compare
from webapp.core.inputs.library import scenario_library

HARNESS_COLUMNS = ("codex-cli", "gemini-cli", "claude-code", "anthropic-compaction", "openhands-summarizing", "openhands-masking", "langchain-summarization")


@pytest.fixture(scope="module")
def comparison():
    return compare(scenario_library().scenarios["harnesses"])


def test_each_harness_runs_at_its_own_line(comparison):
    lines = {column.key: round(column.settings.limit) for column in comparison.columns}
    assert [lines[name] for name in HARNESS_COLUMNS] == [29_491, 16_384, 328, 32_768, 32_768, 26_214, 26_214]
    assert lines["summarize"] == 26_214  # the textbook strategies keep the scenario's line


def test_only_codex_still_sends_the_early_fact_when_it_is_needed(comparison):
    lost = {column.key: [fate.lost_from for fate in column.authored_lost] for column in comparison.columns if column.family == "harness"}
    assert lost == {
        "codex-cli": [], "openhands-masking": [], "gemini-cli": [26], "claude-code": [26],
        "anthropic-compaction": [26], "openhands-summarizing": [26], "langchain-summarization": [26],
        "ollama": [26],  # its server leaves out what passes num_ctx, 4,096 tokens by default
    }
    assert comparison.column("openhands-masking").overflows == 16  # it keeps the fact by never fitting


def test_codex_costs_least_and_langchain_rewrites_the_cache_most(comparison):
    """Of the products that compact: Ollama's server sends less than any, by leaving out
    everything past 4,096 tokens."""
    harnesses = [column for column in comparison.columns if column.key in HARNESS_COLUMNS]
    cheapest = min(harnesses, key=lambda column: column.bill.cost)
    assert (cheapest.key, round(cheapest.bill.cost, 4)) == ("codex-cli", 0.6455)
    rewritten = {column.key: sum(p["tokens"] for p in column.pitfalls("cache")) for column in harnesses}
    assert max(rewritten, key=rewritten.get) == "langchain-summarization"
    assert rewritten["langchain-summarization"] == 429_409
    assert comparison.column("langchain-summarization").cached_total == 147_072
    # Codex keeps the authored fact, but its handoff summary drops the path of the legacy
    # module (found by the grep at call 3) that the agent reads again at call 17: a value it
    # used again (analysis/references.py), so the verdict advises the cheapest textbook
    # strategy that lost nothing instead.
    codex = comparison.column("codex-cli")
    assert [(fate.reference.value, fate.lost_from) for fate in codex.references_lost] == [("quotes/legacy/money_v1.py", 17)]
    assert comparison.verdict.winner == "truncate"


def test_claude_code_compacts_at_every_call_on_a_small_window(comparison):
    claude = comparison.column("claude-code")
    loops = claude.pitfalls("loop")
    assert (len(loops), loops[0]["call"], claude.compactions) == (26, 2, 26)
    first = claude.call(2).compaction
    assert (first.tokens_before, first.tokens_after) == (6_239, 6_255)  # the summary and a file read again
    assert any("keeps 33,000 tokens free below the window" in warning for warning in claude.result.warnings)


def test_the_compactions_the_narration_names(comparison):
    def at(key, number):
        compaction = comparison.column(key).call(number).compaction
        return compaction.tokens_before, compaction.tokens_after

    assert at("codex-cli", 11) == (30_291, 413)
    assert at("gemini-cli", 7) == (18_818, 291)
    assert at("anthropic-compaction", 12) == (33_441, 3_431)
    langchain = comparison.column("langchain-summarization")
    assert (langchain.compactions, langchain.pitfalls("loop")[0]["call"]) == (16, 11)


def test_the_comparison_page_shows_every_harness_beside_the_textbook_strategies(client):
    page = client.get("/compare/harnesses?call=26")
    assert page.status_code == 200
    text = page.data.decode()
    textbook = text.index("The textbook strategies")
    harnesses = text.index("As the production harnesses do it")
    assert textbook < harnesses
    for name in HARNESS_COLUMNS:
        assert text.index(f'data-strategy="{name}"') > harnesses
    assert "Its own line, not the red line: 90% of the window, 29,491 tokens" in text
    data = json.loads(client.get("/compare/harnesses.json?call=26").data)
    rows = {row["strategy"]: row for row in data["strategies"]}
    assert rows["langchain-summarization"]["cache_rewritten"] == 429_409
    assert rows["claude-code"]["loop_compactions"] == 26


def test_a_harness_column_opens_the_play_page_at_its_own_line(client):
    page = client.get("/compare/harnesses?call=11").data.decode()
    links = [link_state(href) for href in re.findall(r'href="(/play/harnesses[^"]*)"', page)]
    assert ("/play/harnesses", {"strategy": "codex-cli", "call": "11"}) in links
    play = client.get("/play/harnesses?call=11&strategy=codex-cli").data.decode()
    assert "handoff summary placed after the user messages" in play


def test_a_compaction_that_grows_the_request_is_told_as_such_not_as_a_small_saving(comparison):
    """Claude Code's reserve outweighs this window: at call 2 its summary is bigger than what
    it replaced. That is its own pitfall; a small saving is never a negative one."""
    for column in comparison.columns:
        for pitfall in column.pitfalls("small"):
            assert pitfall["saved"] >= 0, (column.key, pitfall)
        for pitfall in column.pitfalls("grew"):
            compaction = column.call(pitfall["call"]).compaction
            assert compaction.tokens_after - compaction.tokens_before == pitfall["grew"] > 0
    assert comparison.column("claude-code").pitfalls("grew")
