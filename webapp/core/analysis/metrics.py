"""The metrics the "Agent Context Manager" manual says to expose in production (its step 10),
for one call of a replay, with its names.

Every figure is read from the replay, the cache model (cache.py) and the prices (pricing.py),
as the bill of the comparison is: the metrics of a call never disagree with the rest of the
page.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .cache import CacheHit, MessageKeys, cache_hits, replay_prefixes
from .layers import request_layers
from ..model import MANUAL_KEYS
from .pricing import Pricing, bill
from .provider_prices import session_basis
from ..engine.calls import Replay
from ..counting.tokens import get_counter


def replay_hits(result: Replay, pricing: Pricing, keys: MessageKeys | None = None) -> list[CacheHit]:
    """What the prompt cache serves at each call of the replay, kept with its calls for each
    cache model (a new price needs none again). `keys`, shared by several replays of one chat
    (the comparison's columns), saves keying the same messages again."""
    kept = (replay_hits, pricing.cache)
    found = result.of_calls.get(kept)
    if found is None:
        counter = get_counter(result.settings.counter)
        blocks = [call.blocks for call in result.calls]
        found = result.of_calls[kept] = cache_hits(blocks, result.floor_units, counter, pricing.model, keys, replay_prefixes(result))
    return found


def call_metrics(
    result: Replay, number: int, pricing: Pricing | None = None, hits: Sequence[CacheHit] | None = None
) -> dict[str, Any]:
    """The manual's metrics at call `number`:

    - tokens_used_total: the request's tokens (the manual's current_tokens);
    - tokens_by_layer: the same tokens by layer, with the manual's keys (ltm: long-term memory,
      rag: retrieved documents); they add up to tokens_used_total;
    - context_utilization_pct: the request's share of the model's window, in percent;
    - compression_events: the calls so far whose compaction changed the history;
    - cache_hit_rate: the request's tokens read from the prompt cache, as a share of it;
    - estimated_cost_usd: what this call costs at `pricing`: the request (its cached part at
      the cache's price) and, when it summarized, the summarizer's call.

    `hits` (the replay's cache hits at `pricing`, `replay_hits`) saves recomputing them when
    a page shows several calls.
    """
    pricing = pricing or session_basis(result.scenario).pricing
    call = result.calls[number - 1]
    hit = (hits if hits is not None else replay_hits(result, pricing))[number - 1]
    layers = request_layers(result, call)
    compaction = call.compaction
    summarizer_input = compaction.summarizer_input if compaction else 0
    summarizer_output = compaction.summarizer_output if compaction else 0
    cost = bill(pricing, call.tokens + summarizer_input, hit.cached, hit.written, summarizer_output).cost
    return {
        "tokens_used_total": call.tokens,
        "tokens_by_layer": {MANUAL_KEYS[layer]: tokens for layer, tokens in layers.items()},
        "context_utilization_pct": round(call.tokens / result.settings.real_window * 100, 2),
        "compression_events": sum(
            1 for earlier in result.calls[:number] if earlier.compaction is not None and earlier.compaction.changed
        ),
        "cache_hit_rate": round(hit.cached / call.tokens, 4) if call.tokens else 0.0,
        "estimated_cost_usd": round(cost, 6),
    }
