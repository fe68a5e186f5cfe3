"""Anthropic's API compaction (`anthropic-compaction`, the `compact_20260112` edit): past 150,000
input tokens, everything before the turn under way becomes one compaction block, and the API
drops every message before it from later requests. docs/harnesses.md tells it with the same
sources as `HARNESS.citations`."""

from __future__ import annotations

from ...i18n import N_
from ...settings import Settings
from ..compaction import Citation, Context, ProductConfig, Strategy, Work, level
from ..summarizer import SummaryStyle
from .common import last_turn, summarize_before_keep

PROMPT = SummaryStyle(
    "Write a summary of the conversation so far that lets you continue the task: the goal, "
    "the progress, the facts and decisions you will need, and the next steps. Put it "
    "between <summary> tags.",
    "<summary>",
    "Facts:",
    "</summary>",
)


@level("server-compaction", summarizes=True)
def compaction_block(work: Work, context: Context) -> bool:
    """Everything before the turn under way becomes one compaction block, in the reply's place."""
    return summarize_before_keep(work, context, role="assistant")


def context_management(settings: Settings) -> str:
    """The edit as the Python SDK takes it, at the line on the page."""
    trigger = HARNESS.trigger
    tokens = round(settings.limit)
    lines = [
        '# client.beta.messages.create(..., betas=["compact-2026-01-12"], context_management=context_management)',
        "context_management = {",
        '    "edits": [',
        "        {",
        '            "type": "compact_20260112",',
        f'            "trigger": {{"type": "input_tokens", "value": {tokens}}},  # the API default is {trigger.tokens:,}',
        "        }",
        "    ]",
        "}",
    ]
    if tokens < trigger.minimum_tokens:
        lines.insert(1, f"# {tokens:,} tokens is under the {trigger.minimum_tokens:,}-token minimum the documentation gives: the API refuses it.")
    return "\n".join(lines)


SDK = "anthropics/anthropic-sdk-python"
SDK_COMMIT = "009b035305e0724ce108ebd796935f91711fc6e1"
EDIT = "src/anthropic/types/beta/beta_compact_20260112_edit_param.py"
DOCS = "platform.claude.com/docs/en/build-with-claude/compaction"
HARNESS = Strategy(
    "anthropic-compaction",
    N_(
        "as Anthropic's API compaction (compact_20260112) does it: past 150,000 input tokens, "
        "everything before the last turn becomes one compaction block"
    ),
    (compaction_block,),
    until_fits=False,
    product="Anthropic API",
    keep_rule=last_turn,
    prompt=PROMPT,
    config=ProductConfig("python", context_management),
    citations=(
        Citation("trigger", SDK, SDK_COMMIT, f"{EDIT}, the trigger's docstring: 150,000 input tokens by default"),
        Citation("trigger", DOCS, "as cited in Future-House/ldp#441", "the parameters: a trigger of at least 50,000 tokens", "secondary"),
        Citation("compaction_block", DOCS, "2026-01 (mirror learn-ai.blindshot.kz)", "every message block before the compaction block is dropped"),
        Citation("PROMPT", DOCS, "2026-01", "the shape of its default summary (the task, progress, next steps, between <summary> tags)", "unverified"),
        Citation("context_management", SDK, SDK_COMMIT, f"{EDIT}: {{\"type\": \"compact_20260112\", \"trigger\": {{\"type\": \"input_tokens\"}}}}, beta compact-2026-01-12"),
    ),
)
