"""The comparison page: every strategy on the same chat, at the play page's call and settings.

`comparison_for` is the page's one data function; `/compare/<id>` renders it as the full page
or, for htmx, its panels (web/htmx.py); `.json` and `.csv` are the same data. The URL is the
page state of webapp/web/state.py, which also holds the bill's parameters (`cache`,
`cached_share`, `output_price` and the play page's `price`).
"""

from __future__ import annotations

from flask import Blueprint, current_app, request
from flask_babel import format_number, get_locale
from flask_babel import gettext as _
from flask_babel import lazy_gettext, ngettext

from ...core.analysis.cache import CACHE_MODELS
from ...core.analysis.compare import Column, Comparison, compare, variants
from ...core.analysis.comparison_data import comparison_json, recorded_row, summary_row
from ...core.analysis.verdict import Name, Notice, fill, name_of, verdict_faults, verdict_head, verdict_notices
from ...core.analysis.pricing import Bill, Pricing
from ...core.output.serialize import billing_json
from ...core.analysis.story import outcome
from ...core.drawing.chart import request_chart, small_well
from ..htmx import CameFrom, Fragments, fragment_page
from ..languages import counter_labels, strategy_descriptions
from ..languages import money as format_money
from ..job_queue import Reporter
from ..jobs import StillComputing, computed, job_key
from ..limits import runs_as_job
from ..services import replays
from ..state import PRESENTATION_PARAMS, PRICING_PARAMS, PageState, add_segment_spelling, read_state
from ..story import joined, outcome_text
from ..twins import Table, Twins
from ...core.engine.remote_summarizer import SummarizerError
from ...core.engine.replays import pack_replays, unpack_replays
from ...core.engine.pitfalls import TRIGGER_MESSAGES, TRIGGER_TOO_LOW
from ...core.settings import Settings
from ...core.engine.strategy_catalog import PANEL, STRATEGIES, harness_writing

blueprint = Blueprint("compare", __name__)

# The chart drawn for a phone, in CSS pixels: as wide as a 390 px screen's content, so its text
# keeps about its size; its lines are named by a legend under it.
PHONE_CHART = (360, 300)

CACHE_LABELS = {
    "openai": lazy_gettext("OpenAI automatic caching"),
    "anthropic": lazy_gettext("Anthropic cache breakpoints"),
}


def comparison_for(view: PageState) -> Comparison:
    """The comparison the URL asks for. A long chat's replays are made by a job (web/jobs.py):
    StillComputing until it is done, then kept in this process's replays like its own."""
    if runs_as_job(len(view.scenario.script)) and not all(replays().has(view.scenario, variant) for variant in column_settings(view)):
        for made in unpack_replays(computed(compute, job_key("compare", view, NOT_REPLAYED)), view.scenario):
            replays().adopt(view.scenario, made)
    comparison = compare(view.scenario, view.settings, view.pricing, run=replays().get)
    for key, why in comparison.unavailable.items():
        current_app.logger.warning("summarizer, column %s left out: %s", key, why)
    return comparison


def column_settings(view: PageState) -> list[Settings]:
    return variants(view.settings, view.scenario.settings)


def compute(report: Reporter) -> bytes:
    """The job: every column's replay of the page this request context is for, packed."""
    view = read_state(request.view_args["scenario_id"], request.args, "compare.page")
    wanted = column_settings(view)
    made = []
    for done, variant in enumerate(wanted, start=1):
        try:
            made.append(replays().get(view.scenario, variant))
        except SummarizerError:  # the page leaves the column out, as it does computing it itself
            pass
        report(done, len(wanted))
    return pack_replays(made)


COMPARE = Fragments(
    "compare.html",
    target="panel",
    form=("compare-controls", "compare_controls"),
    # From another page, the panel whole, and the language picker that names this page.
    from_elsewhere=("panel", "languages"),
    poll="job-progress",
)
# What the comparison's job leaves out of its key: how the page is shown, and the prices,
# which change no request (a new price needs no new replays).
NOT_REPLAYED = (*PRESENTATION_PARAMS, *PRICING_PARAMS)


@blueprint.route("/compare/<scenario_id>", endpoint="page")
@fragment_page(COMPARE)
def page(view: PageState, came_from: CameFrom) -> dict:
    """The full page; for htmx from this page, the panels whose inputs changed (a new price
    leaves the chart), every one out of band; from elsewhere, the panel whole."""
    return panel_context(view)


add_segment_spelling(blueprint, "compare")


twins = Twins(blueprint, "/compare/<scenario_id>", comparison_for)


@twins.json
def page_json(view: PageState, comparison: Comparison) -> dict:
    data = comparison_json(comparison, view.call)
    data["verdict"]["text"] = verdict_sentences(comparison)
    data["billing"] = billing_json(view.scenario, view.pricing, _)
    return data


@twins.csv
def page_csv(view: PageState, comparison: Comparison) -> Table:
    rows = [summary_row(column, view.call) for column in comparison.columns]
    rows += [recorded_row(comparison.recorded, view.call)] if comparison.recorded else []
    return Table(f"{view.scenario.id}-compare-call{view.call}.csv", rows)


