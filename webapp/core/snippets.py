"""Settings to code: the current settings as the seed's two ways of writing them
(000_fd8adbc93eaf3a52.txt), ready to paste into an agent.

- astorlm: the `contextOptimizer` block passed to `createLocalAgent` (maxTokens,
  compressThreshold, keepRecentTurns).
- From scratch, Python: the `WINDOW` dict the seed's `compact()` reads.

Both only know the window, the line and KEEP. What else the playground can change (the
counter, the strategy, the preview length, keep facts) has no field there; a comment says so
when it differs from what that code does, so a pasted block never claims more than it sets.
"""

from __future__ import annotations

from dataclasses import dataclass

from .settings import Settings

# What the seed's code does by itself, for the comments below.
SEED_STRATEGY = "truncate-drop"
SEED_PREVIEW = 150


@dataclass(frozen=True)
class Snippet:
    language: str  # "typescript" (astorlm) or "python" (the seed's loop from scratch)
    code: str


def _threshold(value: float) -> str:
    text = f"{value:.4f}".rstrip("0").rstrip(".")
    return text if "." in text else text + ".0"


def _percent(value: float) -> str:
    return f"{value * 100:.4g}%"


def _turns(keep: int) -> str:
    return "request" if keep == 1 else f"{keep} requests"


def _notes(settings: Settings, comment: str) -> list[str]:
    notes = []
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


def settings_code(settings: Settings) -> list[Snippet]:
    """The settings as code, one snippet per way of writing them."""
    return [
        Snippet("typescript", astorlm_block(settings)),
        Snippet("python", python_window(settings)),
    ]
