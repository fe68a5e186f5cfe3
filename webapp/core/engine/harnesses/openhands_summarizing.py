"""OpenHands' LLM summarizing condenser (`openhands-summarizing`): past 100 events (or the
window, as its V1 SDK does), the first event stays, then a summary that merges the last one,
then the newest half. In the playground a message is an event. docs/harnesses.md tells it with
the same sources as `HARNESS.citations`."""

from __future__ import annotations

from ...i18n import N_
from ...settings import Settings
from ..compaction import Citation, Context, ProductConfig, Strategy, Work, level
from ..history import TOOL_RESULT_ROLES, Block
from ..summarizer import SummaryStyle
from .common import before_results, commit, split_pinned, summary

KEEP_FIRST = 1  # the first events, kept before the summary (its max_size is the trigger's `messages`)

PROMPT = SummaryStyle(
    "You keep the state of an agent's work. From the previous summary and the events "
    "below, write the new state: USER_CONTEXT (what the user wants, their constraints), "
    "TASK_TRACKING (tasks and their status), COMPLETED, PENDING, CURRENT_STATE, and the "
    "code state (files, functions, test results). Merge the previous summary; drop "
    "nothing still true.",
    "USER_CONTEXT / COMPLETED / PENDING / CURRENT_STATE (condensed events):",
    "USER_CONTEXT facts:",
)


def condenser_tail(history: list[Block], context: Context) -> int:
    """KEEP at the condenser's tail: past max_size events, the newest
    max_size // 2 - keep_first - 1 (one place is the summary's); above the window in tokens,
    the newest messages that fill at most half of it (its V1 condenser's token target)."""
    max_size = context.strategy.trigger.messages
    if len(history) > max_size:
        tail = max_size // 2 - KEEP_FIRST - 1
        return before_results(history, max(KEEP_FIRST, len(history) - tail))
    room = context.settings.window / 2
    start = len(history)
    while start > KEEP_FIRST and room >= context.counter.block_tokens(history[start - 1].units):
        room -= context.counter.block_tokens(history[start - 1].units)
        start -= 1
    return before_results(history, start)


@level("condense", summarizes=True)
def condense(work: Work, context: Context) -> bool:
    """The first `KEEP_FIRST` messages stay, then the summary (merging the last one), then the
    tail (`condenser_tail`)."""
    history = work.history
    head = KEEP_FIRST
    while head < len(history) and history[head].role in TOOL_RESULT_ROLES:
        head += 1  # the first messages keep their calls' results
    previous = history[head] if head < len(history) and history[head].state == "summary" else None
    tail = context.keep_start(history)
    folded, staying = split_pinned(history, head, tail, context)
    if not folded:
        return False
    new, result = summary(context, folded, previous, history[tail:])
    commit(work, context, [*history[:head], new, *staying, *history[tail:]], folded, new, result)
    return True


def condenser_config(settings: Settings) -> str:
    """The condenser's config in OpenHands' Python."""
    return "\n".join([
        "from openhands.core.config.condenser_config import LLMSummarizingCondenserConfig",
        "",
        "condenser = LLMSummarizingCondenserConfig(",
        "    llm_config=llm_config,  # the model that writes the summaries",
        f"    keep_first={KEEP_FIRST},",
        f"    max_size={HARNESS.trigger.messages},  # condense past this many events",
        ")",
        f"# It condenses on the number of events; the playground also condenses above the {settings.window:,}-token window,",
        "# where OpenHands condenses after the provider's context-window error.",
    ])


REPOSITORY = "OpenHands/OpenHands"
COMMIT = "d6fab190bfb55f07cc380993b45ec4f781706a92"
CONFIG = "openhands/core/config/condenser_config.py"
CONDENSER = "openhands/memory/condenser/impl/llm_summarizing_condenser.py"
HARNESS = Strategy(
    "openhands-summarizing",
    N_(
        "as OpenHands' LLM summarizing condenser does it: past 100 messages (or the window), the "
        "first message stays, the newest half of 100 stays, and the middle becomes a summary that merges the last one"
    ),
    (condense,),
    until_fits=False,
    product="OpenHands",
    keep_rule=condenser_tail,
    prompt=PROMPT,
    config=ProductConfig("python", condenser_config),
    citations=(
        Citation("trigger", REPOSITORY, COMMIT, f"{CONFIG} L61-85, LLMSummarizingCondenserConfig: max_size 100 events"),
        Citation(
            "trigger", "OpenHands/software-agent-sdk", "611629e6999ad398dc49c761721eefe18d5e6bd9",
            "openhands-sdk/openhands/sdk/context/condenser/llm_summarizing_condenser.py L117-154, L248-316: past the model's input limit, to about half of it",
        ),
        Citation("KEEP_FIRST", REPOSITORY, COMMIT, f"{CONFIG} L61-85, LLMSummarizingCondenserConfig: keep_first 1"),
        Citation("condenser_tail", REPOSITORY, COMMIT, f"{CONDENSER} L25-46, L160-161; openhands/memory/view.py L48-92"),
        Citation("PROMPT", REPOSITORY, COMMIT, f"{CONDENSER} (the state it asks for: USER_CONTEXT, TASK_TRACKING, COMPLETED, PENDING, CURRENT_STATE)"),
        Citation("condenser_config", REPOSITORY, COMMIT, f"{CONFIG} L61-85"),
    ),
)
