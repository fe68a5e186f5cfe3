"""The well's geometry: one call's request as a stack of blocks, in CSS pixels. `layout` is the
entry point.

Pure layout, free of Flask and of any language: the stack (heights proportional to tokens),
the motion of a compaction call (where each block stood before, the ghosts of what the hammer
shrank or removed, where the hammer strikes), the traces of dropped messages, a zoomed view
when the stack is a sliver of the window, and where each label goes. The web layer
(webapp/web/pages/play/well.py) writes the labels' words and draws the SVG.

Heights are proportional to tokens, so the picture is a measurement: the well's depth is the
window, the red line is the threshold, and a stack above the rim is an overflow. The scale is
the same for every call of a replay, so stepping never rescales the picture.

Only the vertical is computed here. The drawing has a fixed height in CSS pixels and no
viewBox, so its text is never scaled down: on a phone a label is as large as on a laptop.
The horizontal (where the axis, the well, the zoom and the labels sit) is CSS (app.css), which
knows the page's width; the columns keep fixed gaps, so a leader line's length is known here.

What every call of a replay derives from the whole replay (tool names, the extent, each
block's versions) is computed once per replay (`per_replay`), not once per step.

This module lays out the blocks and the traces and puts the parts together; the parts are
`well_parts.py` (what is drawn), `well_scale.py` (the scale, the axis's levels, the zoomed
view), `well_motion.py` (a compaction's motion), `well_labels.py` (where labels go) and
`block_versions.py` (a block's forms over the replay).
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..engine.history import Block
from ..engine.calls import Call, Replay
from .block_versions import first_version, latest_version
from .well_labels import place_labels
from .well_motion import Motion, motion
from .well_parts import AXIS_LABEL_ABOVE, AXIS_LABEL_BELOW, BOTTOM, HAMMER_BESIDE_KEEP, HAMMER_HALF, NORMAL, PROJECTOR, TOP, Shape, Size, Trace, Well, block_kind
from .well_scale import axis_marks, scale_of, stack, zoom_view


def layout(replay: Replay, number: int, selected: str | None = None, size: Size = NORMAL) -> Well:
    """The well of call `number`, with `selected` (a block id) marked; labels placed but not
    worded."""
    call = replay.calls[number - 1]
    settings = replay.settings
    scale, headroom = scale_of(replay, size)
    rim_y = TOP + headroom
    bottom_y = size.height - BOTTOM
    blocks = list(call.blocks)
    after = stack(blocks, replay, bottom_y, scale, replay.floor_at(number))
    animated = call.compaction is not None and call.compaction.changed
    shapes = _shapes(replay, number, blocks, after, bottom_y, scale, animated, selected)
    traces = _traces(replay, number, blocks, after, floor_top=shapes[0].y)
    moved = motion(replay, number, shapes, traces, bottom_y, scale) if animated else Motion()

    threshold_y = bottom_y - settings.limit * scale
    real_rim_y = bottom_y - settings.real_window * scale if settings.real_window != settings.window else None
    marks = axis_marks(settings, rim_y, threshold_y, real_rim_y, bottom_y, scale)
    zoom, label_scale = zoom_view(replay, number, shapes, traces, scale, bottom_y, size)
    stack_top = min((s.shown_y for s in shapes), default=bottom_y)
    keep_top, keep_bottom = _keep_span(call, blocks, shapes, stack_top)
    if zoom is None and keep_bottom is not None:  # the bracket and the hammer share the well's left side
        moved = _hammer_under_keep(moved, keep_bottom, bottom_y)
    if moved.hammer_y is not None and moved.hammer_y + HAMMER_HALF > bottom_y - size.label_gap:
        # The hammer rests at the bottom of the well, where the axis says 0: the floor's edge says it.
        marks = [mark for mark in marks if mark.kind != "zero"]
    place_labels([*shapes, *traces, *(zoom.marks if zoom else [])], top=TOP + 6, bottom=size.height - 6, gap=size.label_gap)
    place_labels(marks, top=TOP + 8, bottom=size.height - 6, gap=size.axis_gap)
    moved = _hammer_clear_of_axis(moved, marks, size, bottom_y)
    keep_name_y = None
    if keep_top is not None:  # beside a zoomed view KEEP has a lane of its own, which nothing crosses
        crossing = [] if zoom else _crossing_keeps_lane(marks, moved)
        keep_name_y = _keep_name_clear((keep_top + keep_bottom) / 2, crossing, size.keep_half, TOP, bottom_y)
    return Well(
        height=size.height,
        rim_y=rim_y,
        bottom_y=bottom_y,
        threshold_y=threshold_y,
        stack_top_y=stack_top,
        shapes=shapes,
        ghosts=moved.ghosts,
        traces=traces,
        marks=marks,
        zoom=zoom,
        keep_top=keep_top,
        keep_bottom=keep_bottom,
        keep_name_y=keep_name_y,
        hammer_y=moved.hammer_y,
        hammer_settle=moved.hammer_settle,
        hammer_x=moved.hammer_x,
        before_y=moved.before_y,
        overflow=call.overflow,
        real_rim_y=real_rim_y,
        reply_room=_reply_room(call, stack_top, label_scale),
        unlabelled=sum(1 for item in [*shapes, *traces] if item.label_y is None),
        projector=size is PROJECTOR,
        caption_dy=size.caption_dy,
        label_gap=size.label_gap,
    )


def _shapes(
    replay: Replay,
    number: int,
    blocks: list[Block],
    after: dict[str, tuple[float, float]],
    bottom_y: float,
    scale: float,
    animated: bool,
    selected: str | None,
) -> list[Shape]:
    """The floor, then each block of the request where `after` stacks it. On a compaction
    call nothing arrives: the blocks settle instead (well_motion.py)."""
    call = replay.calls[number - 1]
    previous_ids = {b.id for b in replay.calls[number - 2].blocks} if number > 1 else set()
    floor_tokens = replay.floor_at(number)
    floor_h = floor_tokens * scale
    floor = Shape(
        id="floor", kind="floor", state="floor", tokens=floor_tokens, in_keep=False,
        y=bottom_y - floor_h, height=floor_h, selected=selected == "floor", unlogged=replay.unlogged.tokens,
    )
    floor.lines = 1 + floor.notes
    shapes = [floor]
    orphans = orphan_results(call.problems, blocks, len(replay.scenario.prefix))
    for index, block in enumerate(blocks):
        y, height = after[block.id]
        shape = Shape(
            id=block.id,
            kind=block_kind(block),
            state=block.state,
            tokens=replay.block_tokens(block),
            in_keep=index >= call.keep_start,
            y=y,
            height=height,
            block=block,
            arriving=block.id not in previous_ids and not animated,
            selected=block.id == selected,
            orphan=block.id in orphans,
        )
        if block.state in ("truncated", "cleared"):
            shape.was = replay.block_tokens(first_version(replay, block.id) or block)
        shape.lines = 1 + shape.notes
        shapes.append(shape)
    return shapes


ORPHAN = re.compile(r"^messages\[(\d+)\]\.tool_call_id:")


def orphan_results(problems: tuple[str, ...], blocks: list[Block], prefix: int) -> set[str]:
    """Ids of the tool results a request sends without their call. The problems index the
    request as sent, the `prefix` messages first, so message i is block i - prefix."""
    found = set()
    for problem in problems:
        match = ORPHAN.match(problem)
        if match and 0 <= int(match.group(1)) - prefix < len(blocks):
            found.add(blocks[int(match.group(1)) - prefix].id)
    return found


def _traces(replay: Replay, number: int, blocks: list[Block], after: dict, floor_top: float) -> list[Trace]:
    """Dropped messages, grouped by where they were, each group a trace at that boundary."""
    summarized = {i for b in blocks for i in b.replaces}
    dropped = [i for i in replay.gone(number) if i not in summarized]
    if not dropped:
        return []
    order = {item.id: position for position, item in enumerate(replay.scenario.script)}
    groups: dict[int, list[str]] = {}
    originals = [b for b in blocks if b.state not in ("summary", "notice")]  # what the script wrote
    for message_id in dropped:
        # The trace sits under the first remaining block that came after the dropped message.
        at = next((i for i, b in enumerate(blocks) if b in originals and order[b.id] > order[message_id]), len(blocks))
        groups.setdefault(at, []).append(message_id)
    traces = []
    for at, ids in sorted(groups.items()):
        y = floor_top if at == 0 else after[blocks[at - 1].id][0]
        seen = [latest_version(replay, i, number) for i in ids]
        tokens = sum(replay.block_tokens(block) for block in seen if block is not None)
        traces.append(Trace(ids, tokens, y))
    return traces


def _keep_span(call: Call, blocks: list[Block], shapes: list[Shape], stack_top: float) -> tuple[float | None, float | None]:
    """(top, bottom) of KEEP, the blocks compaction leaves alone, in the view that carries the
    labels; (None, None) when it keeps none. A stack far over the window is cut at the top band
    (_well.html's clip), and so is KEEP: its tint, bracket and name stay out of the band where
    "Gulp!" is written."""
    if call.keep_start >= len(blocks):
        return None, None
    first_kept = next(shape for shape in shapes if shape.id == blocks[call.keep_start].id)
    top = max(stack_top, TOP)
    return top, max(top, first_kept.anchor + first_kept.shown_height / 2)


def _hammer_under_keep(moved: Motion, keep_bottom: float, bottom_y: float) -> Motion:
    """The hammer clear of KEEP's bracket, which shares the well's left side: lowered, when
    need be, so that its head rests under the bracket (it strikes older blocks, under KEEP),
    still swinging from where it struck; when KEEP reaches too near the bottom for that, left
    of the bracket and its name."""
    if moved.hammer_y is None or moved.hammer_y - HAMMER_HALF >= keep_bottom:
        return moved
    struck = moved.hammer_y + moved.hammer_settle
    rest = keep_bottom + HAMMER_HALF + 1
    if rest > bottom_y:
        return replace(moved, hammer_x=HAMMER_BESIDE_KEEP)
    return replace(moved, hammer_y=rest, hammer_settle=struck - rest)


def _crossing_keeps_lane(marks: list, moved: Motion) -> list[tuple[float, float]]:
    """The spans (top, bottom) of what crosses the lane of KEEP's name between the axis and the
    well: each axis label's leader line, drawn when the label is pushed more than 2 px off its
    level (_well.html), over its whole run (the name spans the lane's width); and the hammer
    resting at the wall."""
    spans = [(min(mark.y, mark.label_y), max(mark.y, mark.label_y)) for mark in marks if mark.label_y is not None and abs(mark.label_y - mark.y) > 2]
    if moved.hammer_y is not None and moved.hammer_x != HAMMER_BESIDE_KEEP:
        spans.append((moved.hammer_y - HAMMER_HALF, moved.hammer_y + HAMMER_HALF))
    return spans


def _keep_name_clear(middle: float, spans: list[tuple[float, float]], half: float, top: float, bottom: float) -> float:
    """Where KEEP's name goes, as near its bracket's middle as it can be (an axis label pushed
    off its level runs its leader across the lane): the middle if no span crosses the name
    there, else the nearest place just over or under a span that none crosses, within the
    drawing (under the top band: a short KEEP cut at the band has its name run past the
    bracket's end); the nearest place within the drawing when there is none."""
    within = min(max(middle, top + half), bottom - half)

    def clear(at: float) -> bool:
        return top <= at - half and at + half <= bottom and all(end < at - half or start > at + half for start, end in spans)

    places = [within, *(edge for start, end in spans for edge in (start - half - 1, end + half + 1))]
    return min((at for at in places if clear(at)), key=lambda at: abs(at - middle), default=within)


def _hammer_clear_of_axis(moved: Motion, marks: list, size: Size, bottom_y: float) -> Motion:
    """The hammer's resting place moved off the axis labels it would cover (they share the
    well's left side): just under the label in its way, or just over it when there is no room
    under; it still strikes where it struck."""
    if moved.hammer_y is None:
        return moved
    struck = moved.hammer_y + moved.hammer_settle
    # An axis label is its figure and a caption under it.
    bands = sorted((mark.label_y - AXIS_LABEL_ABOVE, mark.label_y + size.caption_dy + AXIS_LABEL_BELOW) for mark in marks if mark.label_y is not None)
    rest = moved.hammer_y
    for top, bottom in bands:
        if top < rest + HAMMER_HALF and rest - HAMMER_HALF < bottom:
            under = bottom + HAMMER_HALF + 1
            rest = under if under + HAMMER_HALF <= bottom_y else top - HAMMER_HALF - 1
    return replace(moved, hammer_y=rest, hammer_settle=struck - rest) if rest != moved.hammer_y else moved


def _reply_room(call: Call, stack_top: float, label_scale: float) -> tuple[float, float, int] | None:
    """(y, height, reply tokens) of the reply that does not fit above the stack, if it does not."""
    if not call.no_room_for_reply:
        return None
    reply_tokens = next((e.detail["reply_tokens"] for e in call.events if e.kind == "no_room_for_reply"), 0)
    return stack_top - reply_tokens * label_scale, reply_tokens * label_scale, reply_tokens
