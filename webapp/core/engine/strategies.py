"""The textbook strategies' levels, and `compact`, which runs a strategy's levels in order.

Each level is a function named once by `@level` (the name a compaction's record and the event
log give it); it returns whether it did anything. The records that put levels together are in
strategy_catalog.py; a harness's own levels are in its module (harnesses/).

All of them follow the seed's rules (000_fd8adbc93eaf3a52.txt): run only when the request is
above the line, start with the oldest messages, never touch KEEP (the last `keep` requests and
everything after them), never separate a tool call from its results, and stop as soon as the
request fits. `truncate`, `drop` and `truncate-drop` are the seed's `compact()` levels, step
for step, so with the `estimate` counter they send exactly what the seed's loop sends.
`naive-drop` is the exception, on purpose: it breaks the pair rule to show what that costs.
`clear-tool-results` is Anthropic's context editing (`clear_tool_uses_20250919`), see
`clear_level`; KEEP may count requests, tool results or turns (`history.keep_start`).
`by-layer` is the manual's degradation by levels (004_abe3947712a3ce73.txt, step 9): the
retrieved documents first, a group at a time, then the history as the reference compacts it,
then the oldest messages left, and the overflow notice when that is still not enough.

No strategy touches a pinned message (the manual's guard-rails): it is passed over, and so
are the messages it cannot be sent without (its tool call, or its call's other results).
"""

from __future__ import annotations

from .compaction import Compaction, Context, Work, level
from .history import CLEARED_MARK, OVERFLOW_NOTICE, TOOL_RESULT_ROLES, TRUNCATION_MARK, Block, caller_of, history_call_names


def _noted(block: Block, context: Context) -> Block:
    """The block with its text replaced by the seed's one-line truncation note and a preview."""
    text = block.text
    note = f"{TRUNCATION_MARK} to save context: {len(text)} chars. Preview: {text[: context.settings.preview]}...]"
    return context.block(block, {**block.message, "content": note}, state="truncated")


def _replace(work: Work, index: int, block: Block) -> None:
    work.units += block.units - work.history[index].units
    work.history[index] = block


@level("truncate")
def truncate_level(work: Work, context: Context) -> bool:
    """Level 1: old tool results become a one-line note with a preview, oldest first.

    As in the seed, every old result is truncated whatever its size, so a result shorter than
    its note grows: the engine keeps that behaviour to send exactly what the seed sends."""
    history = work.history
    tool_names: dict[str, str] | None = None  # built only when a fetch-once tool may be hit
    boundary = context.keep_start(history)
    truncated = False
    for index in range(context.scan_start(truncate_level, history), boundary):
        block = history[index]
        if block.role not in TOOL_RESULT_ROLES or block.text.startswith(TRUNCATION_MARK) or context.kept(block):
            continue
        shrunk = _noted(block, context)
        _replace(work, index, shrunk)
        work.truncated.append(block.id)
        truncated = True
        if context.fetch_once_tools:
            tool_names = tool_names if tool_names is not None else history_call_names(history)
            if tool_names.get(block.message.get("tool_call_id")) in context.fetch_once_tools:
                work.destroyed.append(block.id)
        if context.fits(work.units):
            context.settle(truncate_level, history, index + 1)
            return True
    context.settle(truncate_level, history, boundary)
    return truncated


@level("drop")
def drop_level(work: Work, context: Context) -> bool:
    """Level 2: drop the oldest exchanges whole, keeping the very first request. A pinned
    message stays, with what it cannot be sent without; the rest of its exchange goes."""
    history = work.history
    start = 1  # the exchanges before it are gone, but for what they had to keep
    dropped = False
    while not context.fits(work.units):
        following = next((i for i in range(start + 1, len(history)) if history[i].role == "user"), None)
        if following is None or following > context.keep_start(history):
            break
        kept = context.kept_with_partners(history, start, following)
        removed = [history[i] for i in range(start, following) if i not in kept]
        history[start:following] = [history[i] for i in sorted(kept)]
        start += len(kept)
        if not removed:
            continue
        work.units -= sum(block.units for block in removed)
        work.dropped += [block.id for block in removed]
        dropped = True
    return dropped


