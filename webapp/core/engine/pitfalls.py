"""The pitfalls users of the production harnesses report, found in a replay and told with their
numbers (docs/harnesses.md): a floor at or above the line, so the harness compacts at every
call; a compaction that saves only a few percent; a summary placed before messages that had not
changed, so the prompt cache writes them again; a trigger the product does not allow.

Only harness strategies are checked: a textbook strategy stops as soon as the request fits, so
small savings are its design, and its KEEP has notices of its own (loop_notices.CANNOT_FIT).
"""

from __future__ import annotations

from ..i18n import N_
from ..settings import Settings
from .strategy_catalog import STRATEGIES
from .compaction import Compaction, Context

# A compaction that takes off less than this share of the request "saves only a few percent".
SMALL_SAVING = 0.10
# Below this many tokens a provider caches nothing (cache.py), so nothing is written again.
CACHE_MINIMUM = 1024

LOOP = N_(
    "Compacts at every call from call %(call)s: after compacting, the request is still %(after)s tokens, "
    "above the line (%(line)s). The system prompt and tools (%(floor)s tokens) and what this harness keeps "
    "(%(kept)s tokens) are more than its line: raise the window or lower what it keeps."
)
BEYOND = N_(
    "From call %(call)s even what Ollama always sends, the system messages and the latest message (with "
    "the tool call it answers), %(after)s tokens, passes num_ctx (%(line)s tokens): Ollama sends it anyway, "
    "and its runner keeps only the prompt's first tokens and about its last half (context shift), or "
    "refuses the request (400) where context shift is off."
)
# The pitfalls said once a replay too, by kind, at the first call each is found.
SAID_ONCE = {"loop": LOOP, "beyond": BEYOND}
TRIGGER_LOWERED = N_(
    "The line is set at %(asked)s%% of the window, but this harness only lets its line be lowered: it "
    "compacts at %(allowed)s%% (%(tokens)s tokens)."
)
TRIGGER_TOO_LOW = N_(
    "The line is set at %(tokens)s tokens, but this harness refuses a trigger under %(minimum)s tokens: "
    "the request would be rejected."
)
TRIGGER_ABOVE_WINDOW = N_(
    "This harness's own trigger, %(trigger)s tokens, is beyond this %(window)s-token window: the line is "
    "drawn at the window, so it compacts only when the request no longer fits."
)
RESERVE_ABOVE_WINDOW = N_(
    "This harness keeps %(reserve)s tokens free below the window, more than this %(window)s-token window "
    "holds: its line is at the very bottom, and it compacts at every call."
)

SERVER_CONTEXT_BELOW = N_(
    "Ollama runs the model at num_ctx = %(num_ctx)s tokens, below the %(window)s-token window the agent "
    "believes it has: past it, Ollama silently leaves out the oldest messages. Its default is 4,096 under "
    "24 GiB of GPU memory, 32,768 from 24 GiB, 262,144 from 48 GiB."
)

# The notices about a product's trigger, which the comparison repeats in each harness's column.
TRIGGER_MESSAGES = frozenset({TRIGGER_LOWERED, TRIGGER_TOO_LOW, TRIGGER_ABOVE_WINDOW, RESERVE_ABOVE_WINDOW, SERVER_CONTEXT_BELOW})
# Those that mean the product would not run this way at all: never the comparison's advice.
REFUSED_LINES = frozenset({TRIGGER_TOO_LOW, TRIGGER_ABOVE_WINDOW})


def call_pitfalls(compaction: Compaction | None, context: Context) -> list[dict[str, object]]:
    """The pitfalls of one call's compaction, each as an event's detail (`kind` and numbers)."""
    if compaction is None or not context.strategy.harness:
        return []
    found: list[dict[str, object]] = []
    line = round(context.settings.limit)
    if compaction.rejected:
        found.append({"kind": "refused", "tokens": compaction.tokens_before})
    server_cut = bool(context.strategy.trigger and context.strategy.trigger.line_setting)
    if server_cut and compaction.tokens_after > line:  # the server's context, which nothing it leaves out makes room in
        found.append({"kind": "beyond", "after": compaction.tokens_after, "line": line})
    if not compaction.changed:
        return found
    if compaction.tokens_after > line and not server_cut:
        floor = round(context.counter.block_tokens(context.floor_units))
        found.append({"kind": "loop", "after": compaction.tokens_after, "line": line, "floor": floor, "kept": compaction.tokens_after - floor})
    if compaction.tokens_after > compaction.tokens_before:  # the summary outweighs what it replaced
        found.append({"kind": "grew", "grew": compaction.tokens_after - compaction.tokens_before, "before": compaction.tokens_before})
    elif compaction.saved_share < SMALL_SAVING:
        saved = compaction.tokens_before - compaction.tokens_after
        found.append({"kind": "small", "saved": saved, "before": compaction.tokens_before, "percent": round(100 * compaction.saved_share, 1)})
    rewritten = round(context.counter.block_tokens(compaction.rewritten))
    if rewritten >= CACHE_MINIMUM:
        found.append({"kind": "cache", "tokens": rewritten})
    return found


def trigger_notices(settings: Settings) -> list[tuple[str, dict[str, int]]]:
    """What the product would do with this line that the setting does not say, once a replay."""
    strategy = STRATEGIES[settings.strategy]
    trigger = strategy.trigger
    if not strategy.harness or trigger is None:
        return []
    notices: list[tuple[str, dict[str, int]]] = []
    default = trigger.share_of(settings.window, settings)
    reserved = trigger.reserved(settings)
    if trigger.lower_only and default is not None and settings.threshold > default:
        values = {"asked": round(settings.threshold * 100), "allowed": round(default * 100), "tokens": round(settings.limit)}
        notices.append((TRIGGER_LOWERED, values))
    if trigger.minimum_tokens is not None and settings.limit < trigger.minimum_tokens:
        notices.append((TRIGGER_TOO_LOW, {"tokens": round(settings.limit), "minimum": trigger.minimum_tokens}))
    if trigger.tokens is not None and trigger.tokens > settings.window and settings.threshold == default:
        notices.append((TRIGGER_ABOVE_WINDOW, {"trigger": trigger.tokens, "window": settings.window}))
    if reserved is not None and reserved >= settings.window and settings.threshold == default:
        notices.append((RESERVE_ABOVE_WINDOW, {"reserve": reserved, "window": settings.window}))
    if trigger.line_setting and getattr(settings, trigger.line_setting) < settings.window:
        notices.append((SERVER_CONTEXT_BELOW, {"num_ctx": getattr(settings, trigger.line_setting), "window": settings.window}))
    return notices
