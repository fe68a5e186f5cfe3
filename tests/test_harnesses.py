"""The production harnesses as strategies (docs/harnesses.md): their defaults pinned against
the sources the docs cite; on generated agent runs, pair safety, KEEP as each product defines
it and where each stops; their defaults meeting the settings and the URL; every harness on
every real trajectory and transcript fixture through the web, with no 5xx."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings as hypothesis_settings
from hypothesis import strategies as st

from webapp.core.engine.history import TOOL_RESULT_ROLES
from webapp.core.engine.replay import replay
from webapp.core.settings import Settings, changed_from, parse_settings
from webapp.core.engine.harnesses import (
    claude_code, codex_cli, gemini_cli, langchain_summarization, openhands_masking, openhands_summarizing,
)
from webapp.core.engine.strategy_catalog import HARNESSES, STRATEGIES
from webapp.core.output.snippets import settings_code

from .test_agent_runs import agent_runs

EXAMPLES = hypothesis_settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAMES = tuple(strategy.name for strategy in HARNESSES)
FIXTURES = Path(__file__).parent / "fixtures"


# --- The defaults, against their sources ------------------------------------------------------


def test_codex_defaults_are_those_of_codex_rs():
    """openai/codex codex-rs/protocol/src/openai_models.rs (auto_compact_token_limit: window * 9 / 10,
    clamped since PR #11516) and codex-rs/core/src/compact.rs (COMPACT_USER_MESSAGE_MAX_TOKENS)."""
    codex = STRATEGIES["codex-cli"]
    assert codex.trigger.share == 0.9 and codex.trigger.lower_only
    assert (codex_cli.USER_TOKENS, codex_cli.BYTES_PER_TOKEN) == (20_000, 4)
    assert parse_settings({"strategy": "codex-cli", "window": "272000"}).limit == 244_800  # 272,000 * 9 / 10


def test_gemini_defaults_are_those_of_chat_compression_service():
    """google-gemini/gemini-cli packages/core/src/context/chatCompressionService.ts @ 5411f113:
    DEFAULT_COMPRESSION_TOKEN_THRESHOLD, COMPRESSION_PRESERVE_THRESHOLD,
    COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET; config.ts DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD."""
    gemini = STRATEGIES["gemini-cli"]
    assert gemini.trigger.share == 0.5
    assert (gemini_cli.PRESERVE, gemini_cli.TOOL_TOKENS, gemini_cli.EXCERPT_CHARS) == (0.3, 50_000, 40_000)


def test_claude_code_defaults_are_the_reported_formula():
    """The auto-compact line of @anthropic-ai/claude-code's cli.js 2.1.21 to 2.1.30 (window -
    min(max output, 20,000) - 13,000; tests/test_claude_code_sessions.py) and the "What survives
    compaction" table of code.claude.com/docs/en/context-window (5 files, 5,000 tokens)."""
    claude = STRATEGIES["claude-code"]
    assert claude.trigger.reserve == 13_000 and claude.trigger.lower_only
    assert Settings().output_reserve == 20_000 and claude.options == ("output_reserve",)
    assert parse_settings({"strategy": "claude-code", "window": "200000"}).limit == 167_000  # 83.5%
    # 2.0.0 to 2.1.20 reserved the whole max output, 32,000 by default.
    assert parse_settings({"strategy": "claude-code", "window": "200000", "output_reserve": "32000"}).limit == 155_000
    assert (claude_code.FILES, claude_code.FILE_TOKENS, claude_code.TOOL_RESULTS_KEPT) == (5, 5_000, 5)


def test_anthropic_compaction_defaults_are_those_of_the_sdk():
    """anthropics/anthropic-sdk-python beta_compact_20260112_edit_param.py @ 009b035 (150,000) and the
    compaction docs' parameters (minimum 50,000, secondary)."""
    trigger = STRATEGIES["anthropic-compaction"].trigger
    assert (trigger.tokens, trigger.minimum_tokens) == (150_000, 50_000)
    settings = parse_settings({"strategy": "anthropic-compaction", "window": "200000"})
    assert (settings.threshold, settings.limit) == (0.75, 150_000)


def test_openhands_defaults_are_those_of_condenser_config():
    """OpenHands/OpenHands openhands/core/config/condenser_config.py @ d6fab190: LLMSummarizingCondenserConfig
    (keep_first 1, max_size 100), ObservationMaskingCondenserConfig (attention_window 100)."""
    assert openhands_summarizing.KEEP_FIRST == 1
    assert STRATEGIES["openhands-summarizing"].trigger.messages == 100
    assert openhands_masking.ATTENTION_WINDOW == 100


def test_langchain_defaults_are_those_of_summarization_middleware():
    """langchain 1.5.0 langchain/agents/middleware/summarization.py: no default trigger,
    _DEFAULT_MESSAGES_TO_KEEP 20, _DEFAULT_TRIM_TOKEN_LIMIT 4,000, fallback of 15 messages."""
    langchain = STRATEGIES["langchain-summarization"]
    assert langchain.trigger is None and parse_settings({"strategy": "langchain-summarization"}, Settings(threshold=0.7)).threshold == 0.7
    assert (
        langchain_summarization.KEEP_MESSAGES, langchain_summarization.TRIM_TOKENS, langchain_summarization.TRIM_FALLBACK_MESSAGES
    ) == (20, 4_000, 15)


# --- Defaults and the settings ----------------------------------------------------------------


def test_a_harness_takes_its_line_unless_one_is_set_and_links_leave_it_out():
    base = Settings(window=32_768, threshold=0.8)
    picked = parse_settings({"strategy": "gemini-cli"}, base)
    assert picked.threshold == 0.5 and changed_from(picked, base) == {"strategy": "gemini-cli"}
    chosen = parse_settings({"strategy": "gemini-cli", "threshold": "0.7"}, base)
    assert chosen.threshold == 0.7 and changed_from(chosen, base) == {"strategy": "gemini-cli", "threshold": 0.7}
    assert parse_settings({"strategy": "truncate"}, base).threshold == 0.8


def test_claude_codes_line_follows_its_output_reserve_and_links_carry_only_the_reserve():
    base = Settings(window=200_000, output_reserve=32_000)  # a session of Claude Code 2.0.76
    own = parse_settings({"strategy": "claude-code"}, base)
    assert own.limit == 155_000 and changed_from(own, base) == {"strategy": "claude-code"}
    chosen = parse_settings({"strategy": "claude-code", "output_reserve": "20000"}, base)
    assert chosen.limit == 167_000 and changed_from(chosen, base) == {"strategy": "claude-code", "output_reserve": 20_000}
    assert parse_settings(changed_from(chosen, base), base) == chosen, "the link gives the same page"
    # A line set by hand stays, lowered to the product's own where above it.
    assert parse_settings({"strategy": "claude-code", "threshold": "0.9", "output_reserve": "40000"}, base).limit == 147_000
    # Another strategy carries the reserve along and keeps its own line.
    assert parse_settings({"strategy": "truncate", "output_reserve": "40000"}, base).threshold == base.threshold


def test_codex_lowers_a_line_above_ninety_percent_and_says_so():
    scenario = agent_scenario()
    result = replay(scenario, parse_settings({"strategy": "codex-cli", "threshold": "0.95", "window": "2000"}))
    assert result.settings.limit == 1800
    assert any("only lets its line be lowered" in warning and "90%" in warning for warning in result.warnings)


def test_anthropic_refuses_a_line_under_fifty_thousand_tokens():
    result = replay(agent_scenario(), parse_settings({"strategy": "anthropic-compaction", "window": "8000"}))
    assert any("under 50,000 tokens" in warning for warning in result.warnings)
    assert any("150,000 tokens, is beyond this 8,000-token window" in warning for warning in result.warnings)


@pytest.mark.parametrize("name", NAMES)
def test_each_harness_has_its_products_configuration_as_code(name):
    settings = parse_settings({"strategy": name, "window": "200000"})
    (snippet,) = settings_code(settings)
    assert snippet.kind == "harness"
    keys = {
        "codex-cli": "model_auto_compact_token_limit = 180000",
        "gemini-cli": '"compressionThreshold": 0.5',
        # 167,000 of 180,000, the window less the output reserve: floor(180,000 × 92.7778%) = 167,000.
        "claude-code": "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=92.7778",
        "anthropic-compaction": '"type": "compact_20260112"',
        "openhands-summarizing": "max_size=100",
        "openhands-masking": "attention_window=100",
        "langchain-summarization": 'keep=("messages", 20)',
        "ollama": "export OLLAMA_CONTEXT_LENGTH=4096",
    }
    assert keys[name] in snippet.code


def test_claude_codes_configuration_says_an_output_reserve_other_than_its_own():
    older = settings_code(parse_settings({"strategy": "claude-code", "window": "200000", "output_reserve": "32000"}))[0].code
    # 155,000 of 168,000, the window less 2.0.76's 32,000-token reserve: floor(168,000 × 92.2619%) = 155,000.
    assert "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=92.2619" in older and "Claude Code 2.0.0 to 2.1.20" in older
    smaller = settings_code(parse_settings({"strategy": "claude-code", "window": "200000", "output_reserve": "8192"}))[0].code
    assert "export CLAUDE_CODE_MAX_OUTPUT_TOKENS=8192" in smaller


# --- On generated agent runs ------------------------------------------------------------------


def agent_scenario():
    chat = [{"role": "user", "content": "fix the build " * 20}]
    for turn in range(12):
        call_id = f"call_{turn}"
        chat.append({"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]})
        chat.append({"role": "tool", "tool_call_id": call_id, "content": f"line {turn} " * 200})
        if turn % 4 == 3:
            chat.append({"role": "assistant", "content": "done with this part"})
            chat.append({"role": "user", "content": f"next part {turn}"})
    from .test_agent_runs import run_scenario

    return run_scenario(chat, [])


def harness_settings():
    return st.builds(
        Settings,
        strategy=st.sampled_from(NAMES),
        window=st.integers(400, 30_000),
        threshold=st.sampled_from([0.3, 0.5, 0.8, 0.9, 1.0]),
        counter=st.sampled_from(["estimate", "o200k_base"]),
        keep_facts=st.booleans(),
    )


@EXAMPLES
@given(agent_runs(), harness_settings())
def test_every_harness_keeps_tool_pairs_and_stops_as_its_product_does(scenario, chosen):
    result = replay(scenario, chosen)
    strategy = STRATEGIES[chosen.strategy]
    for call, before in zip(result.calls, [None, *result.calls]):
        assert call.valid, (chosen.strategy, call.problems)
        compaction = call.compaction
        if compaction is None:
            continue
        # It acts only as its product's trigger says: above its line, past its messages, or always.
        history = result.history_before(call.number)
        trigger = strategy.trigger
        if not (trigger and (trigger.every_call or (trigger.messages and len(history) > trigger.messages))):
            assert compaction.tokens_before > chosen.limit
        if compaction.summarized:
            assert compaction.summarizer_input > 0  # billed with its summarizer call
        assert call.sent_total >= call.tokens + (before.sent_total if before else 0)


@EXAMPLES
@given(agent_runs(), harness_settings(), st.sampled_from(["langchain-summarization", "gemini-cli", "openhands-summarizing", "claude-code", "anthropic-compaction"]))
def test_a_harness_never_touches_its_keep(scenario, chosen, name):
    """KEEP as the product defines it (each harness's `keep_rule`, in its module of webapp/core/engine/harnesses/): what follows the new
    summary is the end of the history as it stood, message for message, starting on a request or
    a reply, never on a tool result."""
    result = replay(scenario, chosen.model_copy(update={"strategy": name}))
    for call in result.calls:
        if call.compaction is None or not call.compaction.summarized:
            continue
        before = result.history_before(call.number)
        position = next(i for i, block in enumerate(call.blocks) if block.id == call.compaction.summary_id)
        # What the loop wrote itself (summaries, Gemini CLI's acknowledgement: ids s1, s2…) is no
        # part of the history's end.
        tail = [block for block in call.blocks[position + 1 :] if not block.id.startswith("s")]
        assert [block.id for block in tail] == [block.id for block in before[len(before) - len(tail) :]]
        if tail:
            assert tail[0].role not in TOOL_RESULT_ROLES
        if name == "langchain-summarization":  # the last 20 messages, more when 20 would start on a result
            assert len(tail) >= min(20, len(before) - 1)
        if name == "gemini-cli":  # the snapshot, the model's acknowledgement, then a request
            assert [block.role for block in call.blocks[:3]] == ["user", "assistant", "user"]
        if name == "openhands-summarizing":  # keep_first: the first message stays
            assert call.blocks[0].id == before[0].id and position == 1


@EXAMPLES
@given(agent_runs(), harness_settings())
def test_codex_keeps_only_user_messages_within_its_budget_then_the_summary(scenario, chosen):
    result = replay(scenario, chosen.model_copy(update={"strategy": "codex-cli"}))
    for call in result.calls:
        compaction = call.compaction
        if compaction is None or not compaction.summarized:
            continue
        summary = call.blocks[-1]  # the handoff summary comes last, as a user message
        assert summary.id == compaction.summary_id and summary.role == "user"
        assert summary.text.startswith("[Checkpoint")
        kept = call.blocks[:-1]
        assert all(block.role == "user" for block in kept)
        assert sum(result.block_tokens(block) for block in kept) <= 20_000


# --- Every harness on every real fixture, through the web ------------------------------------


# The agents' own session files too, but the two Ollama answers, which are refused by design
# (a response body is not the conversation: tests/test_session_formats.py).
SESSIONS = [path for path in sorted((FIXTURES / "sessions").glob("*/*")) if path.suffix != ".md" or "aider" in path.parts[-2]]
REAL = [
    *sorted((FIXTURES / "trajectories").glob("*.json")),
    *sorted((FIXTURES / "transcripts").glob("*.json")),
    *(path for path in SESSIONS if "response" not in path.name and path.name != "SOURCES.md"),
]


@pytest.mark.parametrize("path", REAL, ids=lambda path: path.name)
def test_every_harness_plays_and_compares_every_real_session(client, path):
    answer = client.post("/transcripts", data={"transcript": path.read_text()})
    assert answer.status_code in (302, 303), answer.data[:300]
    link = answer.headers["Location"].split("?")[0]
    name = link.rsplit("/", 1)[1]
    for strategy in NAMES:
        for url in (f"/play/{name}?strategy={strategy}&window=4000", f"/play/{name}.json?strategy={strategy}&window=200000&call=2"):
            page = client.get(url)
            assert page.status_code < 500, (url, page.data[:300])
    compared = client.get(f"/compare/{name}.json?window=6000")
    assert compared.status_code == 200
    families = {row["strategy"]: row["family"] for row in json.loads(compared.data)["strategies"]}
    assert {families[name] for name in NAMES} == {"harness"}
    assert all(row["valid_requests"] for row in json.loads(compared.data)["strategies"] if row["family"] == "harness")
