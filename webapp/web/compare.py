"""The comparison panel: every strategy on the same chat, at the play page's call and settings.

`/compare/<id>` is the full page or, for HTMX, its `panel` block; `.json` and `.csv` are its
data; `/play/<id>/request.json` downloads the exact request of one strategy at one call. The
URL is the page state of webapp/web/state.py, which also holds the bill's parameters (`cache`,
`cached_share`, `output_price` and the play page's `price`).
"""

from __future__ import annotations

import csv
import io
import json

from flask import Blueprint, Response, current_app, jsonify, render_template, request
from flask_babel import format_number, get_locale
from flask_babel import gettext as _
from flask_babel import lazy_gettext

from ..core.drawing.chart import request_chart, small_well
from ..core.analysis.cache import CACHE_MODELS
from ..core.analysis.compare import Column, Comparison, Name, compare, comparison_json, fill, name_of, summary_row, verdict_notices
from ..core.analysis.pricing import Pricing
from ..core.output.serialize import request_body
from ..core.settings import COUNTER_NAMES, STRATEGIES
from ..core.analysis.story import outcome
from ..core.counting.tokens import COUNTERS
from .languages import money as format_money
from .panels import answer, changed_inputs, is_htmx, panels, render_panels, state_before
from .story import outcome_text
from .state import PageState, read_state

blueprint = Blueprint("compare", __name__)

CACHE_LABELS = {
    "openai": lazy_gettext("OpenAI automatic caching"),
    "anthropic": lazy_gettext("Anthropic cache breakpoints"),
}


def comparison_for(view: PageState) -> Comparison:
    comparison = compare(view.scenario, view.settings, view.pricing, run=current_app.extensions["replay_cache"].get)
    for key, why in comparison.unavailable.items():
        current_app.logger.warning("summarizer, column %s left out: %s", key, why)
    return comparison


@blueprint.route("/compare/<scenario_id>", endpoint="panel")
def panel_page(scenario_id: str):
    """The full page; for htmx coming from this panel, the panels whose inputs changed (a new
    price leaves the chart); coming from elsewhere, the panel whole."""
    view = read_state(scenario_id, request.args)
    context = panel_context(view)
    if not is_htmx():
        return render_template("compare.html", fragment=False, oob=False, **context)
    before = state_before("compare.panel")
    if before is None:
        body = render_panels("compare.html", ["panel"], fragment=True, oob=False, **context)
        return answer(body + render_panels("compare.html", ["languages"], fragment=True, oob=True, **context), view)
    changed = changed_inputs(before, view)
    blocks = [panel.block for panel in panels("compare.html") if panel.shows(changed)]
    # The settings form sent this request itself: it shows the state, and may be mid-edit.
    if request.headers.get("HX-Trigger") == "compare-controls" and "compare_controls" in blocks:
        blocks.remove("compare_controls")
    response = answer(render_panels("compare.html", blocks, fragment=True, oob=True, **context), view)
    response.headers["HX-Reswap"] = "none"  # every panel goes out of band
    return response


@blueprint.route("/compare/<scenario_id>.json")
def panel_json(scenario_id: str):
    view = read_state(scenario_id, request.args)
    comparison = comparison_for(view)
    data = comparison_json(comparison, view.call)
    data["verdict"]["text"] = verdict_sentences(comparison)
    return jsonify(data)


@blueprint.route("/compare/<scenario_id>.csv")
def panel_csv(scenario_id: str):
    view = read_state(scenario_id, request.args)
    comparison = comparison_for(view)
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
    view = read_state(scenario_id, request.args)
    result = current_app.extensions["replay_cache"].get(view.scenario, view.settings)
    body = request_body(result, result.calls[view.call - 1])
    strategy = view.settings.strategy + ("-keep-facts" if view.settings.keep_facts else "")
    name = f"{view.scenario.id}-{strategy}-call{view.call}-request.json"
    return Response(
        json.dumps(body, ensure_ascii=False, indent=1),
        mimetype="application/json",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


def panel_context(view: PageState) -> dict:
    pricing = view.pricing
    comparison = comparison_for(view)
    lang = str(get_locale())
    title = view.scenario.text("title", lang)
    current = (view.settings.strategy, view.settings.keep_facts)
    verdict = comparison.verdict
    return {
        "view": view,
        "pricing": pricing,
        "comparison": comparison,
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
                "label": column_name(name_of(column)),
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
        "verdict": verdict_sentences(comparison),
        "chart": request_chart(comparison, view.call, name=lambda column: column_name(name_of(column))),
        "cache_models": CACHE_MODELS,
        "cache_labels": CACHE_LABELS,
        "counters": {name: _(COUNTERS[name].label) for name in COUNTER_NAMES},
    }


def verdict_sentences(comparison: Comparison) -> list[str]:
    """The verdict in the reader's language, one sentence (or two) per line."""
    return [
        " ".join(_(message) % fill(values, column_name, format_number, format_money) for message, values in line)
        for line in verdict_notices(comparison)
    ]


def column_name(name: Name) -> str:
    if name.keep_facts:
        return _("%(strategy)s + keep facts", strategy=name.strategy)
    return name.strategy


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
