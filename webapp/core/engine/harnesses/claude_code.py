"""Claude Code (`claude-code`), approximate: at its own line, the window less its output reserve
and a 13,000-token buffer (triggers.py), old tool output is cleared, then everything but the turn
under way becomes a summary followed by the recent files it reads again. Its trigger is read in
the cli.js its npm package ships; its steps are told by its documentation only. docs/harnesses.md
tells it with the same sources as `HARNESS.citations`."""

from __future__ import annotations

from ...i18n import N_
from ...settings import Settings
from ...triggers import CLAUDE_CODE_OUTPUT_RESERVE
from ..compaction import Citation, Context, ProductConfig, Strategy, Work, level
from ..history import CLEARED_MARK, TOOL_RESULT_ROLES, Block, history_call_names
from ..summarizer import SummaryStyle
from .common import clear, last_turn, summarize_before_keep, tokens

TOOL_RESULTS_KEPT = 5  # the newest tool results its clearing leaves
FILES = 5  # the recent files read again after a summary
FILE_TOKENS = 5_000  # a file larger than this is named, not read again

PROMPT = SummaryStyle(
    "Summarize this session so work can resume from the summary alone. Sections: the "
    "user's requests and intent; key technical concepts; files and code touched; errors "
    "met and how they were fixed; the user's own words that still apply; pending tasks; "
    "the current work and the next step. Quote identifiers exactly.",
    "This session continues an earlier one that ran out of context. Summary of it:",
    "Key facts:",
)
# The heading of the recent files, read again after a compaction, under the summary.
RE_READ = "Files read again after the summary:"


@level("microcompact")
def microcompact(work: Work, context: Context) -> bool:
    """Every tool result but the newest `TOOL_RESULTS_KEPT` becomes a short placeholder, all at
    once (approximate)."""
    history = work.history
    results = [i for i, block in enumerate(history) if block.role in TOOL_RESULT_ROLES and block.state != "cleared"]
    names = history_call_names(history)
    cleared = len(work.cleared)
    for index in results[: max(0, len(results) - TOOL_RESULTS_KEPT)]:
        block = history[index]
        if context.kept(block):
            continue
        name = names.get(block.message.get("tool_call_id"), "tool")
        clear(work, context, index, f"{CLEARED_MARK}: an old {name} result of {len(block.text)} chars]")
    return len(work.cleared) > cleared


@level("claude-summary", summarizes=True)
def full_summary(work: Work, context: Context) -> bool:
    """Everything before the turn under way becomes one summary (a user message), followed by
    the newest tool results it re-reads as files: `FILES` of them, each whole up to
    `FILE_TOKENS`, else only named."""

    def files_read_again(folded: list[Block]) -> str:
        names = history_call_names(work.history)  # read before the summary replaces them
        results = [block for block in folded if block.role in TOOL_RESULT_ROLES and block.state == "original"][-FILES:]
        lines = []
        for block in results:
            name = names.get(block.message.get("tool_call_id"), "tool")
            size = round(tokens(context, block))
            lines.append(f"--- {name} ---\n{block.text}" if size <= FILE_TOKENS else f"--- {name}: {size:,} tokens, too long to re-read ---")
        return f"\n\n{RE_READ}\n" + "\n".join(lines) if lines else ""

    return summarize_before_keep(work, context, extra=files_read_again)


def environment(settings: Settings) -> str:
    """Claude Code's environment variables. It takes the override as a percentage of the window
    less its output reserve, floored, and keeps the lower of that and its own line (cli.js of
    2.0.76 and 2.1.30). The reserve is min(CLAUDE_CODE_MAX_OUTPUT_TOKENS, the model's cap), and
    since 2.1.21 at most 20,000: a smaller one is that variable, a larger one a version before
    2.1.21."""
    reserve = HARNESS.trigger.reserved(settings)
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


PACKAGE = "@anthropic-ai/claude-code (npm)"
SURVIVES = "code.claude.com/docs/en/context-window, \"What survives compaction\", via dev.to (J. Gravelle) and the devcowboy newsletter"
HARNESS = Strategy(
    "claude-code",
    N_(
        "as Claude Code does it: at its own line, the window minus its output reserve (20,000 tokens "
        "since 2.1.21, 32,000 before) and a 13,000-token buffer, old tool output is cleared, then everything "
        "but the last turn becomes a summary with the recent files re-read (these steps approximate: its source is not public)"
    ),
    (microcompact, full_summary),
    options=("output_reserve",),
    product="Claude Code",
    keep_rule=last_turn,
    prompt=PROMPT,
    config=ProductConfig("shell", environment),
    formats=("claude-code",),
    citations=(
        Citation(
            "trigger", PACKAGE, "2.1.21, 2.1.22, 2.1.30",
            "cli.js: the auto-compact threshold is the window less min(max output, 20,000) less the constant 13,000",
        ),
        Citation("trigger", PACKAGE, "2.0.0 to 2.1.20 (read in 2.0.76)", "cli.js: the window less the whole max output (32,000) less 13,000"),
        Citation("CLAUDE_CODE_OUTPUT_RESERVE", PACKAGE, "2.1.21, 2.1.22, 2.1.30", "cli.js: the output it reserves, min(the model's max output, 20,000)"),
        Citation("TOOL_RESULTS_KEPT", "code.claude.com docs", "paraphrased 2026", "old tool output is cleared first (kubernetesinmyhead.net)", "unverified"),
        Citation("FILES", "code.claude.com docs", "2026", SURVIVES, "secondary"),
        Citation("FILE_TOKENS", "code.claude.com docs", "2026", SURVIVES, "secondary"),
        Citation(
            "PROMPT", PACKAGE, "2.1.30",
            "cli.js, the compaction's prompt: its sections (request and intent, technical concepts, files and code, errors and fixes, "
            "problem solving, the user's messages, pending tasks, current work, next step)",
        ),
        Citation("environment", PACKAGE, "2.0.76, 2.1.30", "cli.js: CLAUDE_AUTOCOMPACT_PCT_OVERRIDE, DISABLE_AUTO_COMPACT, CLAUDE_CODE_MAX_OUTPUT_TOKENS"),
        Citation(
            "environment", "code.claude.com docs", "as quoted in anthropics/claude-code#24589",
            "the environment-variable reference: CLAUDE_CODE_AUTO_COMPACT_WINDOW", "secondary",
        ),
    ),
)
