"""OpenAI Codex CLI (`codex-cli`): at 90% of the window (a line its config can only lower), the
whole history goes to a handoff summary; the newest user messages stay, up to 20,000 tokens,
before it. docs/harnesses.md tells it with the same sources as `HARNESS.citations`."""

from __future__ import annotations

from ...i18n import N_
from ...settings import Settings
from ..compaction import Citation, Context, ProductConfig, Strategy, Work, level
from ..history import Block
from ..summarizer import SummaryStyle
from .common import commit, previous_summary, summary, tokens

USER_TOKENS = 20_000  # the user messages kept, newest first
BYTES_PER_TOKEN = 4  # how Codex counts a user message's tokens

PROMPT = SummaryStyle(
    "You are handing this task over to another model that will continue it without seeing "
    "this conversation. Write a checkpoint for it: the goal; what has been done and the "
    "decisions taken; the user's constraints and preferences; what is left to do, in order; "
    "the exact data it will need (paths, commands, identifiers, numbers). Be concise and "
    "structured.",
    "[Checkpoint from the model that worked on this task before you: continue from it]",
)


def newest_request(history: list[Block], context: Context) -> int:
    """KEEP at the newest user message: Codex keeps user messages, and nothing else, whole."""
    return next((i for i in range(len(history) - 1, -1, -1) if history[i].role == "user" and history[i].state != "summary"), 0)


def _middle(context: Context, block: Block, budget: int) -> Block:
    """Codex's cut of the user message that crosses its budget: its head and tail, to `budget` tokens."""
    text = block.text
    room = max(0, budget * BYTES_PER_TOKEN)
    cut = max(0, len(text) - room)
    shortened = f"{text[: room // 2]}…{cut // BYTES_PER_TOKEN} tokens cut from the middle…{text[len(text) - room // 2:]}"
    return context.block(block, {**block.message, "content": shortened}, state="truncated")


@level("codex-handoff", summarizes=True)
def handoff(work: Work, context: Context) -> bool:
    """The whole history goes to the summarizer; what stays is the user messages, newest first
    while `USER_TOKENS` last (the one that crosses it cut in the middle), in their order, then
    the handoff summary as a user message. Replies and tool results all go."""
    history = work.history
    left = USER_TOKENS
    kept: dict[str, Block] = {}
    for block in reversed([b for b in history if b.role == "user" and b.state != "summary"]):
        size = tokens(context, block)
        if size <= left:
            kept[block.id], left = block, left - size
            continue
        if left >= 1:
            kept[block.id] = _middle(context, block, int(left))
            work.truncated.append(block.id)
        break
    pinned = context.kept_with_partners(history, 0, len(history))
    staying = [kept.get(block.id, block) for i, block in enumerate(history) if block.id in kept or i in pinned]
    staying_ids = {block.id for block in staying}
    folded = [block for block in history if block.id not in staying_ids and block.state != "summary"]
    if not folded:
        return False
    new, result = summary(context, [b for b in history if b.state != "summary"], previous_summary(history), staying)
    commit(work, context, [*staying, new], folded, new, result)
    return True


def config_toml(settings: Settings) -> str:
    """~/.codex/config.toml for the settings on the page."""
    line = round(settings.limit)
    lines = [
        "# ~/.codex/config.toml",
        f"model_context_window = {settings.window}",
        f"model_auto_compact_token_limit = {line}  # {settings.effective_threshold:.1%} of the window",
    ]
    if settings.threshold > settings.effective_threshold:
        lines.append(f"# {settings.threshold:.0%} was asked: Codex lowers any limit above 90% of the window to 90%.")
    lines.append(f"# Kept after a compaction: the newest user messages, up to {USER_TOKENS:,} tokens (fixed in Codex).")
    return "\n".join(lines)


REPOSITORY = "openai/codex"
HARNESS = Strategy(
    "codex-cli",
    N_(
        "as OpenAI Codex CLI does it: at 90 percent of the window, the history becomes a handoff summary "
        "after the newest user messages (up to 20,000 tokens); every reply and tool result goes"
    ),
    (handoff,),
    until_fits=False,
    product="OpenAI Codex CLI",
    keep_rule=newest_request,
    prompt=PROMPT,
    config=ProductConfig("toml", config_toml),
    formats=("codex",),
    citations=(
        Citation(
            "trigger", REPOSITORY, "0d4367d0e6a976082b36d9eea8f8a579fca368cb",
            "codex-rs/protocol/src/openai_models.rs, ModelInfo::auto_compact_token_limit (window * 9 / 10)",
        ),
        Citation("trigger", REPOSITORY, "v0.100.0", "PR openai/codex#11516: the configured limit is min(configured, 90%)"),
        Citation("USER_TOKENS", REPOSITORY, "e06dd0e5d5694c24968bf49b62466cdedae04aaa", "codex-rs/core/src/compact.rs, COMPACT_USER_MESSAGE_MAX_TOKENS"),
        Citation("BYTES_PER_TOKEN", REPOSITORY, "b24d7f3c9a1acadc145019747224f7312bc9b3b4", "codex-rs/utils/string/src/truncate.rs, APPROX_BYTES_PER_TOKEN"),
        Citation("handoff", REPOSITORY, "e06dd0e5d5694c24968bf49b62466cdedae04aaa", "codex-rs/core/src/compact.rs: the kept user messages, then the summary"),
        Citation(
            "PROMPT", REPOSITORY, "11baefb5183c7d61c631dee6c3fd6aa9cc93aa73",
            "codex-rs/core/templates/compact/prompt.md (its sections) and summary_prefix.md @ 50a53333786249f03284067b997c41d84365c7cd",
        ),
        Citation(
            "config_toml", REPOSITORY, "2f83b5dbd583c7b0ac3f62ed2ef58ad2769904f1",
            "codex-rs/core/src/models_manager/model_info.rs, with_config_overrides: model_context_window, model_auto_compact_token_limit",
        ),
    ),
)