def line_share(settings: Settings) -> float:
    """A card's line as a share of the window: the red line's share of the window set, or,
    under a server that runs the model at a context of its own (Ollama's num_ctx), of that
    context, the window the card's request shares are of (51% of 8,000 sat above 75% of 4,096)."""
    if settings.real_window != settings.own_window:
        return settings.limit / settings.real_window
    return settings.effective_threshold


def panel_context(view: PageState) -> dict:
    """What the panel shows; long because it names, in one place, every value the template
    reads. While a long chat's replays are made by a job, its progress instead."""
    pricing = view.pricing
    lang = str(get_locale())
    title = view.scenario.text("title", lang)
    try:
        comparison = comparison_for(view)
    except StillComputing as still:
        return {"view": view, "title": title, "call": view.call, "page_title": _("Compare strategies") + " · " + title,
                "waiting": still.progress, "job_kind": "compare", "poll_url": view.url("compare.page")}
    current = (view.settings.strategy, view.settings.keep_facts)
    verdict = comparison.verdict
    descriptions = strategy_descriptions()
    columns = [
        {
            "family": column.family,
            "line": {"share": line_share(column.settings), "tokens": round(column.settings.limit), "own": round(column.settings.limit) != round(comparison.settings.limit)},
            "pitfalls": pitfall_lines(column),
            "refusals": refusals(column),
            "column": column,
            "label": column_name(name_of(column)),
            "about": descriptions.get(column.strategy, ""),
            "product": STRATEGIES[column.strategy].product,
            "did": outcome_text(outcome(column.result), str(get_locale())),
            "current": (column.strategy, column.keep_facts) == current,
            "winner": column.key == verdict.winner,
            "well": small_well(comparison, column, view.call),
            "row": summary_row(column, view.call),
            "at": column.call(view.call),
            "hit": column.hits[view.call - 1],
            "money": money(column.bill, pricing),
        }
        for column in comparison.columns
    ]
    by_key = {c["column"].key: c for c in columns}
    return {
        "view": view,
        "waiting": None,
        "pricing": pricing,
        "bill_basis": bill_basis(view),
        "comparison": comparison,
        "call": view.call,
        "title": title,
        "page_title": _("Compare strategies")
        + " · "
        + _("Call %(call)s of %(calls)s", call=view.call, calls=comparison.call_count)
        + " · "
        + title,
        "families": FAMILIES,
        "columns": columns,
        "glance": [by_key[key] for key in glance_keys(comparison)],
        "recorded": {"column": comparison.recorded, "money": money(comparison.recorded.bill, pricing)} if comparison.recorded else None,
        "verdict": sentences(verdict_head(comparison)),
        "verdict_why": sentences(verdict_faults(comparison)),
        "chart": request_chart(comparison, view.call, name=chart_name, recorded_name=_("as recorded")),
        "phone_chart": request_chart(
            comparison, view.call, width=PHONE_CHART[0], height=PHONE_CHART[1], label_width=0, name=chart_name, recorded_name=_("as recorded")
        ),
        "cache_models": CACHE_MODELS,
        "cache_labels": CACHE_LABELS,
        "counters": counter_labels(),
    }


def glance_keys(comparison: Comparison) -> list[str]:
    """The columns the page opens on: the mission's panel (truncate, drop, summarize), the
    harness that wrote the session when it names one, and the verdict's pick."""
    origin = comparison.scenario.origin
    keys = [*PANEL, harness_writing(origin.format) if origin else None, comparison.verdict.winner]
    present = {column.key for column in comparison.columns}
    return [key for key in dict.fromkeys(keys) if key in present]


def chart_name(column: Column) -> str:
    return column_name(name_of(column))


FAMILIES = (
    ("textbook", lazy_gettext("The textbook strategies, at the same window, line and KEEP")),
    ("harness", lazy_gettext("As the production harnesses do it, each at its own defaults")),
)


