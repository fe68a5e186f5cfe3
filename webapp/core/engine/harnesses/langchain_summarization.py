"""LangChain's SummarizationMiddleware (`langchain-summarization`): it has no default line (the
page's is used); past it, all but the last 20 messages become one summary written from at most
their newest 4,000 tokens. docs/harnesses.md tells it with the same sources as
`HARNESS.citations`."""

from __future__ import annotations

from ...i18n import N_
from ...settings import Settings
from ..compaction import Citation, Context, ProductConfig, Strategy, Work, level
from ..history import Block
from ..summarizer import SummaryStyle
from .common import before_results, commit, previous_summary, split_pinned, summary, tokens

KEEP_MESSAGES = 20  # the last messages kept
TRIM_TOKENS = 4_000  # the summarizer reads only the newest this many tokens of what it replaces
TRIM_FALLBACK_MESSAGES = 15  # else the last this many messages

PROMPT = SummaryStyle(
    "Extract from the messages below the context the assistant needs to go on with the "
    "user's task once they are removed: the task, what was found and decided, and what "
    "remains. Write only that context.",
    "Here is a summary of the conversation to date:",
)


def last_messages(history: list[Block], context: Context) -> int:
    """KEEP at the last `KEEP_MESSAGES` messages, moved back to the AI message that made the
    calls when that would start on a tool result."""
    return before_results(history, max(0, len(history) - KEEP_MESSAGES))


@level("langchain-summary", summarizes=True)
def summarize_middleware(work: Work, context: Context) -> bool:
    """All but the last messages (`last_messages`) are replaced by one summary, written from
    their newest `TRIM_TOKENS` only (starting on a user message; the last
    `TRIM_FALLBACK_MESSAGES` when none fits): what is older is lost unread."""
    history = work.history
    cutoff = context.keep_start(history)
    folded, staying = split_pinned(history, 0, cutoff, context)
    if not folded:
        return False
    read: list[Block] = []
    spent = 0.0
    for block in reversed(history[:cutoff]):
        spent += tokens(context, block)
        if spent > TRIM_TOKENS:
            break
        read.insert(0, block)
    while read and read[0].role != "user":
        read.pop(0)
    read = read or history[:cutoff][-TRIM_FALLBACK_MESSAGES:]
    folded_ids = {block.id for block in folded}
    new, result = summary(context, [block for block in read if block.id in folded_ids], previous_summary(read), history[cutoff:])
    commit(work, context, [new, *staying, *history[cutoff:]], folded, new, result)
    return True


def middleware(settings: Settings) -> str:
    """The middleware in an agent, at the line on the page (LangChain has none of its own)."""
    return "\n".join([
        "from langchain.agents import create_agent",
        "from langchain.agents.middleware import SummarizationMiddleware",
        "",
        "summarization = SummarizationMiddleware(",
        "    model=summary_model,",
        f'    trigger=("tokens", {round(settings.limit)}),  # {settings.threshold:.0%} of {settings.window:,}; no trigger: it never summarizes',
        f'    keep=("messages", {KEEP_MESSAGES}),',
        f"    trim_tokens_to_summarize={TRIM_TOKENS},",
        ")",
        "agent = create_agent(model, tools=tools, middleware=[summarization])",
    ])


PACKAGE = "langchain (PyPI)"
VERSION = "1.5.0"
MIDDLEWARE = "langchain/agents/middleware/summarization.py"
HARNESS = Strategy(
    "langchain-summarization",
    N_(
        "as LangChain's SummarizationMiddleware does it: at the line you set (it has no default), "
        "all but the last 20 messages become a summary written from at most their last 4,000 tokens"
    ),
    (summarize_middleware,),
    until_fits=False,
    product="LangChain",
    keep_rule=last_messages,
    prompt=PROMPT,
    config=ProductConfig("python", middleware),
    citations=(
        Citation("trigger", PACKAGE, VERSION, f"{MIDDLEWARE} L156-250, _should_summarize L698-738: no default trigger"),
        Citation("KEEP_MESSAGES", PACKAGE, VERSION, f"{MIDDLEWARE} L113, L287, _DEFAULT_MESSAGES_TO_KEEP"),
        Citation("TRIM_TOKENS", PACKAGE, VERSION, f"{MIDDLEWARE} L114-115, _DEFAULT_TRIM_TOKEN_LIMIT"),
        Citation("TRIM_FALLBACK_MESSAGES", PACKAGE, VERSION, f"{MIDDLEWARE} L1022-1040"),
        Citation("last_messages", PACKAGE, VERSION, f"{MIDDLEWARE} _find_safe_cutoff_point L878-911"),
        Citation("PROMPT", PACKAGE, VERSION, f"{MIDDLEWARE} before_model L479-518: the summary's opening line"),
        Citation("middleware", PACKAGE, VERSION, f"{MIDDLEWARE}: SummarizationMiddleware(model, trigger, keep, trim_tokens_to_summarize)"),
    ),
)
