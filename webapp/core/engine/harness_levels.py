"""The production harnesses' steps, as levels of the engine (registered in strategies.LEVELS).

Each does what its product's source or documentation says (docs/harnesses.md cites them), in
the playground's terms: a message is a block, a summary is one call to the summarizer (billed,
in the product's shape: harness_prompts.py), and KEEP is where the product's own rule starts it
(compaction.py, `KEEP_RULES`). Two rules of the playground hold for every product: a tool call and its
results are compacted together or not at all, and a pinned message stays (with what it cannot
be sent without), right after the summary.
"""

from __future__ import annotations

from .compaction import Context, Work
from .harness_prompts import GEMINI_ACK, GEMINI_PROBE, RE_READ
from .history import CLEARED_MARK, TOOL_RESULT_ROLES, TRUNCATION_MARK, Block, history_call_names
from .summarizer import SummaryResult

# Codex counts a user message's tokens as its bytes / 4 (APPROX_BYTES_PER_TOKEN).
CODEX_BYTES_PER_TOKEN = 4
MASK = "<MASKED>"


def _tokens(context: Context, block: Block) -> float:
    return context.counter.block_tokens(block.units)


def _split_pinned(history: list[Block], start: int, end: int, context: Context) -> tuple[list[Block], list[Block]]:
    """history[start:end] as what is folded into a summary and what stays (pinned messages with
    their partners), earlier summaries left out of both: they are passed as `previous`."""
    pinned = context.kept_with_partners(history, start, end)
    folded = [history[i] for i in range(start, end) if i not in pinned and history[i].state != "summary"]
    staying = [history[i] for i in sorted(pinned)]
    return folded, staying


def _previous(blocks: list[Block]) -> Block | None:
    """The newest summary among `blocks` (a product that merges it reads it as the earlier one);
    Gemini CLI's acknowledgement after its snapshot replaces nothing, and is not one."""
    return next((block for block in reversed(blocks) if block.state == "summary" and block.replaces), None)


def _summary(
    context: Context, folded: list[Block], previous: Block | None, kept: list[Block], role: str = "user", extra: str = ""
) -> tuple[Block, SummaryResult]:
    """One summarizer call on `folded` (and `previous`), as a summary block of `role`, followed
    by `extra` text the harness adds itself (not billed as the summarizer's)."""
    requests_kept = {block.request for block in kept}
    digests = {request: text for request, text in context.digests.items() if request not in requests_kept}
    result = context.summarizer.summarize(
        previous=previous.text if previous else None,
        blocks=folded,
        digests=digests,
        facts=context.facts if context.settings.keep_facts else [],
        counter=context.counter,
        style=context.strategy.style,
    )
    replaced = (previous.replaces if previous else ()) + tuple(block.id for block in folded)
    template = folded[0] if folded else (previous or kept[0])
    message = {"role": role, "content": result.text + extra}
    block = context.block(template, message, id=f"s{context.summaries_made + 1}", state="summary", replaces=replaced)
    return block, result


def _commit(work: Work, context: Context, history: list[Block], folded: list[Block], summary: Block, level: str, *results: SummaryResult) -> None:
    context.summaries_made = max(context.summaries_made + 1, int(summary.id[1:]))
    work.history[:] = history
    work.units = sum(block.units for block in history)
    work.summarized += [block.id for block in folded]
    work.summary_id = summary.id
    _bill(work, results)
    work.levels.append(level)


def _bill(work: Work, results) -> None:
    for result in results:
        work.summarizer_input += result.input_tokens
        work.summarizer_output += result.output_tokens


def _middle(context: Context, block: Block, tokens: int) -> Block:
    """Codex's cut of the user message that crosses its budget: its head and tail, to `tokens`."""
    text = block.text
    room = max(0, tokens * CODEX_BYTES_PER_TOKEN)
    cut = max(0, len(text) - room)
    shortened = f"{text[: room // 2]}…{cut // CODEX_BYTES_PER_TOKEN} tokens cut from the middle…{text[len(text) - room // 2:]}"
    return context.block(block, {**block.message, "content": shortened}, state="truncated")


