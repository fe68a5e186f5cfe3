"""Gemini CLI (`gemini-cli`): from 50% of the window, measured on the last request sent, old tool
output is cut to a budget, then all but the newest 30% of the history becomes a state snapshot,
checked by a second call; a snapshot no smaller than the history is refused. docs/harnesses.md
tells it with the same sources as `HARNESS.citations`."""

from __future__ import annotations

import json

from ...i18n import N_
from ...settings import Settings
from ..compaction import Citation, Context, ProductConfig, Strategy, Work, level
from ..history import TOOL_RESULT_ROLES, TRUNCATION_MARK, Block
from ..summarizer import SummaryResult, SummaryStyle
from .common import bill, commit, previous_summary, split_pinned, summary, tokens

PRESERVE = 0.3  # the newest share of the history kept
TOOL_TOKENS = 50_000  # tool output kept whole, newest first
EXCERPT_CHARS = 40_000  # an older tool output longer than this becomes its head and tail

PROMPT = SummaryStyle(
    "The conversation below is about to be replaced by your snapshot. First think privately, "
    "then write one <state_snapshot> with these parts: overall_goal, active_constraints, "
    "key_knowledge, artifact_trail, file_system_state, recent_actions, task_state. If the "
    "messages hold an earlier snapshot, carry every part of it that still holds into the "
    "new one. Keep exact values.",
    "<state_snapshot>",
    "key_knowledge:",
    "</state_snapshot>",
)
# Gemini CLI's second call, which checks the snapshot it just wrote and writes it again.
PROBE = (
    "Read your snapshot again against the messages. Is anything important missing or wrong? "
    "Write the final <state_snapshot>, corrected, or the same one if it holds."
)
# The model's short answer Gemini CLI puts after the snapshot, so the history alternates.
ACKNOWLEDGEMENT = "Understood. I will carry on from this snapshot."


def newest_share(history: list[Block], context: Context) -> int:
    """KEEP at Gemini CLI's split: the first user message (not a tool result) at or past
    1 - `PRESERVE` of the history's characters as JSON; else the last such message before."""
    total = sum(block.chars for block in history)
    target = total * (1 - PRESERVE)
    seen = 0
    last_split = 0
    for index, block in enumerate(history):
        if block.role == "user":
            if seen >= target:
                return index
            last_split = index
        seen += block.chars
    return last_split


@level("tool-budget")
def tool_budget(work: Work, context: Context) -> bool:
    """Tool results are kept whole newest first while `TOOL_TOKENS` last; an older one longer
    than `EXCERPT_CHARS` becomes its head (a fifth) and tail, with a note that the whole output
    was saved to a file (so it can be read again)."""
    spent = 0.0
    truncated = False
    for index in range(len(work.history) - 1, -1, -1):
        block = work.history[index]
        if block.role not in TOOL_RESULT_ROLES or block.state != "original":
            continue
        spent += tokens(context, block)
        if spent <= TOOL_TOKENS or len(block.text) <= EXCERPT_CHARS or context.kept(block):
            continue
        text, head = block.text, EXCERPT_CHARS // 5
        left_out = f"{TRUNCATION_MARK}: {len(text) - EXCERPT_CHARS} characters left out; the whole output is saved to a file]"
        excerpt = f"{text[:head]}\n{left_out}\n{text[-(EXCERPT_CHARS - head):]}"
        shrunk = context.block(block, {**block.message, "content": excerpt}, state="truncated")
        work.units += shrunk.units - block.units
        work.history[index] = shrunk
        work.truncated.append(block.id)
        truncated = True
    return truncated


