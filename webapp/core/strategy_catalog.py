"""The strategies on offer, one record each: what the interface says of it, the engine's levels
it runs in order (engine/strategies.py, `LEVELS`), and what sets it apart.

Adding a strategy made of existing levels is one record here, plus its description in the
catalogs (scripts/i18n); every page, the command line, the JSON twins and the comparison
read this list. A strategy that needs a new kind of step adds that level to the engine too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .i18n import N_

# The settings a line reads are Settings (settings.py), which imports this catalog: they are
# typed `object` here and read by name (Trigger.reserve_setting), so the two make no circle.


@dataclass(frozen=True)
class Trigger:
    """When a product compacts by default, as its source or documentation says (docs/harnesses.md):
    a share of the window, a number of input tokens, or the window minus a reserve."""

    share: float | None = None
    tokens: int | None = None
    reserve: int | None = None
    # The setting whose tokens the product reserves too, on top of `reserve` (Claude Code's
    # output reserve, which depends on its version: `output_reserve`).
    reserve_setting: str = ""
    # The product lowers a higher setting to its default (Codex's config and Claude Code's
    # override "can only lower it").
    lower_only: bool = False
    # The product refuses a trigger under this many tokens (Anthropic's compaction).
    minimum_tokens: int | None = None
    # It also compacts past this many messages, whatever their tokens (OpenHands' max_size).
    messages: int | None = None
    # It acts before every call, above the line or not (OpenHands' observation masking).
    every_call: bool = False
    # It measures the last request sent, as the provider counted it, not the one about to be
    # sent, and acts from the line up (Gemini CLI's lastPromptTokenCount: the new messages
    # join the history after the check).
    last_request: bool = False

    def reserved(self, settings: object) -> int | None:
        """The tokens the product keeps free below the window with `settings` (None: its line
        is no reserve)."""
        if self.reserve is None:
            return None
        return self.reserve + (getattr(settings, self.reserve_setting) if self.reserve_setting else 0)

    def share_of(self, window: int, settings: object) -> float | None:
        """The product's default line as a share of `window` with `settings` (None: it has no
        default), kept inside what the line accepts (above 0, at most the window)."""
        if self.share is not None:
            return self.share
        if self.tokens is not None:
            value = self.tokens / window
        elif self.reserve is not None:
            value = (window - self.reserved(settings)) / window
        else:
            return None
        return min(1.0, max(0.01, round(value, 4)))


@dataclass(frozen=True)
class Strategy:
    name: str
    description: str  # marked for translation; the web layer says it in the page's language
    levels: tuple[str, ...]  # names of the engine's levels, run in order until the request fits
    # It may separate a tool call from its results, on purpose: a comparison never recommends
    # it, even on a chat where its requests happened to stay valid.
    breaks_pairs: bool = False
    # The manual's budget by layer: it keeps long-term memory whole, and the page shows the
    # layers' strip whatever the chat holds.
    by_layer: bool = False
    # The settings only this strategy reads: offered with it, carried along otherwise.
    options: tuple[str, ...] = ()
    # "textbook": the pattern page's and the manual's levels; "harness": what a product does
    # (the comparison shows each family apart).
    family: str = "textbook"
    product: str = ""  # the product's own name, as it spells it (not translated)
    trigger: Trigger | None = None  # the product's default line
    # The product's own figures its levels read (keep budgets, sizes), by name.
    params: dict[str, Any] = field(default_factory=dict)
    # A textbook strategy stops as soon as the request fits; a product runs its steps as it does.
    until_fits: bool = True
    style: str = "textbook"  # the summarizer's instructions (engine/harness_prompts.py)
    # How the product draws its KEEP (engine/compaction.py, `KEEP_RULES`); "" for the
    # settings' keep and keep_unit.
    keep_rule: str = ""
    # The transcript formats (inputs/formats/) this product writes its sessions in: a session
    # read from one was compacted by this harness, and the comparison shows it beside the panel.
    formats: tuple[str, ...] = ()

    @property
    def summarizes(self) -> bool:
        """It calls the summarizer, so "keep facts" changes what it does."""
        return any(level in SUMMARIZING_LEVELS for level in self.levels)

    @property
    def harness(self) -> bool:
        return self.family == "harness"

    def defaults(self, window: int, base: object) -> dict[str, Any]:
        """The settings this product starts from on a `window`-token model, from `base` (what
        its line reads, such as Claude Code's output reserve): its line. A page or the command
        line applies them where it sets nothing itself (settings.parse_settings)."""
        share = self.trigger.share_of(window, base) if self.trigger else None
        return {"threshold": share} if share is not None else {}


# The engine's levels that call the summarizer.
SUMMARIZING_LEVELS = frozenset(
    {"summarize", "codex-handoff", "state-snapshot", "claude-summary", "server-compaction", "condense", "langchain-summary"}
)


# Claude Code's auto-compact line, as the cli.js of @anthropic-ai/claude-code computes it (read
# in 2.1.21, 2.1.22 and 2.1.30; docs/harnesses.md): the model's window minus the output it
# reserves, min(the model's max output, 20,000), minus a 13,000-token buffer; an override can
# only lower it. Every Claude 4 model's max output passes 20,000 (Sonnet 4.5: CLAUDE_CODE_MAX_
# OUTPUT_TOKENS' default 32,000, under its 64,000 cap). Versions 2.0.0 to 2.1.20 reserved the
# whole max output: in 2.0.76's cli.js, min(CLAUDE_CODE_MAX_OUTPUT_TOKENS, default 32,000, and
# the model's cap, 64,000 for Sonnet 4 and Opus 4.5, 32,000 for the others but Claude 3
# Haiku's 4,096), so 32,000 (CLAUDE_CODE_OLD_OUTPUT_RESERVE). The reserve is a setting
# (`output_reserve`), which a session of those versions sets (formats/claude_code.py).
CLAUDE_CODE_OUTPUT_RESERVE = 20_000
CLAUDE_CODE_OLD_OUTPUT_RESERVE = 32_000
CLAUDE_CODE_AUTOCOMPACT_BUFFER = 13_000

# The production harnesses, each at its product's defaults (docs/harnesses.md cites every one).
HARNESSES = (
    Strategy(
        "codex-cli",
        N_(
            "as OpenAI Codex CLI does it: at 90 percent of the window, the history becomes a handoff summary "
            "after the newest user messages (up to 20,000 tokens); every reply and tool result goes"
        ),
        ("codex-handoff",),
        family="harness",
        keep_rule="newest-request",
        product="OpenAI Codex CLI",
        trigger=Trigger(share=0.9, lower_only=True),
        params={"user_tokens": 20_000},
        until_fits=False,
        style="codex",
        formats=("codex",),
    ),
    Strategy(
        "gemini-cli",
        N_(
            "as Gemini CLI does it: at 50 percent of the window, old tool output is cut to a 50,000-token "
            "budget, then all but the newest 30 percent of the history becomes a state snapshot that merges the last one"
        ),
        ("tool-budget", "state-snapshot"),
        family="harness",
        keep_rule="newest-share",
        product="Gemini CLI",
        # chatCompressionService.ts compress(): no compression while
        # chat.getLastPromptTokenCount() < 0.5 * tokenLimit(model), the count being the last
        # response's usageMetadata.promptTokenCount (geminiChat.ts); client.ts checks it before
        # the new message is added. The same at v0.35.0 and v0.39.0 (the sessions' versions).
        trigger=Trigger(share=0.5, last_request=True),
        params={"preserve": 0.3, "tool_tokens": 50_000, "excerpt_chars": 40_000},
        until_fits=False,
        style="gemini",
        formats=("gemini-cli",),
    ),
    Strategy(
        "claude-code",
        N_(
            "as Claude Code does it: at its own line, the window minus its output reserve (20,000 tokens "
            "since 2.1.21, 32,000 before) and a 13,000-token buffer, old tool output is cleared, then everything "
            "but the last turn becomes a summary with the recent files re-read (these steps approximate: its source is not public)"
        ),
        ("microcompact", "claude-summary"),
        family="harness",
        options=("output_reserve",),
        keep_rule="last-turn",
        product="Claude Code",
        trigger=Trigger(reserve=CLAUDE_CODE_AUTOCOMPACT_BUFFER, reserve_setting="output_reserve", lower_only=True),
        params={"tool_results_kept": 5, "files": 5, "file_tokens": 5_000},
        style="claude",
        formats=("claude-code",),
    ),
    Strategy(
        "anthropic-compaction",
        N_(
            "as Anthropic's API compaction (compact_20260112) does it: past 150,000 input tokens, "
            "everything before the last turn becomes one compaction block"
        ),
        ("server-compaction",),
        family="harness",
        keep_rule="last-turn",
        product="Anthropic API",
        trigger=Trigger(tokens=150_000, minimum_tokens=50_000),
        until_fits=False,
        style="anthropic",
    ),
    Strategy(
        "openhands-summarizing",
        N_(
            "as OpenHands' LLM summarizing condenser does it: past 100 messages (or the window), the "
            "first message stays, the newest half of 100 stays, and the middle becomes a summary that merges the last one"
        ),
        ("condense",),
        family="harness",
        keep_rule="condenser-tail",
        product="OpenHands",
        trigger=Trigger(share=1.0, messages=100),
        params={"max_size": 100, "keep_first": 1},
        until_fits=False,
        style="openhands",
    ),
    Strategy(
        "openhands-masking",
        N_(
            "as OpenHands' observation masking condenser does it: before every call, tool results older "
            "than the last 100 messages become <MASKED>; no model call"
        ),
        ("mask",),
        family="harness",
        keep_rule="attention-window",
        product="OpenHands",
        trigger=Trigger(every_call=True),
        params={"attention_window": 100},
        until_fits=False,
    ),
    Strategy(
        "langchain-summarization",
        N_(
            "as LangChain's SummarizationMiddleware does it: at the line you set (it has no default), "
            "all but the last 20 messages become a summary written from at most their last 4,000 tokens"
        ),
        ("langchain-summary",),
        family="harness",
        keep_rule="last-messages",
        product="LangChain",
        params={"keep_messages": 20, "trim_tokens": 4_000, "trim_fallback_messages": 15},
        until_fits=False,
        style="langchain",
    ),
)

STRATEGIES: dict[str, Strategy] = {
    strategy.name: strategy
    for strategy in (
        Strategy("none", N_("never compacts: every call resends the whole history"), ()),
        Strategy("truncate", N_("level 1: old tool results become a one-line note"), ("truncate",)),
        Strategy("drop", N_("level 2: old exchanges are dropped whole"), ("drop",)),
        Strategy(
            "truncate-drop",
            N_("level 1, then level 2 if that was not enough, as the compact() code of the Compaction pattern page (the one this playground follows) does"),
            ("truncate", "drop"),
        ),
        Strategy("summarize", N_("old exchanges become one summary message (costs a model call)"), ("summarize",)),
        Strategy(
            "naive-drop",
            N_(
                "deliberately broken, for the lesson: drops one message at a time, oldest first, "
                "splitting tool calls from their results as some libraries do"
            ),
            ("naive-drop",),
            breaks_pairs=True,
        ),
        Strategy(
            "clear-tool-results",
            N_(
                "old tool results become a short placeholder, oldest first, at least a set number of "
                "tokens at a time (Anthropic's context editing)"
            ),
            ("clear",),
            options=("clear_at_least", "exclude_tools", "clear_tool_inputs"),
        ),
        Strategy(
            "by-layer",
            N_("the levels of the context-management manual: retrieval first, then old history, then the oldest; a notice if still too big"),
            ("retrieval", "truncate", "drop", "oldest", "notice"),
            by_layer=True,
        ),
        *HARNESSES,
    )
}

# The mission's panel, "truncate, drop and summarize side by side": the comparison opens on
# these three, beside the reader's own harness and the verdict's pick.
PANEL = ("truncate", "drop", "summarize")


def harness_writing(format_name: str) -> str | None:
    """The harness whose sessions are written in `format_name`, if one is."""
    return next((strategy.name for strategy in HARNESSES if format_name in strategy.formats), None)
