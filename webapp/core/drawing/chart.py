"""The comparison chart's geometry: request size per call for every strategy, against the
red line and the window. Pure data for a server-drawn SVG template.

Readable without colour: each line has its own dash pattern and point marker, and is named by
a label at its end; strategies that send exactly the same requests share one line and one
label. The template puts the same figures in a table for screen readers.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Callable

from ..analysis.as_recorded import KEY
from ..analysis.compare import Column, Comparison
from ..analysis.verdict import label
from .well_parts import block_kind
from .well_scale import HEADROOM

# Dash patterns (SVG stroke-dasharray) and marker shapes, in the order lines are drawn.
DASHES = ("", "8 4", "2 3", "10 3 2 3", "4 4", "12 4 2 4 2 4", "1 5")
MARKERS = ("circle", "square", "triangle", "diamond", "cross", "bar", "plus")


COLOURS = 12  # the colour classes chart-series--0 to --11 (static/compare.css)


def line_look(index: int) -> dict[str, object]:
    """The `index`-th line's dash, marker and colour class. Past the seventh line the markers
    shift by one, so every line's pair of dash and marker stays its own; the colours run on to
    twelve, so that the sweep's ten or more lines do not share one by seven (a reader matched
    drop's green label to claude-code's green line)."""
    return {
        "dash": DASHES[index % len(DASHES)],
        "marker": MARKERS[(index + index // len(DASHES)) % len(MARKERS)],
        "style": index % COLOURS,
    }


LABEL_GAP = 13  # height of one line of an end label, in pixels
TALL_LABEL_GAP = 16  # Chinese glyphs stand taller than 13 px allow (the sweep's chart, sweep_chart.py, too)
RULE_LABEL = 16  # the height a rule's label needs beside another rule's
LABEL_CHARS = 24  # longest line of an end label; longer lists of names wrap
UNLABELLED_MARGIN = 14  # right of the plot of a chart without end labels (its legend names the lines)
AXIS_TITLE_LANE = 24.0  # the rotated axis title, 12 px type centred 14 px from the left edge
TICK_GAP = 8.0  # between a tick's label and the plot
TICK_CHAR = 7.5  # the width of one character of a 12 px tick label, a digit or a separator, with room to spare
PLOT_TOP = 16.0  # above the plot
PLOT_BELOW = 36.0  # under the plot: the x axis's ticks and title


@dataclass(frozen=True)
class Point:
    call: int
    tokens: int
    x: float
    y: float
    overflow: bool  # the provider rejects this request


@dataclass(frozen=True)
class Series:
    keys: tuple[str, ...]  # the columns drawn by this line (identical requests)
    names: str  # their labels, for the end label and the table
    lines: tuple[str, ...]  # the end label, wrapped
    points: tuple[Point, ...]
    dash: str
    marker: str
    style: int  # index into DASHES/MARKERS, for the CSS class of its colour
    label_y: float

    @property
    def polyline(self) -> str:
        return " ".join(f"{p.x:.1f},{p.y:.1f}" for p in self.points)

    def marker_path(self, size: float = 3.5) -> str:
        """One SVG path drawing this series' marker at every point."""
        return " ".join(marker_shape(self.marker, p.x, p.y, size) for p in self.points)

    def marker_path_at(self, x: float, y: float, size: float = 3.5) -> str:
        """This series' marker once, at (x, y): its swatch in a legend."""
        return marker_shape(self.marker, x, y, size)


@dataclass(frozen=True)
class Rule:
    y: float
    tokens: float
    kind: str  # "window" (the model's real window) or "line" (where compaction starts)
    above: bool = False  # beyond the top of the chart, drawn at its edge
    under: bool = False  # its label under it: another rule is just above (a line at 98% of the window)

    @property
    def label_y(self) -> float:
        return self.y + 14 if self.above or self.under else self.y - 5


@dataclass(frozen=True)
class Tick:
    """A mark on an axis: where it is drawn, and the value it is labelled with (tokens or a
    call number here, dollars or a line on the sweep's chart)."""

    at: float
    value: float