@level("naive-drop")
def naive_drop_level(work: Work, context: Context) -> bool:
    """Deliberately broken, for the lesson: drop the oldest message after the first request,
    one at a time, until the request fits, blind to tool call/result pairs (it passes over a
    pinned message, but not over the call or results that go with it). Some libraries
    trim this way; the request they leave can start with a tool result whose call is gone,
    which most APIs reject."""
    history = work.history
    dropped = False
    while not context.fits(work.units):
        boundary = context.keep_start(history)
        position = next((i for i in range(1, boundary) if not context.kept(history[i])), None)
        if position is None:
            break
        removed = history.pop(position)
        work.units -= removed.units
        work.dropped.append(removed.id)
        dropped = True
    return dropped


@level("summarize", summarizes=True)
def summarize_level(work: Work, context: Context) -> bool:
    """Replace the oldest whole exchanges after the first request with one summary message,
    placed right after the first request; an earlier summary is folded into the new one.
    The fewest exchanges that make the request fit are summarized, in one summarizer call.

    When KEEP counts tool results or turns, it can start inside a request (an agent run is
    one request): after the whole exchanges, the old turns of that request (a reply and its
    tool results) are summarized too, one more turn at a time, so a call is never parted
    from its results and the first request and KEEP stay as they are."""
    history = work.history
    start = 1
    previous = None
    if len(history) > 1 and history[1].state == "summary":
        previous, start = history[1], 2
    boundary = context.keep_start(history)
    cuts = [i for i in range(start + 1, boundary + 1) if history[i].role == "user"]
    after = cuts[-1] if cuts else start
    cuts += [i for i in range(after + 1, boundary + 1) if history[i].role == "assistant"]
    if not cuts:
        return False
    # The first request stays; an earlier summary (history[1]) is folded into the new one.
    first_units = work.units - sum(block.units for block in history[1:])
    summary = None
    for position, cut in enumerate(cuts):
        # Pinned messages (with their pair partners) stay whole, right after the summary.
        pinned = context.kept_with_partners(history, start, cut)
        folded = [history[i] for i in range(start, cut) if i not in pinned]
        if not folded:
            continue
        staying = [history[i] for i in sorted(pinned)]
        left = first_units + sum(block.units for block in [*staying, *history[cut:]])
        if position < len(cuts) - 1 and not context.fits(left):
            continue  # still above its aim with no summary at all: fold more before asking for one
        result = context.summarizer.summarize(
            previous=previous.text if previous else None,
            blocks=folded,
            digests=_digests_before(history[cut], context),
            facts=context.facts if context.settings.keep_facts else [],
            counter=context.counter,
        )
        number = context.summaries_made + 1
        message = {"role": "system", "content": result.text}
        replaced = (previous.replaces if previous else ()) + tuple(block.id for block in folded)
        summary = context.block(history[0], message, id=f"s{number}", state="summary", replaces=replaced)
        units = left + summary.units
        if context.fits(units):
            break
    if summary is None:
        return False
    context.summaries_made = number
    work.history[:] = history[:1] + [summary] + staying + history[cut:]
    work.units = units
    work.summarized += [block.id for block in folded]
    work.summary_id = summary.id
    work.summarizer_input += result.input_tokens
    work.summarizer_output += result.output_tokens
    return True


def _digests_before(cut: Block, context: Context) -> dict[int, str]:
    """The requests' digests for a summary of what comes before `cut`: a request's digest
    tells the whole request, so not the one of a request cut in two."""
    if cut.role == "user":
        return context.digests
    return {request: text for request, text in context.digests.items() if request != cut.request}


