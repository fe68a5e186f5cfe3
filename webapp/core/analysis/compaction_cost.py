"""What each compaction costs the prompt cache, and how many calls it takes to pay for itself.

A provider's cache serves the start of a request that repeats an earlier one (cache.py). A
compaction rewrites the request from its first changed message on: everything after that point
was in the cache, and is now sent uncached (OpenAI) or written to the cache again at the write
price (Anthropic, 1.25x). In exchange each later call sends fewer tokens. The figures compare
two futures from the compaction's call on: the compacted request, and the same request left
whole (as if the window allowed it):

- `kept_prefix`: tokens of the floor and the messages before the first difference;
  `given_up`: the tokens the cache held of the previous request past that point (none when
  the previous request was under the cache's minimum);
- `rewritten`: tokens of the new request after the first difference, and `write_cost` their
  price at the write price (the full price where writing is free), when the compaction gave
  up cached tokens (else the cache had nothing to write again);
- `extra_cost`: what this call costs more than the whole request would have, read from the
  cache up to the previous request's end (negative: the compaction pays at once);
- `saved`: tokens each later call sends fewer (tokens before − after), worth `saving_per_call`
  at the cached price, since in the other future they would have come from the cache;
- `break_even`: later calls until the savings cover the extra cost (0: at once); None when
  the session ends first, or when a later call saves nothing.

This is why clear-tool-results has "clear at least" (Anthropic's `clear_at_least`): a clearing
that saves few tokens still rewrites everything after the first cleared result, and may never
repay it; and why a summary is best placed after the stable part of the request, so that the
first difference comes late and less of the cache is given up. The manual (seed 004, its step
8) says caching pays from the second call with the same prefix: a compaction restarts that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..counting.tokens import get_counter
from ..engine.calls import Replay
from .cache import CacheHit, replay_prefixes
from .pricing import Pricing


@dataclass(frozen=True)
class CompactionCost:
    call: int
    first_difference: str | None  # the id of the first message of the new request that differs (None: only removals at its end)
    kept_prefix: int
    given_up: int
    rewritten: int
    write_cost: float  # US dollars
    extra_cost: float  # US dollars, at this call
    saved: int
    saving_per_call: float  # US dollars
    calls_left: int  # calls after this one
    break_even: int | None

    @property
    def repaid(self) -> bool:
        return self.break_even is not None


def compaction_costs(result: Replay, hits: list[CacheHit], pricing: Pricing) -> dict[int, CompactionCost]:
    """The cost of every compaction that changed the request, by the number of its call."""
    counter = get_counter(result.settings.counter)
    model = pricing.model
    per_token = pricing.price / 1_000_000
    share, write = pricing.share, model.write_share

    def tokens(units: int) -> int:
        return math.floor(counter.block_tokens(units))

    def cached(prefix: int) -> int:
        return prefix // model.step * model.step if prefix >= model.minimum else 0

    prefixes = replay_prefixes(result)  # what each request shares with the one before, and its units
    costs = {}
    for index, call in enumerate(result.calls):
        compaction = call.compaction
        if compaction is None or not compaction.changed:
            continue
        shared = prefixes.shared[index]
        kept = tokens(prefixes.shared_units[index])
        before = tokens(prefixes.units[index - 1]) if index else kept
        sent = tokens(prefixes.units[index])
        whole = sent + compaction.tokens_before - compaction.tokens_after
        hit = hits[index].cached
        given_up = max(0, cached(before) - kept)
        extra = (hit * share + (sent - hit) * write) - (cached(before) * share + (whole - cached(before)) * write)
        saved = compaction.tokens_before - compaction.tokens_after
        saving = saved * share * per_token
        left = len(result.calls) - call.number
        # Calls to repay it; a price near zero makes the saving vanish, and the ratio infinite.
        ratio = extra * per_token / saving if saving > 0 else math.inf
        if extra <= 0:
            break_even: int | None = 0
        elif math.isfinite(ratio) and ratio <= left:
            break_even = math.ceil(ratio)
        else:
            break_even = None
        # The whole request after the first difference, as many tokens as the page says it sends
        # (the request's own count holds what no block does: the reply's opening, 3 tokens).
        rewritten = max(0, call.tokens - kept)
        costs[call.number] = CompactionCost(
            call=call.number,
            first_difference=call.blocks[shared].id if shared < len(call.blocks) else None,
            kept_prefix=kept,
            given_up=given_up,
            rewritten=rewritten,
            write_cost=rewritten * write * per_token if given_up else 0.0,
            extra_cost=extra * per_token,
            saved=saved,
            saving_per_call=saving,
            calls_left=left,
            break_even=break_even,
        )
    return costs
