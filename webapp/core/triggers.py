"""Every strategy's name, and the line each product compacts at by default: what the settings
read (settings.py checks a name, draws a product's line, lowers a line its product only lets be
lowered), so it stands on the ground floor, beside them.

Everything else of a strategy is the engine's (engine/strategy_catalog.py, whose records hold
their levels as functions); a harness's levels, KEEP rule, summary prompt, settings as code and
the citations of every figure, its trigger's included, are its module in engine/harnesses/.
Adding a strategy is its engine record plus its line in `TRIGGERS`.
"""

from __future__ import annotations

from dataclasses import dataclass

# The settings a line reads are Settings (settings.py), which imports this module: they are
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
    # The setting whose tokens are the line itself, whatever the threshold: the context the
    # server runs the model at, past which it drops messages (Ollama's num_ctx). The model sees
    # no more than that, so it is also the window the model really has (Settings.real_window).
    line_setting: str = ""

    def reserved(self, settings: object) -> int | None:
        """The tokens the product keeps free below the window with `settings` (None: its line
        is no reserve)."""
        if self.reserve is None:
            return None
        return self.reserve + (getattr(settings, self.reserve_setting) if self.reserve_setting else 0)

    def line_tokens(self, window: int, settings: object) -> int:
        """The line in tokens of a `line_setting` trigger: the setting, at most the model's own
        window (`model_window`, else `window`), as the server caps it."""
        return min(getattr(settings, self.line_setting), settings.model_window or window)  # type: ignore[attr-defined]

    def share_of(self, window: int, settings: object) -> float | None:
        """The product's default line as a share of `window` with `settings` (None: it has no
        default), kept inside what the line accepts (above 0, at most the window)."""
        if self.share is not None:
            return self.share
        if self.line_setting:
            value = self.line_tokens(window, settings) / window
        elif self.tokens is not None:
            value = self.tokens / window
        elif self.reserve is not None:
            value = (window - self.reserved(settings)) / window
        else:
            return None
        return min(1.0, max(0.01, round(value, 4)))


# Claude Code's auto-compact line, as the cli.js of @anthropic-ai/claude-code computes it (read
# in 2.1.21, 2.1.22 and 2.1.30; docs/harnesses.md): the model's window minus the output it
# reserves, min(the model's max output, 20,000), minus a 13,000-token buffer; an override can
# only lower it. Every Claude 4 model's max output passes 20,000 (Sonnet 4.5: CLAUDE_CODE_MAX_
# OUTPUT_TOKENS' default 32,000, under its 64,000 cap). Versions 2.0.0 to 2.1.20 reserved the
# whole max output: in 2.0.76's cli.js, min(CLAUDE_CODE_MAX_OUTPUT_TOKENS, default 32,000, and
# the model's cap, 64,000 for Sonnet 4 and Opus 4.5, 32,000 for the others but Claude 3
# Haiku's 4,096), so 32,000 (CLAUDE_CODE_OLD_OUTPUT_RESERVE). The reserve is a setting
# (`output_reserve`, whose default this is), which a session of those versions sets
# (formats/claude_code.py).
CLAUDE_CODE_OUTPUT_RESERVE = 20_000
CLAUDE_CODE_OLD_OUTPUT_RESERVE = 32_000
CLAUDE_CODE_AUTOCOMPACT_BUFFER = 13_000

# The context Ollama runs a model at when neither the request, the Modelfile nor
# OLLAMA_CONTEXT_LENGTH sets num_ctx, by the GPU memory the server finds at start (the sum of
# every GPU's, less OLLAMA_GPU_OVERHEAD): server/routes.go, Serve(), in ollama/ollama v0.32.15
# (since v0.15.5; 4,096 for every machine from v0.6.7, 2,048 before). It tests 47 and 23 GiB
# "to account for small differences" from 48 and 24. Cited in engine/harnesses/ollama.py.
OLLAMA_NUM_CTX_BY_MEMORY = ((47, 262_144), (23, 32_768), (0, 4_096))  # (at least this many GiB, num_ctx)
OLLAMA_DEFAULT_NUM_CTX = 4_096  # what the playground assumes: a machine with under 24 GiB of GPU memory

# Every strategy by name, in the order the pages list them, with its product's default line;
# None: the settings' own line (the textbook strategies, and a product with no default). Each
# product's trigger is cited in its module, engine/harnesses/<name>.py (`Citation("trigger", ...)`).
TRIGGERS: dict[str, Trigger | None] = {
    "none": None,
    "truncate": None,
    "drop": None,
    "truncate-drop": None,
    "summarize": None,
    "naive-drop": None,
    "clear-tool-results": None,
    "by-layer": None,
    "codex-cli": Trigger(share=0.9, lower_only=True),
    "gemini-cli": Trigger(share=0.5, last_request=True),
    "claude-code": Trigger(reserve=CLAUDE_CODE_AUTOCOMPACT_BUFFER, reserve_setting="output_reserve", lower_only=True),
    "anthropic-compaction": Trigger(tokens=150_000, minimum_tokens=50_000),
    "openhands-summarizing": Trigger(share=1.0, messages=100),
    "openhands-masking": Trigger(every_call=True),
    "langchain-summarization": None,
    "ollama": Trigger(line_setting="num_ctx"),
}
STRATEGY_NAMES = tuple(TRIGGERS)
