"""The comparison panel: every strategy on the same chat, at the play page's call and settings.

`/compare/<id>` is the full page or, for HTMX, its `panel` block; `.json` and `.csv` are its
data; `/play/<id>/request.json` downloads the exact request of one strategy at one call. The
URL carries the play page's parameters plus the bill's (`cache`, `cached_share`,
`output_price`; `price` is the play page's own).
"""

from __future__ import annotations

import csv
import io
import json

from flask import Blueprint, Response, current_app, jsonify, render_template, request, url_for
from flask_babel import format_number, get_locale
from flask_babel import gettext as _
from flask_babel import lazy_gettext
from jinja2_fragments.flask import render_blocks

from ..core.chart import request_chart, small_well
from ..core.compare import (
    CACHE_MODELS,
    Column,
    Comparison,
    Pricing,
    compare,
    comparison_json,
    describe,
    label,
    parse_pricing,
    summary_row,
)
from ..core.serialize import request_body
from ..core.settings import COUNTER_NAMES, STRATEGIES, SettingsError
from ..core.story import outcome
from ..core.tokens import COUNTERS
from .languages import money as format_money
from .story import outcome_text
from .viewstate import StateError, ViewState, read_view

blueprint = Blueprint("compare", __name__)

PRICING_PARAMS = ("cache", "cached_share", "output_price")
CACHE_LABELS = {
    "openai": lazy_gettext("OpenAI automatic caching"),
    "anthropic": lazy_gettext("Anthropic cache breakpoints"),
}


def read_pricing(view: ViewState) -> Pricing:
    values = {name: (request.args.getlist(name) or [None])[-1] for name in PRICING_PARAMS}
    try:
        return parse_pricing({**values, "price": view.price})
    except SettingsError as error:
        raise StateError(400, error.problems) from None


def pricing_params(pricing: Pricing) -> dict[str, str]:
    """The bill's URL parameters, only where they differ from the defaults."""
    out = {}
    if pricing.cache != Pricing().cache:
        out["cache"] = pricing.cache
    if pricing.cached_share is not None:
        out["cached_share"] = f"{pricing.cached_share:g}"
    if pricing.output_price != Pricing().output_price:
        out["output_price"] = f"{pricing.output_price:g}"
    return out


def comparison_for(view: ViewState, pricing: Pricing) -> Comparison:
    comparison = compare(view.scenario, view.settings, pricing, run=current_app.extensions["replay_cache"].get)
    for key, why in comparison.unavailable.items():
        current_app.logger.warning("summarizer, column %s left out: %s", key, why)
    return comparison


class Links:
    """URLs of this panel's state, and of the play view of each column."""

    def __init__(self, view: ViewState, pricing: Pricing):
        self.view = view
        self.extra = pricing_params(pricing)

    def panel(self, endpoint: str = "compare.panel", **changes) -> str:
        return url_for(endpoint, scenario_id=self.view.scenario.id, **self.view.params(**changes), **self.extra)

    def play(self, column: Column) -> str:
        return self.view.url("web.play", settings_changes={"strategy": column.strategy, "keep_facts": column.keep_facts})

    def request(self, column: Column) -> str:
        params = self.view.params(settings_changes={"strategy": column.strategy, "keep_facts": column.keep_facts})
        return url_for("compare.request_json", scenario_id=self.view.scenario.id, **params)


@blueprint.route("/compare/<scenario_id>", endpoint="panel")
def panel_page(scenario_id: str):
    view = read_view(scenario_id, request.args)
    pricing = read_pricing(view)
    context = panel_context(view, pricing)
    if request.headers.get("HX-Request") and not request.headers.get("HX-History-Restore-Request"):
        return render_blocks("compare.html", ["panel", "languages"], fragment=True, oob=True, **context)
    return render_template("compare.html", fragment=False, **context)


@blueprint.route("/compare/<scenario_id>.json")
def panel_json(scenario_id: str):
    view = read_view(scenario_id, request.args)
    comparison = comparison_for(view, read_pricing(view))
    data = comparison_json(comparison, view.call)
    data["verdict"]["text"] = describe(comparison, _, format_number, format_money)
    return jsonify(data)


@blueprint.route("/compare/<scenario_id>.csv")
def panel_csv(scenario_id: str):
    view = read_view(scenario_id, request.args)
    comparison = comparison_for(view, read_pricing(view))
    out = io.StringIO()
    rows = [summary_row(column, view.call) for column in comparison.columns]
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    name = f"{view.scenario.id}-compare-call{view.call}.csv"
    return Response(
        out.getvalue(), mimetype="text/csv", headers={"Content-Disposition": f'attachment; filename="{name}"'}
    )


@blueprint.route("/play/<scenario_id>/request.json")
def request_json(scenario_id: str):
    """The exact request the loop sends at this call with these settings: the messages,
    prefix first, and the tool definitions, as the chat-completions API receives them."""
    view = read_view(scenario_id, request.args)
    result = current_app.extensions["replay_cache"].get(view.scenario, view.settings)
    body = request_body(result, result.calls[view.call - 1])
    strategy = view.settings.strategy + ("-keep-facts" if view.settings.keep_facts else "")
    name = f"{view.scenario.id}-{strategy}-call{view.call}-request.json"
    return Response(
        json.dumps(body, ensure_ascii=False, indent=1),
        mimetype="application/json",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


def panel_context(view: ViewState, pricing: Pricing) -> dict:
    comparison = comparison_for(view, pricing)
    lang = view.lang or "en"
    title = view.scenario.text("title", lang)
    current = (view.settings.strategy, view.settings.keep_facts)
    verdict = comparison.verdict
    return {
        "view": view,
        "pricing": pricing,
        "comparison": comparison,
        "links": Links(view, pricing),
        "call": view.call,
        "title": title,
        "page_title": _("Compare strategies")
        + " · "
        + _("Call %(call)s of %(calls)s", call=view.call, calls=comparison.call_count)
        + " · "
        + title,
        "columns": [
            {
                "column": column,
                "label": label(column, _),
                "about": _(STRATEGIES[column.strategy]) if column.strategy in STRATEGIES else "",
                "did": outcome_text(outcome(column.result), str(get_locale())),
                "current": (column.strategy, column.keep_facts) == current,
                "winner": column.key == verdict.winner,
                "well": small_well(comparison, column, view.call),
                "row": summary_row(column, view.call),
                "at": column.call(view.call),
                "hit": column.hits[view.call - 1],
                "money": money(column, pricing),
            }
            for column in comparison.columns
        ],
        "verdict": describe(comparison, _, format_number, format_money),
        "chart": request_chart(comparison, view.call),
        "cache_models": CACHE_MODELS,
        "cache_labels": CACHE_LABELS,
        "counters": {name: _(COUNTERS[name].label) for name in COUNTER_NAMES},
    }


def money(column: Column, pricing: Pricing) -> dict[str, float]:
    """The bill of a column in dollars, part by part; the parts add up to its cost."""
    per_token = pricing.price / 1_000_000
    bill = column.bill
    parts = {
        "uncached": bill.uncached * per_token,
        "cached": bill.cached * per_token * pricing.share,
        "written": bill.written * per_token * pricing.model.write_share,
        "output": bill.output * pricing.output_price / 1_000_000,
    }
    parts["total"] = bill.cost
    return parts