def codex_handoff_level(work: Work, context: Context) -> None:
    """Codex CLI: the whole history goes to the summarizer; what stays is the user messages,
    newest first while `user_tokens` last (the one that crosses it cut in the middle), in their
    order, then the handoff summary as a user message. Replies and tool results all go."""
    history = work.history
    left = context.strategy.params["user_tokens"]
    kept: dict[str, Block] = {}
    for block in reversed([b for b in history if b.role == "user" and b.state != "summary"]):
        size = _tokens(context, block)
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
        return
    summary, result = _summary(context, [b for b in history if b.state != "summary"], _previous(history), staying)
    _commit(work, context, [*staying, summary], folded, summary, "codex-handoff", result)


def tool_budget_level(work: Work, context: Context) -> None:
    """Gemini CLI, first step: tool results are kept whole newest first while `tool_tokens`
    last; an older one longer than `excerpt_chars` becomes its head (a fifth) and tail, with a
    note that the whole output was saved to a file (so it can be read again)."""
    params = context.strategy.params
    budget, room = params["tool_tokens"], params["excerpt_chars"]
    spent = 0.0
    for index in range(len(work.history) - 1, -1, -1):
        block = work.history[index]
        if block.role not in TOOL_RESULT_ROLES or block.state != "original":
            continue
        spent += _tokens(context, block)
        if spent <= budget or len(block.text) <= room or context.kept(block):
            continue
        text, head = block.text, room // 5
        excerpt = f"{text[:head]}\n{TRUNCATION_MARK}: {len(text) - room} characters left out; the whole output is saved to a file]\n{text[-(room - head):]}"
        shrunk = context.block(block, {**block.message, "content": excerpt}, state="truncated")
        work.units += shrunk.units - block.units
        work.history[index] = shrunk
        work.truncated.append(block.id)
        if "tool-budget" not in work.levels:
            work.levels.append("tool-budget")


def state_snapshot_level(work: Work, context: Context) -> None:
    """Gemini CLI, second step: the history before its split (compaction.newest_share)
    becomes a state snapshot (a user message) and the model's short acknowledgement, after one
    summarizer call and one more that checks and rewrites it. A snapshot no smaller than what
    it replaces is refused, and from then on Gemini only cuts tool output."""
    if context.memory.get("snapshot_refused"):
        return
    history = work.history
    split = context.keep_start(history)
    if split <= 0:
        return
    folded, staying = _split_pinned(history, 0, split, context)
    if not folded:
        return
    snapshot, result = _summary(context, folded, _previous(history[:split]), history[split:])
    probe = round(context.counter.block_tokens(context.counter.measure({"role": "user", "content": GEMINI_PROBE})))
    probe_input = result.input_tokens + result.output_tokens + probe
    checked = SummaryResult(result.text, probe_input, result.output_tokens)
    ack = context.block(snapshot, {"role": "assistant", "content": GEMINI_ACK}, id=f"s{int(snapshot.id[1:]) + 1}", replaces=())
    new = [snapshot, ack, *staying, *history[split:]]
    if sum(block.units for block in new) >= work.units:
        context.memory["snapshot_refused"] = True
        work.rejected = True
        _bill(work, (result, checked))
        return
    _commit(work, context, new, folded, snapshot, "state-snapshot", result, checked)
    context.summaries_made = int(ack.id[1:])


def _clear(work: Work, context: Context, index: int, placeholder: str) -> None:
    """The tool result at `index` replaced by `placeholder`, counted as cleared."""
    block = work.history[index]
    cleared = context.block(block, {**block.message, "content": placeholder}, state="cleared")
    before = context.tokens(work.units)
    work.units += cleared.units - block.units
    work.history[index] = cleared
    work.cleared.append(block.id)
    work.cleared_tokens += before - context.tokens(work.units)


def microcompact_level(work: Work, context: Context) -> None:
    """Claude Code, first step (approximate): every tool result but the newest
    `tool_results_kept` becomes a short placeholder, all at once."""
    history = work.history
    results = [i for i, block in enumerate(history) if block.role in TOOL_RESULT_ROLES and block.state != "cleared"]
    names = history_call_names(history)
    for index in results[: max(0, len(results) - context.strategy.params["tool_results_kept"])]:
        block = history[index]
        if context.kept(block):
            continue
        name = names.get(block.message.get("tool_call_id"), "tool")
        _clear(work, context, index, f"{CLEARED_MARK}: an old {name} result of {len(block.text)} chars]")
    if work.cleared:
        work.levels.append("microcompact")


