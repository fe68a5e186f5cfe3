"""How tokens become pixels in the well: the scale, fixed for the whole replay; a stack of
blocks at a scale; the levels marked on the axis; and the zoomed view, which draws a stack that
is a sliver of the window again on a scale of its own.
"""

from __future__ import annotations

import math

from ..engine.history import Block
from ..engine.calls import Replay, per_replay
from ..settings import Settings
from .well_parts import BOTTOM, NORMAL, TOP, Mark, Shape, Size, Trace, Zoom

# At most this share of the window is drawn above the rim: enough to see an overflow, not so
# much that one runaway request shrinks the window to a sliver. The comparison's small wells
# (core/drawing/chart.py) use the same.
HEADROOM = 0.6
# A stack under this share of what the well draws gets a zoomed view beside the true one.
ZOOM_BELOW = 0.25
NICE_STEPS = (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10)


@per_replay
def _above(replay: Replay) -> float:
    """Tokens drawn above the rim, for the whole replay: the tallest request's excess (before or
    after compaction), at most HEADROOM of the window."""
    window = replay.settings.window
    tallest = max(
        [call.tokens for call in replay.calls]
        + [call.compaction.tokens_before for call in replay.calls if call.compaction],
        default=0,
    )
    return min(max(tallest - window, 0), window * HEADROOM)


def scale_of(replay: Replay, size: Size = NORMAL) -> tuple[float, float]:
    """(pixels per token, headroom in pixels above the rim), fixed for the whole replay: the
    window and its headroom fill the drawing's height below the top band."""
    above = _above(replay)
    scale = (size.height - TOP - BOTTOM) / (replay.settings.window + above)
    return scale, above * scale


def stack(blocks: list[Block], replay: Replay, bottom: float, scale: float, floor: float) -> dict[str, tuple[float, float]]:
    """id -> (y, height) of blocks stacked on a floor of `floor` tokens."""
    top = bottom - floor * scale
    out = {}
    for block in blocks:
        height = replay.block_tokens(block) * scale
        top -= height
        out[block.id] = (top, height)
    return out


def manual_lines(settings: Settings) -> dict[str, float]:
    """The manual's other two lines, when set, in tokens: the alert (a warning only) and the
    target compaction aims below."""
    return {kind: settings.window * share for kind, share in (("alert", settings.alert), ("target", settings.target)) if share}


def axis_marks(settings: Settings, rim_y: float, threshold_y: float, real_rim_y: float | None, bottom_y: float, scale: float) -> list[Mark]:
    """The true well's levels, labelled on the axis: the rim, the red line, the bottom, the
    model's real window (when the compactor was told another) and the manual's lines."""
    marks = [Mark("window", settings.window, rim_y), Mark("line", settings.limit, threshold_y), Mark("zero", 0, bottom_y)]
    if real_rim_y is not None and settings.real_window != settings.limit:  # Ollama's num_ctx is both: one label
        marks.append(Mark("model", settings.real_window, real_rim_y))
    marks += [Mark(kind, tokens, bottom_y - tokens * scale) for kind, tokens in manual_lines(settings).items()]
    return marks


def nice_ceiling(value: float) -> float:
    """The smallest round number (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 times a power of ten) at
    least `value`: the zoomed view's top, so its scale changes seldom and reads well."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    return next(step * power for step in NICE_STEPS if step * power >= value * (1 - 1e-12))


def zoom_range(stack: float, drawn: float, levels: list[float]) -> float | None:
    """The tokens a zoomed view spans, or None when the stack is tall enough to read as it is
    (ZOOM_BELOW of what the well draws). A level (the model's real window, the red line) up to
    twice the stack's height is kept in view, so the zoom shows what the stack is about to meet."""
    if stack >= ZOOM_BELOW * drawn:
        return None
    near = [level for level in levels if level <= 2 * stack]
    return nice_ceiling(1.2 * max([stack, *near]))


def zoom_view(
    replay: Replay, number: int, shapes: list[Shape], traces: list[Trace], scale: float, bottom_y: float, size: Size
) -> tuple[Zoom | None, float]:
    """The zoomed view, when the stack needs one, and the scale of the view that carries the
    labels (the zoom's, else the true well's). The same stack, on a scale where its top sits
    just under the top band: each shape and trace gets its place in it."""
    settings = replay.settings
    blocks, floor = list(replay.calls[number - 1].blocks), replay.floor_at(number)
    stack_tokens = floor + sum(replay.block_tokens(block) for block in blocks)
    levels = {"model": settings.real_window, "line": settings.limit, "window": settings.window, **manual_lines(settings)}
    spans = zoom_range(stack_tokens, settings.window + _above(replay), list(levels.values()))
    if spans is None:
        return None, scale
    true_top = min((s.y for s in shapes), default=bottom_y)
    zoom_top = TOP + size.label_gap
    label_scale = (bottom_y - zoom_top) / spans
    zoomed = stack(blocks, replay, bottom_y, label_scale, floor)
    shapes[0].zoom_y, shapes[0].zoom_height = bottom_y - floor * label_scale, floor * label_scale
    for shape in shapes[1:]:
        shape.zoom_y, shape.zoom_height = zoomed[shape.id]
    for trace in traces:  # a trace lies on the top of the block under it (or of the floor)
        under = next(shape for shape in shapes if math.isclose(shape.y, trace.y, abs_tol=1e-6))
        trace.zoom_y = under.zoom_y
    real_window_marked = settings.real_window not in (settings.window, settings.limit)
    inside = [Mark("zoom", spans, zoom_top)] + [
        Mark(kind, tokens, bottom_y - tokens * label_scale)
        for kind, tokens in levels.items()
        if tokens < spans and (kind != "model" or real_window_marked)
    ]
    return Zoom(tokens=spans, factor=label_scale / scale, top_y=zoom_top, marks=inside, stack_top_y=true_top), label_scale
