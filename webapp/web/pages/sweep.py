"""The sweep page: every strategy over a range of lines and KEEP values, to choose settings.

`sweep_for` is the page's one data function, its replays the server's (`services.replays`, kept
between requests, so a new price replays nothing); `/sweep/<id>` renders it as the full page or,
for htmx, its panels (web/htmx.py); `.json` and `.csv` are the same data. The range is part of
the page state (web/state.py: `line_from`, `line_to`, `line_step`, `keeps`); the settings the
sweep starts from, and weighs its advice against, are the play page's.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable

from flask import Blueprint, current_app, g, request
from flask_babel import format_number
from flask_babel import gettext as _

from ...core.analysis.sweep import STEP_HIGH, Recommendation, Sweep, SweepPoint, SweepRange, parse_keeps, range_problems, runs_lower, sweep
from ...core.analysis.sweep_data import point_row, sweep_json
from ...core.analysis.verdict import Name
from ...core.drawing.sweep_chart import bill_chart
from ...core.settings import KEEP_UNITS
from ..htmx import CameFrom, Fragments, fragment_page
from ..job_queue import Reporter
from ..jobs import StillComputing, computed, job_key
from ..languages import money, percent
from ..limits import runs_as_job
from ..services import replays
from ..state import PRESENTATION_PARAMS, PageState, add_segment_spelling, read_state
from ..state_error import StateError
from ..twins import Table, Twins
from .compare import PHONE_CHART, bill_basis, column_name

blueprint = Blueprint("sweep", __name__)


def sweep_for(view: PageState) -> Sweep:
    """The sweep the URL asks for, or StateError 400 saying what is wrong with its range. A
    long chat's is computed by a job (web/jobs.py): StillComputing until it is done."""
    span = sweep_range(view)
    g.lighter_sweeps = lighter_sweeps(view, span)  # what the page offers if this one is over the budget
    if runs_as_job(len(view.scenario.script)):
        # Its key keeps the prices: a sweep's figures are priced.
        return unpack(computed(compute, job_key("sweep", view, PRESENTATION_PARAMS)), view)
    return swept(view, span)


def sweep_range(view: PageState) -> SweepRange:
    span = SweepRange(view.line_from, view.line_to, view.line_step, parse_keeps(view.keeps))
    problems = range_problems(span)
    if problems:
        raise StateError(400, [_(message) % values for message, values in problems])
    return span


def swept(view: PageState, span: SweepRange, progress: Callable[[int, int], None] | None = None) -> Sweep:
    """The sweep, its replays the server's (`services.replays`, kept between requests, so a
    new price replays nothing)."""
    result = sweep(view.scenario, view.settings, view.pricing, span, replays(), progress=progress)
    for key, why in result.unavailable.items():
        current_app.logger.warning("summarizer, column %s left out of the sweep: %s", key, why)
    return result


def compute(report: Reporter) -> bytes:
    """The job: the sweep of the page this request context is for, packed (`pack`)."""
    view = read_state(request.view_args["scenario_id"], request.args, "sweep.page")
    return pack(swept(view, sweep_range(view), report))


def pack(result: Sweep) -> bytes:
    """A sweep as a job keeps it: its figures, without the chat (every page has it) or the
    comparison at the current settings (its replays: what the advice needed of it is kept)."""
    kept = copy.copy(result)
    kept.scenario, kept.current = None, None
    return pickle.dumps(kept, protocol=pickle.HIGHEST_PROTOCOL)


def unpack(data: bytes, view: PageState) -> Sweep:
    result = pickle.loads(data)
    result.scenario = view.scenario
    return result


def lighter_sweeps(view: PageState, span: SweepRange) -> list[tuple[str, str]]:
    """Links to sweeps of the same chat that compute less: at the current KEEP only, and at
    every other red line, when the range asked has more."""
    links = []
    if len(span.keep_values(view.settings)) > 1:
        links.append((_("Sweep at your KEEP only (%(keep)s)", keep=view.settings.keep), view.url("sweep.page", keeps=str(view.settings.keep))))
    if len(span.lines) > 2 and span.line_step * 2 <= STEP_HIGH:
        links.append((_("Sweep every other red line (a step of %(step)s%%)", step=span.line_step * 2), view.url("sweep.page", line_step=span.line_step * 2)))
    return links


SWEEP = Fragments(
    "sweep.html",
    target="panel",
    form=("sweep-controls", "sweep_controls"),
    from_elsewhere=("panel", "languages"),
    poll="job-progress",
)


@blueprint.route("/sweep/<scenario_id>", endpoint="page")
@fragment_page(SWEEP)
def page(view: PageState, came_from: CameFrom) -> dict:
    return panel_context(view)


add_segment_spelling(blueprint, "sweep")


twins = Twins(blueprint, "/sweep/<scenario_id>", sweep_for)