def claude_summary_level(work: Work, context: Context) -> None:
    """Claude Code, second step: everything before the turn under way becomes one summary (a
    user message), followed by the newest tool results it re-reads as files: `files` of them,
    each whole up to `file_tokens`, else only named."""
    history = work.history
    start = context.keep_start(history)
    folded, staying = _split_pinned(history, 0, start, context)
    if not folded:
        return
    params = context.strategy.params
    names = history_call_names(history)
    results = [block for block in folded if block.role in TOOL_RESULT_ROLES and block.state == "original"][-params["files"]:]
    lines = []
    for block in results:
        name = names.get(block.message.get("tool_call_id"), "tool")
        size = round(_tokens(context, block))
        lines.append(f"--- {name} ---\n{block.text}" if size <= params["file_tokens"] else f"--- {name}: {size:,} tokens, too long to re-read ---")
    extra = f"\n\n{RE_READ}\n" + "\n".join(lines) if lines else ""
    summary, result = _summary(context, folded, _previous(history[:start]), history[start:], extra=extra)
    _commit(work, context, [summary, *staying, *history[start:]], folded, summary, "claude-summary", result)


def server_compaction_level(work: Work, context: Context) -> None:
    """Anthropic's compaction: everything before the turn under way becomes one compaction
    block, in the reply's place; the API drops every message before it from later requests."""
    history = work.history
    start = context.keep_start(history)
    folded, staying = _split_pinned(history, 0, start, context)
    if not folded:
        return
    summary, result = _summary(context, folded, _previous(history[:start]), history[start:], role="assistant")
    _commit(work, context, [summary, *staying, *history[start:]], folded, summary, "server-compaction", result)


def condense_level(work: Work, context: Context) -> None:
    """OpenHands' LLM summarizing condenser: the first `keep_first` messages stay, then the
    summary (merging the last one), then the tail (compaction.condenser_tail)."""
    history = work.history
    head = context.strategy.params["keep_first"]
    while head < len(history) and history[head].role in TOOL_RESULT_ROLES:
        head += 1  # the first messages keep their calls' results
    previous = history[head] if head < len(history) and history[head].state == "summary" else None
    tail = context.keep_start(history)
    folded, staying = _split_pinned(history, head, tail, context)
    if not folded:
        return
    summary, result = _summary(context, folded, previous, history[tail:])
    _commit(work, context, [*history[:head], summary, *staying, *history[tail:]], folded, summary, "condense", result)


def mask_level(work: Work, context: Context) -> None:
    """OpenHands' observation masking: every tool result before the attention window becomes
    <MASKED>; replies and their calls stay. No model call."""
    history = work.history
    boundary = context.keep_start(history)
    for index in range(context.scan_start("mask", history), boundary):
        block = history[index]
        if block.role not in TOOL_RESULT_ROLES or block.state == "cleared" or context.kept(block):
            continue
        _clear(work, context, index, MASK)
    context.settle("mask", history, boundary)
    if work.cleared:
        work.levels.append("mask")


def langchain_summary_level(work: Work, context: Context) -> None:
    """LangChain's SummarizationMiddleware: all but the last messages (compaction.last_messages)
    are replaced by one summary, written from their newest `trim_tokens` only (starting on a user
    message; the last `trim_fallback_messages` when none fits): what is older is lost unread."""
    history = work.history
    cutoff = context.keep_start(history)
    folded, staying = _split_pinned(history, 0, cutoff, context)
    if not folded:
        return
    params = context.strategy.params
    read: list[Block] = []
    spent = 0.0
    for block in reversed(history[:cutoff]):
        spent += _tokens(context, block)
        if spent > params["trim_tokens"]:
            break
        read.insert(0, block)
    while read and read[0].role != "user":
        read.pop(0)
    read = read or history[:cutoff][-params["trim_fallback_messages"]:]
    previous = _previous(read)
    folded_ids = {block.id for block in folded}
    summary, result = _summary(context, [block for block in read if block.id in folded_ids], previous, history[cutoff:])
    _commit(work, context, [summary, *staying, *history[cutoff:]], folded, summary, "langchain-summary", result)