@level("clear")
def clear_level(work: Work, context: Context) -> bool:
    """Anthropic's context editing, `clear_tool_uses_20250919`
    (https://docs.claude.com/en/docs/build-with-claude/context-editing): above the line, the
    oldest tool results outside KEEP become a placeholder, oldest first, results of
    `exclude_tools` never; with `clear_tool_inputs`, the arguments of their calls go too.

    It stops once the request fits and at least `clear_at_least` tokens are cleared. If
    clearing every result it may clear would take off fewer than `clear_at_least` tokens, it
    clears nothing ("Context will only be modified if at least this many tokens can be
    removed", Anthropic's API reference): each clearing rewrites the request from the first
    cleared result on, so the prompt cache is read only up to there, and clearing a lot at
    once makes that happen less often. Messages keep their roles and call ids: pair-safe."""
    settings = context.settings
    trial = list(work.history)
    units = work.units
    names: dict[str, str] | None = None  # built at the first result it looks at
    cleared: list[str] = []
    inputs: list[str] = []
    destroyed: list[str] = []
    cleared_tokens = 0
    boundary = end = context.keep_start(trial)
    first_cleared = None  # where the next scan looks again if nothing is cleared
    for index in range(context.scan_start(clear_level, trial), boundary):
        block = trial[index]
        if block.role != "tool" or block.state == "cleared":
            continue
        names = names if names is not None else history_call_names(trial)
        call_id = block.message.get("tool_call_id")
        name = names.get(call_id, "tool")
        if name in settings.excluded_tools or context.kept(block):
            continue
        first_cleared = index if first_cleared is None else first_cleared
        before = context.tokens(units)
        units += _clear_result(trial, index, name, context, inputs)
        cleared.append(block.id)
        if name in context.fetch_once_tools:
            destroyed.append(block.id)
        cleared_tokens += before - context.tokens(units)
        if context.fits(units) and cleared_tokens >= settings.clear_at_least:
            end = index + 1
            break
    committed = bool(cleared) and cleared_tokens >= settings.clear_at_least
    if not committed:  # what it would have cleared is looked at again next time
        end = first_cleared if first_cleared is not None else boundary
    context.settle(clear_level, trial if committed else work.history, end)
    if not cleared:
        return False
    if not committed:
        work.held_back = cleared_tokens
        return False
    work.history[:] = trial
    work.units = units
    work.cleared += cleared
    work.inputs_cleared += inputs
    work.destroyed += destroyed
    work.cleared_tokens += cleared_tokens
    return True


def _clear_result(trial: list[Block], index: int, name: str, context: Context, inputs: list[str]) -> int:
    """Replaces the tool result at `index` with its placeholder (and, with clear_tool_inputs,
    empties its call's arguments); returns the units this changed the request by."""
    block = trial[index]
    note = f"{CLEARED_MARK} to save context: a {name} result of {len(block.text)} chars]"
    placeholder = trial[index] = context.block(block, {**block.message, "content": note}, state="cleared")
    change = placeholder.units - block.units
    if context.settings.clear_tool_inputs:
        change += _clear_arguments(trial, index, block.message.get("tool_call_id"), context, inputs)
    return change


def _clear_arguments(trial: list[Block], index: int, call_id: str | None, context: Context, inputs: list[str]) -> int:
    """Empties the arguments of the call whose result at `index` was cleared, in the reply that
    made it (noted in `inputs`); returns the units this changed the request by."""
    caller = caller_of(trial, index, call_id)
    if caller is None or context.kept(trial[caller]):
        return 0
    reply = trial[caller]
    calls = [
        {**call, "function": {**call.get("function", {}), "arguments": "{}"}} if call.get("id") == call_id else call
        for call in reply.message.get("tool_calls") or []
    ]
    emptied = context.block(reply, {**reply.message, "tool_calls": calls})
    trial[caller] = emptied
    if reply.id not in inputs:
        inputs.append(reply.id)
    return emptied.units - reply.units


