"""The play page: one call of one scenario, as the well, the bill, the story, the log and the
chat; its JSON twin; and the exact request of the call, to download.

`PlayData` is the one data function of the page: what it shows at a call, each figure
computed once and only when a renderer asks. The HTML page (whole, or the panels that changed,
through the one htmx path of web/htmx.py) and the JSON twin (web/twins.py) both read it.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from functools import cached_property

from flask import Blueprint, request
from flask_babel import get_locale
from flask_babel import gettext as _

from ....core.analysis.layers import LayerUse
from ....core.analysis.comparison_data import cost_json
from ....core.analysis.pricing import bill as priced
from ....core.engine.calls import Call, Replay
from ....core.output.serialize import billing_json, call_json, origin_json, recorded_json, request_body, window_json
from ....core.output.snippets import settings_code
from ....core.drawing.layers import bands
from ...htmx import CameFrom, Fragments, fragment_page, is_htmx
from ...languages import number as format_number
from ...languages import counter_labels, strategy_descriptions, whole_numbers
from ...services import replays
from ...state import SETTING_PARAMS, PageState, read_state
from ...story import call_story
from ...twins import Twins, attachment
from .bill import bill
from .blocks import block_detail
from .chat import chat
from .references import block_references, reference_checks, reference_json
from .layers import budget_rows, cache_figures, layer_budget, layer_metric_rows, layered, metric_rows, metrics, pin_checks, pin_control, pinned_set
from .log import cache_is_the_lesson, call_sentence, cost_story, event_log
from .stepper import keep_legend, lesson_path, line_legend, next_event, request_jumps, speed_links
from .well import draw

blueprint = Blueprint("play", __name__)

PLAY = Fragments(
    "play.html",
    target="well",
    form=("controls", "controls"),
    # Collapsed views: an htmx answer sends a loader in their place, which fetches them (with
    # this id as its HX-Target) when they are opened.
    lazy={"table-view": "table_view", "settings-code": "settings_code"},
)
# What the growing lists (events, chat, bars) and the stack depend on besides the call.
STACK = frozenset({"call", *SETTING_PARAMS})


class PlayData:
    """What the play page says at one call, for every renderer, each figure computed once."""

    def __init__(self, view: PageState):
        self.view = view
        self.result: Replay = replays().get(view.scenario, view.settings)
        self.call: Call = self.result.calls[view.call - 1]
        self.lang = str(get_locale())

    @cached_property
    def title(self) -> str:
        return self.view.scenario.text("title", self.lang)

    @cached_property
    def cost(self) -> float:
        """What the calls so far cost at the page's pricing, billed as the comparison bills a
        strategy: the prompt cache's reads and writes at their prices, the summarizer's replies
        at the output price. At the last call it is the comparison's bill of the same run."""
        hits = cache_figures(self.view, self.result)[0][: self.view.call]
        cached, written = sum(hit.cached for hit in hits), sum(hit.written for hit in hits)
        return priced(self.view.pricing, self.call.sent_total, cached, written, self.call.summarizer_output_total).cost

    @cached_property
    def story(self) -> dict:
        return call_story(self.result, self.view.call, self.lang)

    @cached_property
    def metrics(self) -> dict:
        return metrics(self.view, self.result)

    @cached_property
    def budget(self) -> tuple[list[LayerUse], int]:
        """Each layer's use at this call, and the free room: for the bands, the table, the twin."""
        return layer_budget(self.result, self.view.call)

    @cached_property
    def read_as(self) -> dict | None:
        return origin_json(self.result, _)

    @cached_property
    def window(self) -> dict:
        """Where the window comes from, and the sentence that asks for it when nothing said it."""
        return window_json(self.view.scenario, self.view.settings, _)

    @cached_property
    def billing(self) -> dict:
        return billing_json(self.view.scenario, self.view.pricing, _)


@blueprint.route("/play/<scenario_id>", endpoint="page")
@blueprint.route("/play/<scenario_id>/<settings>", endpoint="page")  # the state's segment (web/state.py)
@fragment_page(PLAY)
def page(view: PageState, came_from: CameFrom) -> dict:
    before = came_from.state
    changed = came_from.changed
    # Growing lists append on an htmx +1 step that changes nothing else they show; a plain
    # page load (JavaScript off, or a key pressed before htmx is ready) has a Referer one call
    # back too, but it is a whole page and needs its lists whole.
    append = is_htmx() and before is not None and view.call == before.call + 1 and not (changed & (STACK | {"lang"})) - {"call"}
    context = play_context(PlayData(view), before if append else None)
    # Motion only when the stack changed from the page the request came from: a selected
    # block, another language, a page opened from elsewhere stand still.
    context["still"] = before is None or not changed & STACK
    context["append"] = append
    return context


