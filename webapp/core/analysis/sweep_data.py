"""A sweep as plain data, for the command line, the JSON twin and the CSV download: one flat
row per point (`point_row`) and the whole sweep with its recommendation (`sweep_json`)."""

from __future__ import annotations

from .comparison_data import pricing_json
from .sweep import Recommendation, Sweep, SweepPoint


def point_row(point: SweepPoint) -> dict[str, object]:
    """One point as flat values (one CSV row): where it is, then its figures for the whole chat."""
    return {
        "strategy": point.strategy,
        "family": point.family,
        "keep_facts": point.keep_facts,
        "line": round(point.line, 4),
        "line_tokens": round(point.settings.limit),
        "keep": point.keep,
        "keep_unit": point.settings.keep_unit,
        "bill_usd": round(point.bill, 6),
        "sent_total": point.sent,
        "cached_total": point.cached,
        "compactions": point.compactions,
        "overflows": point.overflows,
        "invalid_requests": point.invalid,
        "no_room_for_reply": point.no_room,
        "facts_lost": point.facts_lost,
        "safe": point.safe,
    }


def recommendation_json(recommendation: Recommendation) -> dict[str, object]:
    """The cheapest safe point and the current one, what the first saves on the second, and
    each setting that differs (name: [now, advised])."""
    best, current = recommendation.best, recommendation.current
    return {
        "best": {"key": best.key, **point_row(best)} if best else None,
        "current": {"key": current.key, **point_row(current)} if current else None,
        "saving_usd": None if recommendation.saving is None else round(recommendation.saving, 6),
        "changes": {name: list(values) for name, values in recommendation.changes.items()},
    }


def sweep_json(sweep: Sweep) -> dict[str, object]:
    """The whole sweep: the scenario, the settings it starts from, the range, every point,
    and the recommendation."""
    return {
        "scenario": sweep.scenario.id,
        "title": sweep.scenario.text("title"),
        "settings": sweep.settings.model_dump(),
        "pricing": pricing_json(sweep.pricing),
        "range": {
            "line_from": sweep.span.line_from,
            "line_to": sweep.span.line_to,
            "line_step": sweep.span.line_step,
            "lines": sweep.lines,
            "keeps": sweep.keeps,
        },
        "points": [{"key": point.key, **point_row(point)} for point in sweep.points],
        # Columns left out because the summarizer failed (why is in the server's log).
        "unavailable": sorted(sweep.unavailable),
        "recommendation": recommendation_json(sweep.recommendation),
    }