@level("state-snapshot", summarizes=True)
def state_snapshot(work: Work, context: Context) -> bool:
    """The history before its split (`newest_share`) becomes a state snapshot (a user message)
    and the model's short acknowledgement, after one summarizer call and one more that checks
    and rewrites it. A snapshot no smaller than what it replaces is refused, and from then on
    Gemini only cuts tool output."""
    if context.memory.get("snapshot_refused"):
        return False
    history = work.history
    split = context.keep_start(history)
    if split <= 0:
        return False
    folded, staying = split_pinned(history, 0, split, context)
    if not folded:
        return False
    snapshot, result = summary(context, folded, previous_summary(history[:split]), history[split:])
    probe = round(context.counter.block_tokens(context.counter.measure({"role": "user", "content": PROBE})))
    checked = SummaryResult(result.text, result.input_tokens + result.output_tokens + probe, result.output_tokens)
    ack = context.block(snapshot, {"role": "assistant", "content": ACKNOWLEDGEMENT}, id=f"s{int(snapshot.id[1:]) + 1}", replaces=())
    new = [snapshot, ack, *staying, *history[split:]]
    if sum(block.units for block in new) >= work.units:
        context.memory["snapshot_refused"] = True
        work.rejected = True
        bill(work, (result, checked))
        return False
    commit(work, context, new, folded, snapshot, result, checked)
    context.summaries_made = int(ack.id[1:])
    return True


def settings_json(settings: Settings) -> str:
    """.gemini/settings.json: the share of the model's limit it compresses at; the newest 30% it
    keeps is fixed in Gemini CLI (plain JSON, so no comment says it here)."""
    config = {"model": {"compressionThreshold": round(settings.threshold, 4)}, "tools": {"truncateToolOutputThreshold": EXCERPT_CHARS}}
    return json.dumps(config, indent=2)


REPOSITORY = "google-gemini/gemini-cli"
COMMIT = "5411f113cafae26161b4969b0237b8e1e024e2c2"
SERVICE = "packages/core/src/context/chatCompressionService.ts"
HARNESS = Strategy(
    "gemini-cli",
    N_(
        "as Gemini CLI does it: at 50 percent of the window, old tool output is cut to a 50,000-token "
        "budget, then all but the newest 30 percent of the history becomes a state snapshot that merges the last one"
    ),
    (tool_budget, state_snapshot),
    until_fits=False,
    product="Gemini CLI",
    keep_rule=newest_share,
    prompt=PROMPT,
    config=ProductConfig("json", settings_json),
    formats=("gemini-cli",),
    citations=(
        # compress(): no compression while chat.getLastPromptTokenCount() < 0.5 * tokenLimit(model),
        # the count being the last response's usageMetadata.promptTokenCount; client.ts checks it
        # before the new message is added. The same at v0.35.0 and v0.39.0 (the sessions' versions).
        Citation("trigger", REPOSITORY, COMMIT, f"{SERVICE} L41 DEFAULT_COMPRESSION_TOKEN_THRESHOLD, the check L270-285"),
        Citation("trigger", REPOSITORY, "v0.39.0", "packages/core/src/core/geminiChat.ts L919 lastPromptTokenCount; client.ts L629"),
        Citation("PRESERVE", REPOSITORY, COMMIT, f"{SERVICE} L47 COMPRESSION_PRESERVE_THRESHOLD, findCompressSplitPoint L60-100"),
        Citation("TOOL_TOKENS", REPOSITORY, COMMIT, f"{SERVICE} L52 COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET, truncateHistoryToBudget L137-237"),
        Citation(
            "EXCERPT_CHARS", REPOSITORY, COMMIT,
            "packages/core/src/config/config.ts L478 tools.truncateToolOutputThreshold; packages/core/src/utils/fileUtils.ts L704-724 (a fifth head)",
        ),
        Citation("PROMPT", REPOSITORY, COMMIT, "packages/core/src/prompts/snippets.ts L885-965 (the snapshot's parts)"),
        Citation("PROBE", REPOSITORY, COMMIT, f"{SERVICE} L382-411 (the second call that checks the snapshot)"),
        Citation("state_snapshot", REPOSITORY, COMMIT, f"{SERVICE} L413-471 (the new history), L296-321 (the refusal)"),
        Citation("settings_json", REPOSITORY, COMMIT, "packages/cli/src/config/settingsSchema.ts L1111-1121 model.compressionThreshold; docs/cli/settings.md L107"),
    ),
)