@twins.json
def page_json(view: PageState, result: Sweep) -> dict:
    data = sweep_json(result)
    data["recommendation"]["text"] = advice(result.recommendation)
    for row, point in zip(data["points"], result.points):
        row["play_url"] = view.url("play.page", settings=point.settings, play=False)
    return data


@twins.csv
def page_csv(view: PageState, result: Sweep) -> Table:
    return Table(f"{view.scenario.id}-sweep.csv", [point_row(point) for point in result.points])


def panel_context(view: PageState) -> dict:
    title = view.scenario.text("title", view.lang)
    shown = {
        "view": view,
        "title": title,
        "page_title": _("Choose your settings") + " · " + title,
        "keeps": sweep_range(view).keep_values(view.settings),
        "keep_unit_words": _(KEEP_UNITS[view.settings.keep_unit]),
    }
    try:
        result = sweep_for(view)
    except StillComputing as still:
        return {**shown, "waiting": still.progress, "poll_url": view.url("sweep.page")}
    return {
        **shown,
        "waiting": None,
        "sweep": result,
        "advice": advice(result.recommendation),
        "bill_basis": bill_basis(view),
        "best": result.recommendation.best,
        "chart": bill_chart(result, point_name, tick_label=money),
        "phone_chart": bill_chart(result, point_name, width=PHONE_CHART[0], height=PHONE_CHART[1], label_width=0, tick_label=money),
        "tables": tables(view, result),
        "money": money,
        "link": lambda point: view.url("play.page", settings=point.settings, play=False),
    }


def point_name(point: SweepPoint) -> str:
    return column_name(Name(point.strategy, point.keep_facts))


def tables(view: PageState, result: Sweep) -> list[dict]:
    """One table per KEEP: a row per strategy, a cell per line asked (None where a column is
    missing). A product that only lowers its line gives its own line's point at every line
    above it: that cell is marked, and the row names the line (no column of its own)."""
    out = []
    for keep in result.keeps:
        rows = []
        for key in result.keys:
            cells = [{"line": line, "point": (point := result.at(key, keep, line)), "lowered": runs_lower(point, line)} for line in result.lines]
            first = next((cell["point"] for cell in cells if cell["point"]), None)
            own = sorted({cell["point"].line for cell in cells if cell["lowered"]})
            rows.append({"name": point_name(first) if first else key, "cells": cells, "own_lines": own})
        out.append({"keep": keep, "lines": result.lines, "rows": rows})
    return out


def advice(recommendation: Recommendation) -> list[str]:
    """The recommendation in the reader's words: the cheapest safe point, the current
    settings, and what to change to get from one to the other."""
    best, current = recommendation.best, recommendation.current
    if best is None:
        return [_("No point of this sweep is safe: at every line and KEEP, each strategy overflows the window, leaves the reply no room, loses a critical fact or sends a request an API would refuse. Raise the window, or widen the range.")]
    lines = [_(
        "Cheapest safe point: %(name)s with the red line at %(line)s (%(tokens)s tokens) and KEEP %(keep)s: %(cost)s for the whole chat, %(sent)s tokens sent.",
        name=point_name(best), line=percent(best.line, 1), tokens=format_number(round(best.settings.limit)), keep=best.keep, cost=money(best.bill), sent=format_number(best.sent),
    )]
    if current is None:
        return lines
    if current.safe:
        lines.append(_("Your settings (%(name)s, red line at %(line)s, KEEP %(keep)s) cost %(cost)s and are safe.", name=point_name(current), line=percent(current.line, 1), keep=current.keep, cost=money(current.bill)))
    else:
        lines.append(_("Your settings (%(name)s, red line at %(line)s, KEEP %(keep)s) cost %(cost)s and are not safe.", name=point_name(current), line=percent(current.line, 1), keep=current.keep, cost=money(current.bill)))
    if not recommendation.changes:
        lines.append(_("Your settings are already the cheapest safe point."))
        return lines
    lines.append(_("To get there, change: %(changes)s.", changes="; ".join(change_words(name, now, then) for name, (now, then) in recommendation.changes.items())))
    if recommendation.saving >= 0:
        lines.append(_("It saves %(cost)s on the whole chat.", cost=money(recommendation.saving)))
    else:
        lines.append(_("It costs %(cost)s more, and it is safe.", cost=money(-recommendation.saving)))
    return lines


def change_words(name: str, now: object, then: object) -> str:
    """One setting to change, in the reader's words: "red line 80% → 75%"."""
    if name == "strategy":
        return _("strategy %(now)s → %(then)s", now=now, then=then)
    if name == "keep_facts":
        return _("keep facts: on") if then else _("keep facts: off")
    if name == "threshold":
        return _("red line %(now)s → %(then)s", now=percent(now, 1), then=percent(then, 1))
    if name == "keep":
        return _("KEEP %(now)s → %(then)s", now=now, then=then)
    label = _("alert line") if name == "alert" else _("target")
    return _("%(what)s %(now)s → off", what=label, now=percent(now, 1))