def pitfall_lines(column: Column) -> list[str]:
    """A harness column's pitfalls (core/engine/pitfalls.py) in the reader's words: what its
    product does with this line, then each trap it fell into, with the numbers."""
    lines = [_(message) % {name: format_number(value) for name, value in values.items()} for message, values in column.result.notices if message in TRIGGER_MESSAGES]
    loops = column.pitfalls("loop")
    if loops:
        first = loops[0]
        lines.append(_(
            "Compacts and stays above its line at %(count)s calls, from call %(call)s: the floor (%(floor)s) and what it keeps (%(kept)s) pass the line (%(line)s).",
            count=len(loops), call=first["call"], floor=format_number(first["floor"]), kept=format_number(first["kept"]), line=format_number(first["line"]),
        ))
    # The compactions that grew the request first: "the least" saving of the others is then not
    # read as the least of all (claude-code's "least: 3% at call 3" beside growth at call 2).
    grew = column.pitfalls("grew")
    if grew:
        lines.append(ngettext(
            "%(num)d compaction made the request bigger (by %(tokens)s tokens at call %(call)s).",
            "%(num)d compactions made the request bigger (by up to %(tokens)s tokens, at call %(call)s).",
            len(grew), tokens=format_number(max(pitfall["grew"] for pitfall in grew)), call=max(grew, key=lambda pitfall: pitfall["grew"])["call"],
        ))
    small = column.pitfalls("small")
    if small:
        least = min(small, key=lambda pitfall: pitfall["percent"])
        values = {"percent": format_number(least["percent"]), "call": least["call"]}
        if grew:
            lines.append(ngettext(
                "%(num)d other compaction saved under 10%% (%(percent)s%% at call %(call)s).",
                "%(num)d other compactions saved under 10%% (the least: %(percent)s%% at call %(call)s).",
                len(small), **values,
            ))
        else:
            lines.append(ngettext(
                "%(num)d compaction saved under 10%% (%(percent)s%% at call %(call)s).",
                "%(num)d compactions saved under 10%% (the least: %(percent)s%% at call %(call)s).",
                len(small), **values,
            ))
    cache = column.pitfalls("cache")
    if cache:
        lines.append(_(
            "Its summaries sat before %(tokens)s tokens of unchanged messages: the prompt cache wrote them again.",
            tokens=format_number(sum(pitfall["tokens"] for pitfall in cache)),
        ))
    if column.pitfalls("refused"):
        lines.append(_("the summary was no smaller than the history: refused, and from now on only old tool output is cut"))
    return lines


def refusals(column: Column) -> list[str]:
    """Why an API would refuse some of a column's requests, in the reader's words; [] when it
    takes them all. A trigger its API refuses and a request too long for the window are refusals
    too: "API validity ✓" sat beside "the request would be rejected" and beside overflows."""
    said = [
        _("every request refused: the API takes no trigger under %(minimum)s tokens (the figures here are as if it took them)", minimum=format_number(values["minimum"]))
        for message, values in column.result.notices
        if message == TRIGGER_TOO_LOW
    ]
    if column.overflows:
        said.append(ngettext(
            "%(num)d refused as too long, from call %(call)s", "%(num)d refused as too long, from call %(call)s",
            column.overflows, call=column.overflow_calls[0],
        ))
    if column.invalid:
        said.append(ngettext(
            "%(num)d request refused, from call %(call)s", "%(num)d requests refused, from call %(call)s", len(column.invalid), call=min(column.invalid),
        ))
    return said


def verdict_sentences(comparison: Comparison) -> list[str]:
    """The verdict in the reader's language, one sentence (or two) per line."""
    return sentences(verdict_notices(comparison))


def sentences(lines: list[list[Notice]]) -> list[str]:
    return [" ".join(_(message) % fill(in_language(values), column_name, format_number, format_money) for message, values in line) for line in lines]


def in_language(values: dict[str, object]) -> dict[str, object]:
    """A notice's values with a lost fact's label in the reader's language (the verdict named it
    in English on the Chinese page)."""
    fact = values.get("fact")
    if fact is None:
        return values
    return {**values, "label": fact.label_in(str(get_locale())) or values["label"]}


def column_name(name: Name) -> str:
    if name.keep_facts:
        return _("%(strategy)s + keep facts", strategy=name.strategy)
    return name.strategy


def bill_basis(view: PageState) -> str:
    """What every bill of a comparison or a sweep counts, said on the page beside them: the
    prices, the prompt cache and what a cached (and a written) token costs; for a session, whose
    prices these are. The sweep said nothing of it, the comparison only in its closed settings."""
    pricing = view.pricing
    values = {
        "input": format_money(pricing.price, 2),
        "output": format_money(pricing.output_price, 2),
        "cache": CACHE_LABELS[pricing.cache],
        "share": format_number(pricing.share),
        "written": format_number(pricing.model.write_share),
    }
    if pricing.model.write_share == 1:
        said = _("Every bill on this page: %(input)s per million input tokens, %(output)s per million output tokens (the summaries). Prompt cache: %(cache)s; a cached token costs %(share)s of the price.", **values)
    else:
        said = _("Every bill on this page: %(input)s per million input tokens, %(output)s per million output tokens (the summaries). Prompt cache: %(cache)s; a cached token costs %(share)s of the price, a token written to the cache %(written)s.", **values)
    if view.scenario.origin is None:  # a scenario of the library keeps the playground's prices
        return said
    return joined([said, billing_json(view.scenario, pricing, _)["says"]], str(get_locale()))


def money(bill: Bill, pricing: Pricing) -> dict[str, float]:
    """A column's bill in dollars, part by part; the parts add up to its cost."""
    per_token = pricing.price / 1_000_000
    parts = {
        "uncached": bill.uncached * per_token,
        "cached": bill.cached * per_token * pricing.share,
        "written": bill.written * per_token * pricing.model.write_share,
        "output": bill.output * pricing.output_price / 1_000_000,
    }
    parts["total"] = bill.cost
    return parts