twins = Twins(blueprint, "/play/<scenario_id>", PlayData)


@twins.json
def page_json(view: PageState, data: PlayData) -> dict:
    result = data.result
    uses, free = data.budget
    _hits, costs = cache_figures(view, result)
    return {
        "scenario": view.scenario.id,
        "title": data.title,
        "settings": view.settings.model_dump(),
        "window": data.window,
        "billing": data.billing,
        "call": view.call,
        "calls": len(result.calls),
        "price_per_million": view.price,
        "cost": round(data.cost, 6),
        "floor_tokens": round(result.floor_tokens, 2),
        "recorded_usage": recorded_json(result),
        "read_as": data.read_as,
        "warnings": result.warnings,
        # What the page says at this call: the author's narration, or the generated explanation.
        "story": data.story,
        "current": call_json(result, data.call),
        # The manual's metrics (its step 10) at this call, with its keys, and its budget by
        # layer (step 1), as the page's table shows it.
        "metrics": data.metrics,
        "budget": {"layers": [asdict(use) for use in uses], "free": free},
        # What this call's compaction cost the prompt cache (None: it did not compact).
        "compaction_cost": cost_json(costs[view.call]) if view.call in costs else None,
        # The values the agent used again that this call's request lost or this call uses.
        "references": reference_json(result, view.call),
    }


@blueprint.route("/play/<scenario_id>/request.json", endpoint="request_json")
def request_json(scenario_id: str):
    """The exact request the loop sends at this call with these settings: the messages,
    prefix first, and the tool definitions, as the chat-completions API receives them."""
    data = PlayData(read_state(scenario_id, request.args))
    view = data.view
    body = request_body(data.result, data.call)
    strategy = view.settings.strategy + ("-keep-facts" if view.settings.keep_facts else "")
    name = f"{view.scenario.id}-{strategy}-call{view.call}-request.json"
    return attachment(json.dumps(body, ensure_ascii=False, indent=1), "application/json", name)


def play_context(data: PlayData, before: PageState | None = None) -> dict:
    """What play.html shows. With `before` (the previous call, on a +1 step), the growing lists
    hold only what that step adds."""
    view, result, call = data.view, data.result, data.call
    selected = None
    if view.block:
        selected = block_detail(result, view.call, view.block)
        selected["pin"] = pin_control(view, result, view.block)
        selected["references"] = block_references(result, view.block)
    pinned = pinned_set(result)
    _hits, costs = cache_figures(view, result)
    well, well_words = draw(result, view.call, view.block, projector=view.projector, pinned=pinned, link=view.link_to("block"))
    # Each layer's use at this call, for the bands and the budget table alike.
    uses = data.budget[0] if layered(result) else []
    window = result.settings.real_window
    return {
        "view": view,
        "tokens": whole_numbers(),  # the language's formatter looked up once: a page writes hundreds of counts
        "result": result,
        "call": call,
        "lang": data.lang,
        "scenario": view.scenario,
        "title": data.title,
        "page_title": _("Call %(call)s of %(calls)s", call=view.call, calls=len(result.calls))
        + " · " + data.title + " · " + _("Compaction Playground"),
        "well": well,
        "well_words": well_words,
        "bands": bands(uses, window, well),
        "layers": budget_rows(uses, window),
        "pinned": pinned,
        "pin_checks": pin_checks(result, view.call),
        "reference_checks": reference_checks(result, view.call),
        "metrics": metric_rows(data.metrics),
        "layer_metrics": layer_metric_rows(data.metrics, result),
        "bill": bill(data),
        "log": event_log(result, view.call, first=before.call if before else 1, costs=costs),
        "cost_story": cost_story(costs[view.call]) if view.call in costs else None,
        "cache_lesson": cache_is_the_lesson(view.scenario),
        "chat": chat(result, view.call, before.call if before else 0),
        "story": data.story,
        "path": lesson_path(view, data.lang),
        "next_event": next_event(result, view.call),
        "code": settings_code(view.settings),
        "sentence": call_sentence(result, call),
        "keep_legend": keep_legend(view.settings),
        "line_legend": line_legend(view.settings),
        "warnings": [_(message) % {name: format_number(value) for name, value in values.items()} for message, values in result.notices],
        "read_as": data.read_as,
        "window_unknown": data.window["unknown"],
        # Said near the bill for a session (a scenario of the library keeps its one price).
        "billing": data.billing if view.scenario.origin is not None else None,
        "jumps": request_jumps(view, result),
        "selected": selected,
        "strategies": strategy_descriptions(),
        "counters": counter_labels(),
        "speeds": speed_links(view),
    }
