"""The manual's budget on the play page: each layer's band in the well and its row in the
budget table, pinning a message from the page, the pinned checks and the metrics panel.

The figures come from the core (webapp/core/analysis/layers.py, webapp/core/analysis/metrics.py); this module
puts them in the reader's words, with the manual's names beside them.
"""

from __future__ import annotations


from flask_babel import gettext as _
from markupsafe import Markup

from ....core.analysis.layers import LayerUse, layer_use, request_layers
from ....core.model import LAYER_WORDS, MANUAL_KEYS, ROOM_LAYERS
from ....core.analysis.cache import CacheHit
from ....core.analysis.compaction_cost import CompactionCost, compaction_costs
from ....core.analysis.metrics import call_metrics, replay_hits
from ....core.engine.calls import Replay, per_replay
from ....core.drawing.block_versions import first_version
from ....core.engine.strategy_catalog import STRATEGIES
from ...languages import money, percent, whole_numbers
from ...state import PageState


def layered(result: Replay) -> bool:
    """Whether the play page shows the budget by layer: the scenario has memory or retrieval
    messages, or the strategy is the manual's. The pattern page's lessons keep their plain well."""
    return STRATEGIES[result.settings.strategy].by_layer or _has_layers(result)


@per_replay
def _has_layers(result: Replay) -> bool:
    scenario = result.scenario
    return any(layer != "system" for layer in scenario.prefix_layers) or any(item.layer != "history" for item in scenario.script)


def layer_budget(result: Replay, number: int) -> tuple[list[LayerUse], int]:
    """Each layer's use at call `number` against the scenario's budget, and the free room."""
    return layer_use(result.settings, result.scenario.budget, request_layers(result, result.calls[number - 1]))


def budget_rows(uses: list[LayerUse], window: int) -> list[dict]:
    """The budget table: each layer in words, what it uses (for the room kept free: what is
    still free) and its budget, over it or not."""
    return [
        {
            "layer": use.layer,
            "words": _(LAYER_WORDS[use.layer]),
            "manual": MANUAL_KEYS.get(use.layer, use.layer),
            "tokens": use.tokens,
            "budget": use.budget_tokens,
            "share": use.budget_tokens / window,
            "over": use.over,
            "room": use.layer in ROOM_LAYERS,
        }
        for use in uses
    ]


def metrics(view: PageState, result: Replay) -> dict:
    """The manual's metrics (its step 10) at the page's call, with its keys."""
    hits, _costs = cache_figures(view, result)
    return call_metrics(result, view.call, view.pricing, hits)


def cache_figures(view: PageState, result: Replay) -> tuple[list[CacheHit], dict[int, CompactionCost]]:
    """What the prompt cache serves at each call, and what each compaction costs it, at the
    page's pricing. Both are computed over the whole replay, so they are kept with the replay
    for the last pricing asked (a step keeps the pricing)."""
    kept = _cache_hits(result)
    pricing, hits, costs = kept.get("last", (None, None, None))
    if pricing != view.pricing or hits is None or costs is None:
        hits = replay_hits(result, view.pricing)
        costs = compaction_costs(result, hits, view.pricing)
        kept["last"] = (view.pricing, hits, costs)  # one assignment: another thread reads a whole triple
    return hits, costs


@per_replay
def _cache_hits(result: Replay) -> dict:
    return {}


def metric_rows(values: dict) -> list[tuple[str, Markup, str]]:
    """The metrics panel: each metric in words, under the manual's key (which a phone may break
    after an underscore), with its value written in the page's language."""
    tokens = whole_numbers()
    return [
        (words, breakable(key), value)
        for words, key, value in [
            (_("Tokens in this request"), "tokens_used_total", tokens(values["tokens_used_total"])),
            (_("Share of the model's window used"), "context_utilization_pct", percent(values["context_utilization_pct"] / 100, 1)),
            (_("Compactions so far"), "compression_events", tokens(values["compression_events"])),
            (_("Share read from the prompt cache"), "cache_hit_rate", percent(values["cache_hit_rate"], 1)),
            (_("Estimated cost of this call"), "estimated_cost_usd", money(values["estimated_cost_usd"])),
        ]
    ]


def breakable(name: str) -> Markup:
    """A snake_case name that may wrap after its underscores, not inside a word."""
    return Markup("_<wbr>").join(name.split("_"))


def layer_metric_rows(values: dict, result: Replay) -> list[tuple[str, str, str, str]]:
    """tokens_by_layer: each layer in words, under the manual's key, with a note where a zero
    is the counter's doing: the chars/4 estimate, like the pattern page's, leaves the tool
    definitions out, so a chat with tools reads "tools 0" beside a floor that names them."""
    words = {MANUAL_KEYS[layer]: LAYER_WORDS[layer] for layer in MANUAL_KEYS}
    tokens = whole_numbers()
    uncounted = result.settings.counter == "estimate" and bool(result.scenario.tools)
    return [
        (_(words[key]), key, tokens(value), _("not counted by the estimate (characters / 4)") if key == "tools" and uncounted else "")
        for key, value in values["tokens_by_layer"].items()
    ]


def pinned_set(result: Replay) -> frozenset[str]:
    """Every pinned message: the scenario's, with those pinned or unpinned from the page."""
    return result.settings.pinned(result.scenario.pinned)


def pin_control(view: PageState, result: Replay, block_id: str) -> dict | None:
    """The selected message's pin: whether it is pinned and by whom, and the link that
    toggles it (`pin` adds m3, or -m3 to unpin one the scenario pins); None for what is no
    message of the chat (the floor, a summary)."""
    if not any(item.id == block_id for item in result.scenario.script):
        return None
    by_scenario = block_id in result.scenario.pinned
    pinned = block_id in pinned_set(result)
    # What `pin` says of this message now, and what it should say after the click: nothing
    # when that is the scenario's own choice.
    others = [name for name in view.settings.pin.split(",") if name and name.lstrip("-") != block_id]
    if pinned != by_scenario:
        changed = others
    else:
        changed = [*others, f"-{block_id}" if pinned else block_id]
    return {"pinned": pinned, "by_scenario": by_scenario, "url": view.url(relative=True, pin=",".join(changed))}


def pin_checks(result: Replay, number: int) -> list[dict]:
    """Every pinned message the chat has sent by call `number`: still in the request, and
    unchanged; with its first words, to recognise it."""
    return [
        {"id": status.id, "present": status.present, "unchanged": status.unchanged, "excerpt": excerpt(first_version(result, status.id))}
        for status in result.calls[number - 1].pinned
    ]


def excerpt(block, length: int = 60) -> str:
    """A message's first words, to recognise it in a list."""
    text = " ".join(block.text.split()) if block else ""
    return text if len(text) <= length else text[: length - 1] + "…"
