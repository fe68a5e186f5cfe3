"""The settings on the page as each product's own configuration (docs/harnesses.md cites every
key): Codex CLI's config.toml, Gemini CLI's settings.json, Claude Code's environment variables,
Anthropic's `context_management`, OpenHands' condenser config, LangChain's middleware.

Each snippet sets what the product lets one set; a comment says where the playground differs
(a line the product would lower, a figure the product fixes), so pasted code never claims more
than it does.
"""

from __future__ import annotations

import json

from ..settings import Settings
from ..strategy_catalog import CLAUDE_CODE_OUTPUT_RESERVE, STRATEGIES


def codex(settings: Settings) -> str:
    tokens = round(settings.limit)
    lines = [
        "# ~/.codex/config.toml",
        f"model_context_window = {settings.window}",
        f"model_auto_compact_token_limit = {tokens}  # {settings.effective_threshold:.1%} of the window",
    ]
    if settings.threshold > settings.effective_threshold:
        lines.append(f"# {settings.threshold:.0%} was asked: Codex lowers any limit above 90% of the window to 90%.")
    lines.append("# Kept after a compaction: the newest user messages, up to 20,000 tokens (fixed in Codex).")
    return "\n".join(lines)


def gemini(settings: Settings) -> str:
    """.gemini/settings.json: the share of the model's limit it compresses at; the newest 30%
    it keeps is fixed in Gemini CLI (plain JSON, so no comment says it here)."""
    config = {"model": {"compressionThreshold": round(settings.threshold, 4)}, "tools": {"truncateToolOutputThreshold": 40000}}
    return json.dumps(config, indent=2)


def claude_code(settings: Settings) -> str:
    """Claude Code takes the override as a percentage of the window less its output reserve,
    floored, and keeps the lower of that and its own line (cli.js of 2.0.76 and 2.1.30). The
    reserve is min(CLAUDE_CODE_MAX_OUTPUT_TOKENS, the model's cap), and since 2.1.21 at most
    20,000: a smaller one is that variable, a larger one a version before 2.1.21."""
    reserve = STRATEGIES["claude-code"].trigger.reserved(settings)
    output = settings.output_reserve
    lines = [f"export CLAUDE_CODE_AUTO_COMPACT_WINDOW={settings.window}"]
    if output < CLAUDE_CODE_OUTPUT_RESERVE:
        lines.append(f"export CLAUDE_CODE_MAX_OUTPUT_TOKENS={output}  # the output reserve, under Claude Code 2.1's 20,000")
    elif output > CLAUDE_CODE_OUTPUT_RESERVE:
        lines.append(
            f"# An output reserve of {output:,} tokens is Claude Code 2.0.0 to 2.1.20's (the model's max output, "
            "CLAUDE_CODE_MAX_OUTPUT_TOKENS, 32,000 by default); 2.1.21 and later reserve at most 20,000."
        )
    if settings.window <= reserve:
        lines.append(f"# Claude Code keeps {reserve:,} tokens free below the window: on this one it compacts before every request.")
    else:
        effective = settings.window - output
        percent = round(settings.limit * 100 / effective, 4)
        lines += [
            f"export CLAUDE_AUTOCOMPACT_PCT_OVERRIDE={percent:g}  # of the window less the {output:,}-token output reserve: {round(settings.limit):,} tokens",
            f"# The override (above 0, at most 100) can only lower Claude Code's own line, the window less {reserve:,} tokens.",
        ]
    lines.append("# DISABLE_AUTO_COMPACT=1 turns automatic compaction off; /compact [focus] compacts by hand.")
    return "\n".join(lines)


def anthropic_compaction(settings: Settings) -> str:
    tokens = round(settings.limit)
    lines = [
        '# client.beta.messages.create(..., betas=["compact-2026-01-12"], context_management=context_management)',
        "context_management = {",
        '    "edits": [',
        "        {",
        '            "type": "compact_20260112",',
        f'            "trigger": {{"type": "input_tokens", "value": {tokens}}},  # the API default is 150,000',
        "        }",
        "    ]",
        "}",
    ]
    if tokens < 50_000:
        lines.insert(1, f"# {tokens:,} tokens is under the 50,000-token minimum the documentation gives: the API refuses it.")
    return "\n".join(lines)


def openhands(settings: Settings) -> str:
    if settings.strategy == "openhands-masking":
        window = STRATEGIES["openhands-masking"].params["attention_window"]
        return "\n".join([
            "from openhands.core.config.condenser_config import ObservationMaskingCondenserConfig",
            "",
            f"condenser = ObservationMaskingCondenserConfig(attention_window={window})",
        ])
    params = STRATEGIES["openhands-summarizing"].params
    return "\n".join([
        "from openhands.core.config.condenser_config import LLMSummarizingCondenserConfig",
        "",
        "condenser = LLMSummarizingCondenserConfig(",
        "    llm_config=llm_config,  # the model that writes the summaries",
        f"    keep_first={params['keep_first']},",
        f"    max_size={params['max_size']},  # condense past this many events",
        ")",
        f"# It condenses on the number of events; the playground also condenses above the {settings.window:,}-token window,",
        "# where OpenHands condenses after the provider's context-window error.",
    ])


def langchain(settings: Settings) -> str:
    params = STRATEGIES["langchain-summarization"].params
    return "\n".join([
        "from langchain.agents import create_agent",
        "from langchain.agents.middleware import SummarizationMiddleware",
        "",
        "summarization = SummarizationMiddleware(",
        "    model=summary_model,",
        f'    trigger=("tokens", {round(settings.limit)}),  # {settings.threshold:.0%} of {settings.window:,}; no trigger: it never summarizes',
        f'    keep=("messages", {params["keep_messages"]}),',
        f"    trim_tokens_to_summarize={params['trim_tokens']},",
        ")",
        "agent = create_agent(model, tools=tools, middleware=[summarization])",
    ])


# strategy -> (language, writer): the product's own configuration for each harness.
HARNESS_CODE = {
    "codex-cli": ("toml", codex),
    "gemini-cli": ("json", gemini),
    "claude-code": ("shell", claude_code),
    "anthropic-compaction": ("python", anthropic_compaction),
    "openhands-summarizing": ("python", openhands),
    "openhands-masking": ("python", openhands),
    "langchain-summarization": ("python", langchain),
}