@dataclass(frozen=True)
class Plot:
    """A chart's size and its plot's edges, in pixels (the comparison's chart and the sweep's)."""

    width: int
    height: int
    left: float
    right: float
    top: float
    bottom: float

    @property
    def labelled(self) -> bool:
        """Whether each line has its label at its end (else a legend names them)."""
        return self.width - self.right > UNLABELLED_MARGIN


def plot_frame(width: int, height: int, label_width: int, label_lines: int, gap: float, widest_tick: int) -> Plot:
    """A chart `width` wide and at least `height` tall, taller when its `label_lines` lines of
    end labels (`gap` apart) need it. Left of the plot, the rotated axis title's lane, then the
    widest tick label (`widest_tick` characters: "20,000" and "0,045 $US" ran under the title
    when the plot started at a fixed place); right of it, the end labels' `label_width`."""
    height = max(height, round(PLOT_TOP + 4 + gap * label_lines + PLOT_BELOW))
    left = AXIS_TITLE_LANE + TICK_GAP + TICK_CHAR * widest_tick
    return Plot(width, height, left, width - max(label_width, UNLABELLED_MARGIN), PLOT_TOP, height - PLOT_BELOW)


@dataclass(frozen=True)
class Chart(Plot):
    series: tuple[Series, ...]
    rules: tuple[Rule, ...]
    y_ticks: tuple[Tick, ...]
    x_ticks: tuple[Tick, ...]
    current_x: float
    call: int
    top_tokens: int
    # What the session recorded (analysis/as_recorded.py), a point at each call that recorded a figure.
    recorded: Series | None = None
    label_gap: float = LABEL_GAP  # from one line of an end label to the next

    @property
    def drawn(self) -> tuple[Series, ...]:
        """Every line drawn: the strategies', then what the session recorded."""
        return self.series + ((self.recorded,) if self.recorded else ())

    def recorded_at(self, number: int) -> Point | None:
        return next((p for p in self.recorded.points if p.call == number), None) if self.recorded else None


