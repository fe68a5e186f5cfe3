"""Settings to code: the current settings as the seed's two ways of writing them
(000_fd8adbc93eaf3a52.txt), ready to paste into an agent.

- astorlm: the `contextOptimizer` block passed to `createLocalAgent` (maxTokens,
  compressThreshold, keepRecentTurns).
- From scratch, Python: the `WINDOW` dict the seed's `compact()` reads.

Both only know the window, the line and KEEP in requests. What else the playground can change
(the counter, the strategy, the preview length, keep facts, KEEP in tool results or turns) has
no field there; a comment says so when it differs from what that code does, so a pasted block
never claims more than it sets.

For clear-tool-results, two more: Anthropic's `context_management` block (context editing,
https://docs.claude.com/en/docs/build-with-claude/context-editing), and the same loop from
scratch in the style of the seed's `compact()`, which sends exactly what the playground's
clear-tool-results sends with the `estimate` counter.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..settings import Settings
from ..engine.strategies import clear_level
from ..engine.strategy_catalog import STRATEGIES

# What the seed's code does by itself, for the comments below.
SEED_STRATEGY = "truncate-drop"
SEED_PREVIEW = 150


@dataclass(frozen=True)
class Snippet:
    language: str  # "typescript" (astorlm), "python", or a harness's own: "toml", "json", "shell"
    code: str
    kind: str = ""  # "astorlm", "seed", "anthropic", or "harness" (the product's own configuration)


def _threshold(value: float) -> str:
    text = f"{value:.4f}".rstrip("0").rstrip(".")
    return text if "." in text else text + ".0"


def _percent(value: float) -> str:
    return f"{value * 100:.4g}%"


def _turns(keep: int) -> str:
    return "request" if keep == 1 else f"{keep} requests"


UNIT_WORDS = {"requests": "requests", "tool_results": "tool results", "turns": "turns (assistant replies)"}


def _notes(settings: Settings, comment: str) -> list[str]:
    notes = []
    if settings.keep_unit != "requests":
        notes.append(
            f"{comment} This code's KEEP counts requests; the playground counts the last "
            f"{settings.keep} {UNIT_WORDS[settings.keep_unit]}."
        )
    if settings.model_window and settings.model_window != settings.window:
        notes.append(
            f"{comment} The model really has {settings.model_window:,} tokens: "
            f"set {settings.model_window} here, or the line is never reached."
        )
    if settings.strategy != SEED_STRATEGY:
        notes.append(
            f"{comment} This code truncates old tool results, then drops old exchanges "
            f"({SEED_STRATEGY}); the playground is showing {settings.strategy}."
        )
    return notes


def astorlm_block(settings: Settings) -> str:
    lines = _notes(settings, "//")
    lines += [
        "contextOptimizer: {",
        f"  maxTokens: {settings.window},",
        f"  compressThreshold: {_threshold(settings.threshold)}, // compact once the request passes "
        f"{_percent(settings.threshold)} of the window",
        f"  keepRecentTurns: {settings.keep}, // never touch the last {_turns(settings.keep)}, or anything after",
        "},",
    ]
    return "\n".join(lines)


def python_window(settings: Settings) -> str:
    lines = _notes(settings, "#")
    if settings.preview != SEED_PREVIEW:
        lines.append(f"# The playground keeps a {settings.preview}-character preview; compact() keeps {SEED_PREVIEW}.")
    lines.append(
        f'WINDOW = {{"max_tokens": {settings.window}, "threshold": {_threshold(settings.threshold)}, '
        f'"keep_recent_turns": {settings.keep}}}'
    )
    return "\n".join(lines)


def anthropic_block(settings: Settings) -> str:
    """Anthropic's context editing, as the `context_management` argument of
    `client.beta.messages.create(..., betas=["context-management-2025-06-27"])`."""
    lines = []
    if settings.keep_unit != "tool_results":
        lines.append(
            f"# Anthropic keeps tool uses; the playground counts KEEP in {UNIT_WORDS[settings.keep_unit]}."
        )
    lines.append(
        "# The API keeps the last `keep` tool uses after clearing; the playground stops clearing as soon"
        " as the request fits and clear_at_least is reached."
    )
    lines += [
        "context_management = {",
        '    "edits": [',
        "        {",
        '            "type": "clear_tool_uses_20250919",',
        f'            "trigger": {{"type": "input_tokens", "value": {round(settings.limit)}}},'
        f"  # {_percent(settings.threshold)} of {settings.window:,}",
        f'            "keep": {{"type": "tool_uses", "value": {settings.keep}}},',
    ]
    if settings.clear_at_least:
        lines.append(f'            "clear_at_least": {{"type": "input_tokens", "value": {settings.clear_at_least}}},')
    if settings.exclude_tools:
        names = ", ".join(f'"{name}"' for name in settings.exclude_tools.split(","))
        lines.append(f'            "exclude_tools": [{names}],')
    lines += [
        f'            "clear_tool_inputs": {settings.clear_tool_inputs},',
        "        }",
        "    ]",
        "}",
    ]
    return "\n".join(lines)


KEEP_FROM = {
    "requests": ("the Nth user request from the end", '"user"', ""),
    "tool_results": (
        "the call of the Nth tool result from the end",
        '"tool"',
        '\n                while i > 0 and messages[i]["role"] == "tool":\n                    i -= 1',
    ),
    "turns": ("the Nth assistant reply from the end", '"assistant"', ""),
}


def python_clearing(settings: Settings) -> str:
    """clear-tool-results in the style of the seed's compact(): same helpers (copy,
    estimate_tokens), same loop, one more setting per line of WINDOW."""
    where, role, back = KEEP_FROM[settings.keep_unit]
    excluded = ", ".join(f'"{name}"' for name in settings.exclude_tools.split(",") if name)
    return f'''WINDOW = {{
    "max_tokens": {settings.window},
    "threshold": {_threshold(settings.threshold)},
    "keep": {settings.keep},  # {UNIT_WORDS[settings.keep_unit]}
    "clear_at_least": {settings.clear_at_least},
    "exclude_tools": [{excluded}],
    "clear_tool_inputs": {settings.clear_tool_inputs},
}}

def keep_from(messages, keep):
    """Where the protected part starts: {where} (0 if there are fewer)."""
    seen = 0
    for i in range(len(messages) - 1, -1, -1):
        if messages[i]["role"] == {role}:
            seen += 1
            if seen == keep:{back}
                return i
    return 0

def compact(messages):
    limit = WINDOW["max_tokens"] * WINDOW["threshold"]
    before = estimate_tokens(messages)
    if before <= limit:
        return messages
    out = copy.deepcopy(messages)
    names = {{call["id"]: call["function"]["name"] for m in out for call in m.get("tool_calls") or []}}

    # Old tool results become a placeholder, oldest first, until it fits and at least
    # clear_at_least tokens are gone. Roles and call ids stay: no call loses its result.
    cleared = 0
    for i in range(keep_from(out, WINDOW["keep"])):
        m = out[i]
        name = names.get(m.get("tool_call_id"), "tool")
        if m["role"] != "tool" or m["content"].startswith("[Cleared") or name in WINDOW["exclude_tools"]:
            continue
        m["content"] = f"[Cleared to save context: a {{name}} result of {{len(m['content'])}} chars]"
        if WINDOW["clear_tool_inputs"]:
            for call in (c for earlier in out[:i] for c in earlier.get("tool_calls") or []):
                if call["id"] == m["tool_call_id"]:
                    call["function"]["arguments"] = "{{}}"
        cleared = before - estimate_tokens(out)
        if estimate_tokens(out) <= limit and cleared >= WINDOW["clear_at_least"]:
            return out

    # Each clearing rewrites the request from the first cleared result on, and the prompt
    # cache is read only up to there: clear at least clear_at_least tokens, or nothing.
    return out if cleared >= WINDOW["clear_at_least"] else messages'''


def settings_code(settings: Settings) -> list[Snippet]:
    """The settings as code, one snippet per way of writing them; a harness's in its product's
    own configuration (its module in engine/harnesses/)."""
    strategy = STRATEGIES[settings.strategy]
    if strategy.config is not None:
        return [Snippet(strategy.config.language, strategy.config.write(settings), "harness")]
    if clear_level in strategy.levels:  # Anthropic's context editing, as its API takes it
        return [
            Snippet("python", anthropic_block(settings), "anthropic"),
            Snippet("python", python_clearing(settings), "seed"),
        ]
    return [
        Snippet("typescript", astorlm_block(settings), "astorlm"),
        Snippet("python", python_window(settings), "seed"),
    ]