@level("retrieval")
def retrieval_level(work: Work, context: Context) -> bool:
    """by-layer, level 1: the retrieved documents outside KEEP, oldest group first, become a
    one-line note with a preview, a whole group at a time (the documents found for one call
    go together). Roles and call ids stay: pair-safe."""
    history = work.history
    boundary = context.keep_start(history)
    groups: dict[str, list[int]] = {}
    for index, block in enumerate(history):
        if block.layer == "retrieval" and block.state == "original" and not context.kept(block):
            groups.setdefault(block.group, []).append(index)
    compressed = False
    for members in groups.values():
        if members[-1] >= boundary:
            continue  # found for a call in KEEP: the model still works with them
        for index in members:
            work.compressed.append(history[index].id)
            _replace(work, index, _noted(history[index], context))
        compressed = True
        if context.fits(work.units):
            break
    return compressed


@level("oldest")
def oldest_level(work: Work, context: Context) -> bool:
    """by-layer, level 3: what is left outside KEEP once old exchanges are dropped (the first
    request, the replies around pinned messages), oldest first, becomes a one-line note.
    Roles and tool calls stay: pair-safe."""
    history = work.history
    truncated = False
    for index in range(context.keep_start(history)):
        block = history[index]
        if block.state != "original" or context.kept(block) or not block.text:
            continue
        shrunk = _noted(block, context)
        if shrunk.units >= block.units:
            continue  # a short message: its note would be longer
        _replace(work, index, shrunk)
        work.truncated.append(block.id)
        truncated = True
        if context.fits(work.units):
            break
    return truncated


NOTICE_ID = "n1"


@level("notice")
def notice_level(work: Work, context: Context) -> bool:
    """by-layer, the last resort: the manual's overflow notice, a system message after the
    first request telling the model that old details may be gone. Added once; it stays."""
    history = work.history
    work.notice = NOTICE_ID
    if any(block.state == "notice" for block in history):
        return False
    template = history[0] if history else Block(NOTICE_ID, {}, 0, 1)
    notice = context.block(template, {"role": "system", "content": OVERFLOW_NOTICE}, id=NOTICE_ID, state="notice", layer="history", group="")
    history.insert(min(1, len(history)), notice)
    work.units += notice.units
    work.notice_added = True
    return True


def compact(history: list[Block], units: int, context: Context) -> tuple[list[Block], int, Compaction | None]:
    """Compact `history` (whose blocks add up to `units`) if the request is above the line.

    Returns the history to send, its units, and what was done (None when nothing was tried:
    the request fits, or the strategy never compacts). The input list is not modified.
    """
    strategy = context.strategy
    if not strategy.levels or not context.must_compact(history, units):
        return history, units, None
    work = Work(list(history), units)
    context.passed_over.clear()
    for step in strategy.levels:
        if strategy.until_fits and context.fits(work.units):
            break
        if step.run(work, context):
            work.levels.append(step.name)
    pinned_kept = ()
    if context.passed_over and not context.fits(work.units):
        pinned_kept = tuple(block.id for block in work.history if block.id in context.passed_over)
    compaction = Compaction(
        strategy=strategy.name,
        tokens_before=context.tokens(units),
        tokens_after=context.tokens(work.units),
        levels=tuple(work.levels),
        truncated=tuple(work.truncated),
        dropped=tuple(work.dropped),
        summarized=tuple(work.summarized),
        summary_id=work.summary_id,
        summarizer_input=work.summarizer_input,
        summarizer_output=work.summarizer_output,
        destroyed=tuple(work.destroyed),
        cleared=tuple(work.cleared),
        inputs_cleared=tuple(work.inputs_cleared),
        cleared_tokens=work.cleared_tokens,
        held_back=work.held_back,
        compressed=tuple(work.compressed),
        notice=work.notice,
        notice_added=work.notice_added,
        pinned_kept=pinned_kept,
        rewritten=_rewritten(history, work),
        rejected=work.rejected,
    )
    return work.history, work.units, compaction


def _rewritten(before: list[Block], work: Work) -> int:
    """Units of the messages a new summary now stands before that were sent unchanged: the
    prompt cache held them, and must write them again."""
    if work.summary_id is None:
        return 0
    position = next(i for i, block in enumerate(work.history) if block.id == work.summary_id)
    unchanged = {id(block) for block in before}
    return sum(block.units for block in work.history[position + 1 :] if id(block) in unchanged)
