"""Ollama (`ollama`): the agent sends the whole history; Ollama's server, past the context it runs
the model at (`num_ctx`), silently leaves out the oldest messages, keeping every system message and
the latest message, and says nothing to the agent. Its default num_ctx depends on the machine's
GPU memory (triggers.py). Read in ollama/ollama at v0.32.15; docs/harnesses.md tells it with the
same sources as `HARNESS.citations`.

What Ollama does that the playground does not: it may leave a tool result whose call it dropped
(the cut is any message), where every harness of the playground keeps a call and its results
together, so the cut moves on past such results; and when even the system messages and the last
message pass num_ctx, it sends them anyway and its runner cuts the prompt's tokens (context shift,
`CONTEXT_SHIFT_KEEP`) or refuses it (400): the playground shows that call as an overflow.
"""

from __future__ import annotations

from itertools import accumulate

from ...i18n import N_
from ...settings import Settings
from ...triggers import OLLAMA_NUM_CTX_BY_MEMORY
from ..compaction import Citation, Context, ProductConfig, Strategy, Work, level
from ..history import TOOL_RESULT_ROLES
from .common import last_turn

# The runner's context shift, when a prompt alone passes num_ctx: it keeps the prompt's first
# num_keep tokens (the option's default, plus one for a BOS token) and its last ones, down to
# num_ctx - (num_ctx - num_keep) / 2: about half the context.
CONTEXT_SHIFT_KEEP = 4


@level("leave-out-oldest")
def leave_out_oldest(work: Work, context: Context) -> bool:
    """Ollama's `chatPrompt` (server/prompt.go) and `truncateNativeChatMessages` (server/routes.go):
    the first cut from the oldest message on where the system messages before it, then every
    message from it, fit num_ctx; the last message is sent whatever its size. A cut on a tool
    result moves on past it (its call would be gone), and a pinned message stays, with what it
    cannot be sent without: the playground's two rules for every harness."""
    history = work.history
    keep = context.keep_start(history)
    staying = context.kept_with_partners(history, 0, keep) | {i for i in range(keep) if history[i].role == "system"}
    # Units sent with the cut at each index: what stays before it, and everything from it on.
    before = [0, *accumulate(block.units if index in staying else 0 for index, block in enumerate(history))]
    after = list(accumulate((block.units for block in reversed(history)), initial=0))[::-1]
    line = context.settings.limit
    cut = next(
        (
            index
            for index in range(keep + 1)
            if (index == keep or history[index].role not in TOOL_RESULT_ROLES) and context.tokens(before[index] + after[index]) <= line
        ),
        keep,
    )
    left_out = [block for index, block in enumerate(history[:cut]) if index not in staying]
    if not left_out:
        return False
    work.history[:] = [history[index] for index in sorted(staying) if index < cut] + history[cut:]
    work.units = before[cut] + after[cut]
    work.dropped += [block.id for block in left_out]
    return True


def server_config(settings: Settings) -> str:
    """The context Ollama runs the model at, as its server, a Modelfile or a request sets it."""
    tiers = ", ".join(f"{tokens:,} from {memory} GiB" if memory else f"{tokens:,} below" for memory, tokens in OLLAMA_NUM_CTX_BY_MEMORY[::-1])
    num_ctx = settings.num_ctx
    lines = [
        f"# Ollama runs the model at num_ctx = {num_ctx:,} tokens; past it, it leaves out the oldest messages, silently.",
        f"# Its default depends on the GPU memory the server finds: {tiers}.",
        f"export OLLAMA_CONTEXT_LENGTH={num_ctx}  # every model's default, then: OLLAMA_CONTEXT_LENGTH={num_ctx} ollama serve",
        f"# or one model, in its Modelfile:  PARAMETER num_ctx {num_ctx}",
        f'# or one request to /api/chat:     "options": {{"num_ctx": {num_ctx}}}',
    ]
    if num_ctx < settings.window:
        lines.append(f"# The agent believes the model has {settings.window:,} tokens: raise num_ctx to {settings.window}, or tell the agent {num_ctx:,}.")
    return "\n".join(lines)


REPOSITORY = "ollama/ollama"
VERSION = "v0.32.15"
HARNESS = Strategy(
    "ollama",
    N_(
        "as Ollama does it: the agent sends everything, and past num_ctx Ollama leaves out the oldest messages "
        "without a word, keeping the system messages and the last one (num_ctx is 4,096 on a machine with under "
        "24 GiB of GPU memory)"
    ),
    (leave_out_oldest,),
    # Ollama itself may leave a tool result without its call (the replay keeps the pair): a
    # comparison never advises it, and says why.
    breaks_pairs=True,
    options=("num_ctx",),
    product="Ollama",
    keep_rule=last_turn,
    config=ProductConfig("shell", server_config),
    formats=("ollama", "ollama-exchanges"),
    citations=(
        Citation("trigger", REPOSITORY, VERSION, "server/prompt.go, chatPrompt: it truncates when the rendered prompt's tokens pass opts.NumCtx"),
        Citation(
            "trigger", REPOSITORY, VERSION,
            "server/routes.go, Serve(): the default num_ctx by total VRAM, 262,144 from 47 GiB, 32,768 from 23 GiB, else 4,096 "
            "(commit 0334ffa, first in v0.15.5); modelOptions applies it when neither request nor Modelfile sets num_ctx",
        ),
        Citation("trigger", REPOSITORY, VERSION, "server/sched.go, effectiveContext: num_ctx is capped at the model's trained context"),
        Citation(
            "CONTEXT_SHIFT_KEEP", REPOSITORY, VERSION,
            "api/types.go, DefaultOptions: NumKeep 4; llm/llama_server.go, completionPromptForRequest and contextShiftPromptLimit",
        ),
        Citation(
            "server_config", REPOSITORY, VERSION,
            "envconfig/config.go (OLLAMA_CONTEXT_LENGTH); docs/faq.mdx and docs/context-length.mdx (options.num_ctx, "
            "PARAMETER num_ctx, OLLAMA_CONTEXT_LENGTH=… ollama serve)",
        ),
    ),
)