def request_chart(
    comparison: Comparison,
    call: int,
    width: int = 780,
    height: int = 340,
    label_width: int = 200,
    name: Callable[[Column], str] = label,
    recorded_name: str = KEY,
) -> Chart:
    """The chart at `call`; `name` writes a column's name in the end labels and the table (the
    web passes its translated names, and `recorded_name` for what the session recorded; the
    defaults are the English ones). With `label_width` 0 the lines have no end labels, for a
    narrow chart whose legend names them."""
    settings = comparison.settings
    groups = _identical(comparison.columns)
    recorded = comparison.recorded
    # Every end label has its own place: the chart grows when they need more than its height.
    names = [name(c) for group in groups for c in group] + ([recorded_name] if recorded else [])
    gap = TALL_LABEL_GAP if any(ord(char) >= 0x2E80 for each in names for char in each) else LABEL_GAP
    labels = sum(len(wrap_names([name(c) for c in group])) for group in groups) + (1 if recorded else 0)
    peak = max([column.peak_tokens for column in comparison.columns] + [recorded.peak_tokens if recorded else 0])
    top_tokens = nice_top(max(peak, settings.own_window) * 1.08)
    plot = plot_frame(width, height, label_width, labels, gap, len(f"{top_tokens:,}"))
    left, right, top, bottom = plot.left, plot.right, plot.top, plot.bottom
    count = comparison.call_count

    def x_of(number: int) -> float:
        return left if count <= 1 else left + (right - left) * (number - 1) / (count - 1)

    def y_of(tokens: float) -> float:
        return bottom - (bottom - top) * tokens / top_tokens

    lines = [
        (tuple(column.key for column in group), [name(column) for column in group], [(c.number, c.tokens, c.overflow) for c in group[0].calls])
        for group in groups
    ]
    if recorded:
        lines.append(((KEY,), [recorded_name], [(c.number, c.tokens, c.overflow) for c in recorded.calls if c.tokens is not None]))
    series = []
    for style, (keys, names, figures) in enumerate(lines):
        points = tuple(Point(number, tokens, x_of(number), y_of(tokens), overflow) for number, tokens, overflow in figures)
        series.append(_series(style, keys, names, points, bottom))
    series = spread_labels(series, top + 4, bottom, gap)
    recorded_series = series.pop() if recorded else None
    rules = _rules(*(Rule(max(top, y_of(tokens)), tokens, kind, tokens > top_tokens) for tokens, kind in ((settings.own_window, "window"), (settings.limit, "line"))))
    step = token_step(top_tokens / 5)
    y_ticks = tuple(Tick(y_of(value), value) for value in range(0, top_tokens + 1, step))
    call_step = max(1, -(-count // 12))
    # Every call_step-th call, and the last one, unless a regular tick is too close to it.
    x_ticks = tuple(
        Tick(x_of(number), number)
        for number in range(1, count + 1)
        if number == count or ((number - 1) % call_step == 0 and count - number > call_step / 2)
    )
    return Chart(**asdict(plot), series=tuple(series), rules=rules, y_ticks=y_ticks, x_ticks=x_ticks, current_x=x_of(call), call=call,
                 top_tokens=top_tokens, recorded=recorded_series, label_gap=gap)


def _rules(window: Rule, line: Rule) -> tuple[Rule, Rule]:
    """The window's rule and the line's, a line drawn for a window larger than the model's
    maybe far above every request (at the chart's top). Two rules closer than a label's height
    (a line at 98% of the window): the lower one's label goes under it, or the two labels
    would be drawn one over the other."""
    if 0 <= line.y - window.y < RULE_LABEL and not line.above:
        line = replace(line, under=True)
    elif 0 < window.y - line.y < RULE_LABEL:
        window = replace(window, under=True)
    return window, line


def _series(style: int, keys: tuple[str, ...], names: list[str], points: tuple[Point, ...], bottom: float) -> Series:
    """The `style`-th line: its dash and marker, its end label at its last point."""
    return Series(
        keys=keys,
        names=", ".join(names),
        lines=wrap_names(names),
        points=points,
        **line_look(style),
        label_y=points[-1].y if points else bottom,
    )


def _identical(columns: list[Column]) -> list[list[Column]]:
    groups: list[list[Column]] = []
    for column in columns:
        sizes = [call.tokens for call in column.calls]
        for group in groups:
            if [call.tokens for call in group[0].calls] == sizes:
                group.append(column)
                break
        else:
            groups.append([column])
    return groups


def spread_labels(series: list[Series], top: float, bottom: float, gap: float = LABEL_GAP) -> list[Series]:
    """Move end labels apart so none overlaps, keeping their order from top to bottom; `gap`
    is the height of one line of a label."""
    order = sorted(range(len(series)), key=lambda i: series[i].label_y)
    ys = [series[i].label_y for i in order]
    heights = [gap * len(series[i].lines) for i in order]  # a label spans its lines
    for k in range(1, len(ys)):
        ys[k] = max(ys[k], ys[k - 1] + heights[k - 1])
    overflow = ys[-1] + heights[-1] - gap - bottom if ys else 0
    if overflow > 0:
        ys[-1] -= overflow
        for k in range(len(ys) - 2, -1, -1):
            ys[k] = min(ys[k], ys[k + 1] - heights[k])
    ys = [max(y, top) for y in ys]
    placed = list(series)
    for i, y in zip(order, ys):
        placed[i] = replace(series[i], label_y=y)
    return placed


def wrap_names(names: list[str]) -> tuple[str, ...]:
    """Names joined by commas, in lines of at most LABEL_CHARS characters where possible."""
    lines: list[str] = []
    for name in names:
        if lines and len(lines[-1]) + 2 + len(name) <= LABEL_CHARS:
            lines[-1] += ", " + name
        else:
            if lines:
                lines[-1] += ","
            lines.append(name)
    return tuple(lines)


def nice_step(raw: float) -> float:
    """The round step (1, 2, 2.5 or 5 times a power of ten) at or just above `raw`."""
    magnitude = 10 ** math.floor(math.log10(raw))
    return next(factor * magnitude for factor in (1, 2, 2.5, 5, 10) if raw <= factor * magnitude * (1 + 1e-9))


def token_step(raw: float) -> int:
    """`nice_step` as a whole number of tokens, at least 1 (a step of 2.5 tokens is 2)."""
    return max(1, int(nice_step(raw)))


def nice_top(value: float) -> int:
    step = token_step(value / 5)
    return int(-(-value // step) * step)


def marker_shape(shape: str, x: float, y: float, r: float) -> str:
    if shape == "circle":
        return f"M{x - r:.1f},{y:.1f}a{r},{r} 0 1,0 {2 * r},0a{r},{r} 0 1,0 {-2 * r},0Z"
    if shape == "square":
        return f"M{x - r:.1f},{y - r:.1f}h{2 * r}v{2 * r}h{-2 * r}Z"
    if shape == "triangle":
        return f"M{x:.1f},{y - r - 1:.1f}l{r + 1},{2 * r + 1}h{-2 * r - 2}Z"
    if shape == "diamond":
        return f"M{x:.1f},{y - r - 1:.1f}l{r + 1},{r + 1}l{-r - 1},{r + 1}l{-r - 1},{-r - 1}Z"
    if shape == "cross":
        return f"M{x - r:.1f},{y - r:.1f}l{2 * r},{2 * r}M{x + r:.1f},{y - r:.1f}l{-2 * r},{2 * r}"
    if shape == "bar":
        return f"M{x - r - 1:.1f},{y - 1.5:.1f}h{2 * r + 2}v3h{-2 * r - 2}Z"
    return f"M{x - r - 1:.1f},{y:.1f}h{2 * r + 2}M{x:.1f},{y - r - 1:.1f}v{2 * r + 2}"


@dataclass(frozen=True)
class Brick:
    """One message of a small well: its kind (floor, user, assistant, tool, summary), its
    state (original, truncated, summary) and where it is drawn."""

    id: str
    kind: str
    state: str
    tokens: float
    y: float
    height: float


@dataclass(frozen=True)
class SmallWell:
    width: int
    height: int
    rim_y: float  # the model's real window
    line_y: float  # the red line, at the top of the picture when it is above it
    bottom_y: float
    top_y: float  # the top of the picture: a stack that reaches it is cut there
    bricks: tuple[Brick, ...]
    overflow: bool
    cut: bool  # the request is taller than the picture


def small_well(comparison: Comparison, column: Column, call: int, width: int = 56, height: int = 150) -> SmallWell:
    """The request of `column` at `call` as a stack of bricks, floor first, on a scale shared by
    every column (the window plus room for overflows), so that wells side by side compare at
    a glance. Bricks above the top of the picture are cut at it."""
    settings = comparison.settings
    peak = max((c.peak_tokens for c in comparison.columns), default=0)
    window = settings.own_window
    scale_top = min(max(window, peak), window * (1 + HEADROOM))
    top, bottom = 4.0, float(height - 2)

    def size(tokens: float) -> float:
        return (bottom - top) * tokens / scale_top

    result = column.result
    at = column.call(call)
    bricks = []
    y = bottom
    parts = [("floor", "floor", "floor", result.floor_at(at.number))]
    parts += [(b.id, block_kind(b), b.state, result.block_tokens(b)) for b in at.blocks]
    for brick_id, kind, state, tokens in parts:
        h = size(tokens)
        y -= h
        if y + h > top:  # at least partly inside the picture
            bricks.append(Brick(brick_id, kind, state, tokens, max(y, top), h - max(0.0, top - y)))
    return SmallWell(
        width=width,
        height=height,
        rim_y=bottom - size(window),
        line_y=max(top, bottom - size(settings.limit)),
        bottom_y=bottom,
        top_y=top,
        bricks=tuple(bricks),
        overflow=at.overflow,
        cut=y < top,
    )
