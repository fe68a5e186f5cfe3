"""The sweep's chart: the bill of each strategy against the line, at one KEEP, unsafe points
marked. Pure data for a server-drawn SVG template, drawn as the comparison's chart is
(`chart.py`): each line its own dash and marker and a label at its end, so it reads without
colour; strategies whose bills are equal at every line share a line and a label.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Callable

from ..analysis.sweep import Sweep, SweepPoint, runs_lower
from .chart import TALL_LABEL_GAP, Plot, Tick, line_look, marker_shape, nice_step, plot_frame, spread_labels, wrap_names


@dataclass(frozen=True)
class Mark:
    point: SweepPoint
    line: float  # the line asked: a product that only lowers its line runs at its own (point.line)
    x: float
    y: float

    @property
    def lowered(self) -> bool:
        return runs_lower(self.point, self.line)


@dataclass(frozen=True)
class BillSeries:
    keys: tuple[str, ...]  # the columns drawn by this line (equal bills at every line)
    names: str
    lines: tuple[str, ...]  # the end label, wrapped
    marks: tuple[Mark, ...]
    dash: str
    marker: str
    style: int
    label_y: float

    @property
    def polyline(self) -> str:
        return " ".join(f"{m.x:.1f},{m.y:.1f}" for m in self.marks)

    def marker_at(self, mark: Mark, size: float = 3.5) -> str:
        """This series' marker at one point; an unsafe point is a cross, whatever the series."""
        return marker_shape(self.marker if mark.point.safe else "cross", mark.x, mark.y, size + (0 if mark.point.safe else 1))

    def swatch(self, x: float, y: float) -> str:
        return marker_shape(self.marker, x, y, 3.5)


@dataclass(frozen=True)
class BillChart(Plot):
    keep: int
    series: tuple[BillSeries, ...]
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    digits: int  # decimals of a tick's dollars: as many as the step needs
    best: Mark | None  # the recommended point, when it is on this chart


def chart_keep(sweep: Sweep) -> int:
    """The KEEP the chart shows: the advice's, so its ring is drawn; without advice the current
    KEEP when it was swept, else the nearest swept."""
    best = sweep.recommendation.best
    if best is not None and best.keep in sweep.keeps:
        return best.keep
    return min(sweep.keeps, key=lambda keep: (abs(keep - sweep.settings.keep), keep))


def bill_chart(
    sweep: Sweep,
    name: Callable[[SweepPoint], str],
    width: int = 780,
    height: int = 340,
    label_width: int = 200,
    tick_label: Callable[[float, int], str] = lambda dollars, digits: f"${dollars:.{digits}f}",
) -> BillChart:
    """The chart of the points at the chart's KEEP, at each line asked: a product that only
    lowers its line is drawn, flat, at the point its own line gives (claude-code's 1% on a
    small window was in the table only); `name` writes a column's name, `tick_label` a tick's
    dollars with so many decimals, as the page does (the plot starts right of the widest)."""
    keep = chart_keep(sweep)
    low, high = sweep.lines[0], sweep.lines[-1]
    groups: dict[tuple, list[list[tuple[float, SweepPoint]]]] = {}
    for key in sweep.keys:
        points = [(line, point) for line in sweep.lines if (point := sweep.at(key, keep, line)) is not None]
        if points:
            groups.setdefault(tuple((round(line, 6), round(p.bill, 9), p.safe) for line, p in points), []).append(points)
    labels = sum(len(wrap_names([name(points[0][1]) for points in group])) for group in groups.values())
    values, digits = bill_ticks([p.bill for group in groups.values() for points in group for _, p in points] or [0.0])
    low_bill, top_bill = values[0], values[-1]
    # Each line of an end label as tall as Chinese glyphs need, whatever the language.
    plot = plot_frame(width, height, label_width, labels, TALL_LABEL_GAP, max(len(tick_label(value, digits)) for value in values))
    left, right, top, bottom = plot.left, plot.right, plot.top, plot.bottom

    def x_of(line: float) -> float:
        return left if high <= low else left + (right - left) * (line - low) / (high - low)

    def y_of(bill: float) -> float:
        return bottom - (bottom - top) * (bill - low_bill) / (top_bill - low_bill)

    series = []
    for style, group in enumerate(groups.values()):
        marks = tuple(Mark(p, line, x_of(line), y_of(p.bill)) for line, p in group[0])
        names = [name(points[0][1]) for points in group]
        series.append(BillSeries(
            keys=tuple(points[0][1].key for points in group),
            names=", ".join(names),
            lines=wrap_names(names),
            marks=marks,
            **line_look(style),
            label_y=marks[-1].y,
        ))
    series = spread_labels(series, top + 4, bottom, TALL_LABEL_GAP)
    best = sweep.recommendation.best
    # Ringed where it is asked for at its own line; a product's point lowered from every line
    # asked, where the chart first draws it.
    rings = [m for s in series for m in s.marks if best is not None and m.point == best]
    best_mark = min(rings, key=lambda m: (m.lowered, m.line), default=None)
    x_ticks = tuple(Tick(x_of(line), line) for line in sweep.lines)
    y_ticks = tuple(Tick(y_of(value), value) for value in values)
    return BillChart(**asdict(plot), keep=keep, series=tuple(series), x_ticks=x_ticks, y_ticks=y_ticks, digits=digits, best=best_mark)


def bill_ticks(bills: list[float]) -> tuple[list[float], int]:
    """The dollars of the bill axis's ticks, from a round value under the cheapest bill (bills
    of one chat differ by a few percent) to one over the dearest, and the decimals they need."""
    step = nice_step(max(max(bills) * 1.04 - min(bills) * 0.96, max(bills) * 0.05, 1e-6) / 5)
    low_bill = step * math.floor(min(bills) * 0.96 / step)
    top_bill = max(step * math.ceil(max(bills) * 1.04 / step), low_bill + step)
    digits = max(2, -math.floor(math.log10(step) + 1e-9) + (1 if round(step / 10 ** math.floor(math.log10(step) + 1e-9), 6) == 2.5 else 0))
    return [low_bill + i * step for i in range(0, round((top_bill - low_bill) / step) + 1)], digits
