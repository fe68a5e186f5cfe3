"""What the harnesses' levels share: a summary in the product's frame (one summarizer call,
billed), its commit to the work under way, the whole history before KEEP summarized, clearing a
tool result, and KEEP rules' helpers.

Two rules of the playground hold for every product: a tool call and its results are compacted
together or not at all (a KEEP rule never starts on a tool result: `before_results`), and a
pinned message stays, with what it cannot be sent without, right after the summary
(`split_pinned`).
"""

from __future__ import annotations

from collections.abc import Callable

from ..compaction import Context, Work
from ..history import TOOL_RESULT_ROLES, Block
from ..summarizer import SummaryResult


def tokens(context: Context, block: Block) -> float:
    """The block's tokens under the replay's counter."""
    return context.counter.block_tokens(block.units)


def split_pinned(history: list[Block], start: int, end: int, context: Context) -> tuple[list[Block], list[Block]]:
    """history[start:end] as what is folded into a summary and what stays (pinned messages with
    their partners), earlier summaries left out of both: they are passed as `previous`."""
    pinned = context.kept_with_partners(history, start, end)
    folded = [history[i] for i in range(start, end) if i not in pinned and history[i].state != "summary"]
    staying = [history[i] for i in sorted(pinned)]
    return folded, staying


def previous_summary(blocks: list[Block]) -> Block | None:
    """The newest summary among `blocks` (a product that merges it reads it as the earlier one);
    Gemini CLI's acknowledgement after its snapshot replaces nothing, and is not one."""
    return next((block for block in reversed(blocks) if block.state == "summary" and block.replaces), None)


def summary(
    context: Context, folded: list[Block], previous: Block | None, kept: list[Block], role: str = "user", extra: str = ""
) -> tuple[Block, SummaryResult]:
    """One summarizer call on `folded` (and `previous`) with the harness's prompt, as a summary
    block of `role`, followed by `extra` text the harness adds itself (not billed as the
    summarizer's)."""
    requests_kept = {block.request for block in kept}
    digests = {request: text for request, text in context.digests.items() if request not in requests_kept}
    result = context.summarizer.summarize(
        previous=previous.text if previous else None,
        blocks=folded,
        digests=digests,
        facts=context.facts if context.settings.keep_facts else [],
        counter=context.counter,
        style=context.strategy.prompt,
    )
    replaced = (previous.replaces if previous else ()) + tuple(block.id for block in folded)
    template = folded[0] if folded else (previous or kept[0])
    message = {"role": role, "content": result.text + extra}
    block = context.block(template, message, id=f"s{context.summaries_made + 1}", state="summary", replaces=replaced)
    return block, result


def summarize_before_keep(work: Work, context: Context, role: str = "user", extra: Callable[[list[Block]], str] | None = None) -> bool:
    """Everything before KEEP becomes one summary of `role`, followed by the text `extra` writes
    of what it folds, then the pinned messages, then KEEP (Claude Code's summary, Anthropic's
    compaction block); False when nothing may be folded."""
    history = work.history
    start = context.keep_start(history)
    folded, staying = split_pinned(history, 0, start, context)
    if not folded:
        return False
    new, result = summary(context, folded, previous_summary(history[:start]), history[start:], role=role, extra=extra(folded) if extra else "")
    commit(work, context, [new, *staying, *history[start:]], folded, new, result)
    return True


def commit(work: Work, context: Context, history: list[Block], folded: list[Block], new: Block, *results: SummaryResult) -> None:
    """The work's history becomes `history`, with its summary `new` in place of `folded`."""
    context.summaries_made = max(context.summaries_made + 1, int(new.id[1:]))
    work.history[:] = history
    work.units = sum(block.units for block in history)
    work.summarized += [block.id for block in folded]
    work.summary_id = new.id
    bill(work, results)


def bill(work: Work, results) -> None:
    """The summarizer calls `results` on the work's bill."""
    for result in results:
        work.summarizer_input += result.input_tokens
        work.summarizer_output += result.output_tokens


def clear(work: Work, context: Context, index: int, placeholder: str) -> None:
    """The tool result at `index` replaced by `placeholder`, counted as cleared."""
    block = work.history[index]
    cleared = context.block(block, {**block.message, "content": placeholder}, state="cleared")
    before = context.tokens(work.units)
    work.units += cleared.units - block.units
    work.history[index] = cleared
    work.cleared.append(block.id)
    work.cleared_tokens += before - context.tokens(work.units)


def before_results(history: list[Block], index: int) -> int:
    """`index`, moved back past tool results to the reply whose calls they answer."""
    while 0 < index < len(history) and history[index].role in TOOL_RESULT_ROLES:
        index -= 1
    return index


def last_turn(history: list[Block], context: Context) -> int:
    """KEEP at the turn under way (the last request, or the last reply and the results of its
    calls), so the model goes on from where it was: Claude Code's and Anthropic's compaction, and
    Ollama's, which always sends the latest message."""
    if not history:
        return 0
    return before_results(history, len(history) - 1)
