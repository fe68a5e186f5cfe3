"""The well's geometry: one call's request as a stack of blocks, in CSS pixels.

Pure layout, free of Flask and of any language: the stack (heights proportional to tokens),
the motion of a compaction call (where each block stood before, the ghosts of what the hammer
shrank or removed, where the hammer strikes), the traces of dropped messages, a zoomed view
when the stack is a sliver of the window, and where each label goes. The web layer
(webapp/web/well.py) writes the labels' words and draws the SVG.

Heights are proportional to tokens, so the picture is a measurement: the well's depth is the
window, the red line is the threshold, and a stack above the rim is an overflow. The scale is
the same for every call of a replay, so stepping never rescales the picture.

Only the vertical is computed here. The drawing has a fixed height in CSS pixels and no
viewBox, so its text is never scaled down: on a phone a label is as large as on a laptop.
The horizontal (where the axis, the well, the zoom and the labels sit) is CSS (app.css), which
knows the page's width; the columns keep fixed gaps, so a leader line's length is known here.

What every call of a replay derives from the whole replay (tool names, the extent, each
block's versions) is computed once per replay (`per_replay`), not once per step.
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass, field

from ..counting.tokens import call_names
from ..engine.history import Block
from ..engine.replay import Replay, per_replay


@dataclass(frozen=True)
class Size:
    """How large the well is drawn: its height in CSS pixels (its width follows the page), and
    the line spacing of its labels, which follows their font size in app.css."""

    height: float
    label_gap: float  # between two block labels (one line each)
    axis_gap: float  # between two axis labels (two lines each: a figure and its caption)
    caption_dy: float  # from an axis label's figure to its caption


NORMAL = Size(height=460, label_gap=19, axis_gap=37, caption_dy=20)
PROJECTOR = Size(height=505, label_gap=25, axis_gap=48, caption_dy=25)  # app.css: svg.well.projector, fits 1280×720
TOP = 34  # a band over the whole drawing for "Gulp!" and the zoom's caption, so no label meets them
BOTTOM = 16
LABEL_GAP = NORMAL.label_gap
# At most this share of the window is drawn above the rim: enough to see an overflow, not so
# much that one runaway request shrinks the window to a sliver. The comparison's small wells
# (core/drawing/chart.py) use the same.
HEADROOM = 0.6
# A stack under this share of what the well draws gets a zoomed view beside the true one.
ZOOM_BELOW = 0.25
NICE_STEPS = (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10)
LEADER = 22  # the leader lines' horizontal run: app.css's --gap (30px) less the labels' margin
AXIS_LEADER = 18  # from the axis labels to the lines: app.css's --well-x less --axis, less 10px
INSIDE_MIN = 22  # a block this tall shows its tokens inside
# A cut block thinner than this gets a band around it, this far beyond its edges, to show where the scissors went.
CUT_BAND_BELOW = 8
CUT_BAND_PAD = 3
KINDS = ("floor", "user", "assistant", "tool", "summary", "system", "notice", "memory", "retrieval")


def block_kind(block: Block) -> str:
    """What a block is, for its colour: a summary, the overflow notice, or its role (a function result is a tool
    result); a context message of the memory or retrieval layer, its layer; any other role is "system"."""
    if block.state in ("summary", "notice"):  # by-layer's overflow notice is a block of its own kind
        return block.state
    if block.role == "function":  # a legacy function-calling result
        return "tool"
    if block.role in {"user", "assistant", "tool"}:
        return block.role
    # Memory or retrieved pages given to the model as context (no turn of the chat): their
    # layer's colour, the one of their band beside the stack.
    return block.layer if block.layer in {"memory", "retrieval"} else "system"


@dataclass
class Shape:
    """One block as drawn. `label` and `name` are words, written by the web layer."""

    id: str
    kind: str  # one of KINDS
    state: str  # floor, original, truncated, cleared, summary
    tokens: float
    in_keep: bool
    y: float
    height: float
    block: Block | None = field(default=None, repr=False)  # None for the floor
    settle: float = 0.0  # vertical offset it settles from on a compaction call
    arriving: bool = False
    label_y: float | None = 0.0  # None: too small to label among so many (the table lists it)
    selected: bool = False
    was: float | None = None  # tokens before truncation or clearing
    orphan: bool = False  # a tool result whose call is no longer sent: the API rejects the request
    label: str = ""
    href: str = ""  # the link that selects it, written by the web layer
    classes: str = ""  # its classes in the drawing (look, and orphan, pinned, selected)
    written: str = ""  # its tokens as written on it, when it is tall enough ("" otherwise)
    short: str = ""  # the label without its kind (the colour says it), for a phone
    words: tuple[str, str, str] | None = None  # the label as (long only, short, long only); None: short is no part of it
    name: str = ""  # accessible name: what, tokens, state
    zoom_y: float | None = None  # where the zoomed view draws it, when there is one
    zoom_height: float = 0.0

    @property
    def mid(self) -> float:
        return self.y + self.height / 2

    @property
    def cut(self) -> bool:
        """Truncated or cleared: what the hammer left of a tool result."""
        return self.state in ("truncated", "cleared")

    @property
    def sign(self) -> str:
        """What its label and tokens start with: scissors for a truncated result, ∅ for a cleared one."""
        return {"truncated": "✂ ", "cleared": "∅ "}.get(self.state, "")

    @property
    def shown_y(self) -> float:
        """Its top where it is selected: in the zoomed view when there is one."""
        return self.y if self.zoom_y is None else self.zoom_y

    @property
    def top(self) -> float:
        """Its top as drawn where it is selected, to a tenth of a pixel."""
        return round(self.shown_y, 1)

    @property
    def tall(self) -> float:
        """Its height as drawn where it is selected: at least a pixel, so it can be hit."""
        return round(max(self.shown_height, 1), 1)

    @property
    def written_y(self) -> float:
        """Where its tokens are written on it: the baseline, a little under its middle."""
        return round(self.anchor + 5, 1)

    @property
    def look(self) -> str:
        """Its classes in the drawing: its kind, and its state when it was cut."""
        return f"{self.kind} {self.state}" if self.cut else self.kind

    @property
    def anchor(self) -> float:
        """Where its label points: the zoomed view when there is one, which is readable."""
        return self.mid if self.zoom_y is None else self.zoom_y + self.zoom_height / 2

    @property
    def shown_height(self) -> float:
        return self.height if self.zoom_y is None else self.zoom_height


@dataclass
class Run:
    """Blocks next to each other that move as one: they settle by the same offset on a
    compaction call, or fall in together as new arrivals. The drawing wraps each run, not
    each block, in what moves it."""

    settle: float  # rounded to a tenth of a pixel, as drawn
    arriving: bool
    shapes: list[Shape]


@dataclass
class Ghost:
    """A block as it stood before compaction shrank or removed it."""

    kind: str
    y: float
    height: float


@dataclass
class Trace:
    """Where dropped messages used to be."""

    ids: list[str]
    tokens: float
    y: float
    label_y: float | None = 0.0
    label: str = ""
    zoom_y: float | None = None

    @property
    def mid(self) -> float:
        return self.y

    @property
    def anchor(self) -> float:
        return self.y if self.zoom_y is None else self.zoom_y


@dataclass
class Mark:
    """A labelled level: the rim (window), the red line (line), the model's real window
    (model), the alert line (alert), the target after compaction (target), the bottom (zero),
    or the top of the zoomed view (zoom). Marks of the true well are labelled in the axis
    column; marks inside the zoomed view, among the block labels."""

    kind: str
    tokens: float
    y: float
    label_y: float | None = 0.0
    label: str = ""
    caption: str = ""  # the axis's second line
    short: str = ""  # the label for a narrow screen
    words: tuple[str, str, str] | None = None  # as Shape.words

    @property
    def anchor(self) -> float:
        return self.y

    mid = anchor


@dataclass
class Zoom:
    """The stack drawn again, `factor` times taller, from 0 up to `tokens` at `top_y`."""

    tokens: float
    factor: float
    top_y: float
    marks: list[Mark]  # the levels that fall inside it, labelled among the blocks
    stack_top_y: float  # the stack's top in the true well, where the connector starts


@dataclass
class Well:
    height: float
    rim_y: float
    bottom_y: float
    threshold_y: float
    stack_top_y: float  # in the view that carries the labels (the zoom, if any)
    shapes: list[Shape]
    ghosts: list[Ghost] = field(default_factory=list)
    traces: list[Trace] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)  # the true well's levels, on the axis
    zoom: Zoom | None = None
    keep_top: float | None = None  # KEEP, in the view that carries the labels
    keep_bottom: float | None = None
    hammer_y: float | None = None
    hammer_settle: float = 0.0  # the hammer strikes the old top of what it hits, then presses it down
    before_y: float | None = None  # the stack's top before this call's compaction
    overflow: bool = False
    real_rim_y: float | None = None  # the model's real window, when the compactor was told another
    gulp_y: float = TOP - 11
    reply_room: tuple[float, float, int] | None = None  # (y, height, reply tokens) when it does not fit
    unlabelled: int = 0
    projector: bool = False
    caption_dy: float = NORMAL.caption_dy
    top = TOP
    leader = LEADER
    axis_leader = AXIS_LEADER
    inside_min = INSIDE_MIN

    @property
    def animated(self) -> bool:
        return self.hammer_y is not None

    @property
    def runs(self) -> list[Run]:
        """The stack, floor first, cut where the motion of the next block differs."""
        out: list[Run] = []
        for shape in self.shapes:
            settle = round(shape.settle, 1)
            if out and out[-1].settle == settle and out[-1].arriving == shape.arriving:
                out[-1].shapes.append(shape)
            else:
                out.append(Run(settle, shape.arriving, [shape]))
        return out

    @property
    def cut_bands(self) -> list[tuple[float, float]]:
        """(top, height) of the bands drawn around cut blocks too thin to see. Bands that
        touch merge into one, so pages compressed together read as one cut, not a pile of
        outlines."""
        spans = sorted(
            (shape.shown_y - CUT_BAND_PAD, shape.shown_y + shape.shown_height + CUT_BAND_PAD)
            for shape in self.shapes
            if shape.cut and shape.shown_height < CUT_BAND_BELOW
        )
        merged: list[list[float]] = []
        for top, bottom in spans:
            if merged and top <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], bottom)
            else:
                merged.append([top, bottom])
        return [(round(top, 1), round(bottom - top, 1)) for top, bottom in merged]

    def inside(self, shape: Shape) -> bool:
        """Whether a block is tall enough, where its label points, to show its tokens inside
        (and its middle is below the top band, which the stack of a runaway request crosses)."""
        return shape.shown_height >= INSIDE_MIN and shape.anchor >= TOP + INSIDE_MIN / 2


@per_replay
def tool_names(replay: Replay) -> dict[str, str]:
    """tool_call_id -> function name, over the whole script."""
    return call_names(item.message for item in replay.scenario.script)


@per_replay
def _versions(replay: Replay) -> dict[str, tuple[list[int], list[Block]]]:
    """Per block id, the calls where it was first sent or received in a new form, and that
    form: a block's story over the whole replay, walked once."""
    versions: dict[str, tuple[list[int], list[Block]]] = {}
    for call in replay.calls:
        for block in (*call.blocks, *([call.reply] if call.reply else [])):
            numbers, forms = versions.setdefault(block.id, ([], []))
            if not forms or forms[-1] is not block:
                numbers.append(call.number)
                forms.append(block)
    return versions


def first_version(replay: Replay, block_id: str) -> Block | None:
    """A block as it first entered the history (before any truncation)."""
    found = _versions(replay).get(block_id)
    return found[1][0] if found else None


def latest_version(replay: Replay, block_id: str, number: int) -> Block | None:
    """A block in its latest form sent or received up to call `number`; None if it had not
    entered the history by then."""
    found = _versions(replay).get(block_id)
    if not found:
        return None
    at = bisect.bisect_right(found[0], number)
    return found[1][at - 1] if at else None


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


def _stack(blocks: list[Block], replay: Replay, bottom: float, scale: float) -> dict[str, tuple[float, float]]:
    """id -> (y, height) of blocks stacked on the floor."""
    top = bottom - replay.floor_tokens * scale
    out = {}
    for block in blocks:
        height = replay.block_tokens(block) * scale
        top -= height
        out[block.id] = (top, height)
    return out


def layout(replay: Replay, number: int, selected: str | None = None, size: Size = NORMAL) -> Well:
    """The well of call `number`, with `selected` (a block id) marked; labels placed but not
    worded."""
    call = replay.calls[number - 1]
    settings = replay.settings
    scale, headroom = scale_of(replay, size)
    rim_y = TOP + headroom
    bottom_y = size.height - BOTTOM
    blocks = list(call.blocks)
    after = _stack(blocks, replay, bottom_y, scale)
    previous_ids = {b.id for b in replay.calls[number - 2].blocks} if number > 1 else set()

    compaction = call.compaction
    animated = compaction is not None and compaction.changed
    history_before = replay.history_before(number) if animated else []
    before = _stack(history_before, replay, bottom_y, scale) if animated else {}

    floor_h = replay.floor_tokens * scale
    floor = Shape(id="floor", kind="floor", state="floor", tokens=replay.floor_tokens, in_keep=False, y=bottom_y - floor_h, height=floor_h)
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
            orphan=block.id in orphans,
        )
        if block.state in ("truncated", "cleared"):
            shape.was = replay.block_tokens(first_version(replay, block.id) or block)
        if animated and block.id in before:
            old_y, old_h = before[block.id]
            # Settle from where its bottom was: a shrunk block stays on what was under it.
            shape.settle = (old_y + old_h) - (y + height)
        shapes.append(shape)

    ghosts: list[Ghost] = []
    hammer_y = None
    if animated:
        current = {b.id: b for b in blocks}
        for block in history_before:
            now = current.get(block.id)
            if now is not None and now.state == block.state:
                continue
            old_y, old_h = before[block.id]
            ghosts.append(Ghost(block_kind(block), old_y, old_h))
        struck = {*compaction.truncated, *compaction.cleared, compaction.summary_id}
        hammer_y = min((s.y for s in shapes if s.state in {"truncated", "cleared", "summary"} and s.id in struck), default=None)

    traces = _traces(replay, number, blocks, after, bottom_y - floor_h)
    if hammer_y is None and animated and traces:
        hammer_y = traces[0].y

    for shape in shapes:
        shape.selected = shape.id == selected
    true_top = min((s.y for s in shapes), default=bottom_y)
    real_rim_y = bottom_y - settings.real_window * scale if settings.real_window != settings.window else None
    threshold_y = bottom_y - settings.limit * scale
    marks = [Mark("window", settings.window, rim_y), Mark("line", settings.limit, threshold_y), Mark("zero", 0, bottom_y)]
    if real_rim_y is not None:
        marks.append(Mark("model", settings.real_window, real_rim_y))
    # The manual's other two lines, when set: the alert (a warning only) and the target compaction aims below.
    lines = {kind: settings.window * share for kind, share in (("alert", settings.alert), ("target", settings.target)) if share}
    marks += [Mark(kind, tokens, bottom_y - tokens * scale) for kind, tokens in lines.items()]

    # The zoomed view: the same stack, on a scale where its top sits just under the top band.
    stack_tokens = replay.floor_tokens + sum(replay.block_tokens(block) for block in blocks)
    levels = {"model": settings.real_window, "line": settings.limit, "window": settings.window, **lines}
    spans = zoom_range(stack_tokens, settings.window + _above(replay), list(levels.values()))
    zoom = None
    label_scale = scale
    if spans is not None:
        zoom_top = TOP + size.label_gap
        label_scale = (bottom_y - zoom_top) / spans
        zoomed = _stack(blocks, replay, bottom_y, label_scale)
        shapes[0].zoom_y, shapes[0].zoom_height = bottom_y - replay.floor_tokens * label_scale, replay.floor_tokens * label_scale
        for shape in shapes[1:]:
            shape.zoom_y, shape.zoom_height = zoomed[shape.id]
        for trace in traces:  # a trace lies on the top of the block under it (or of the floor)
            under = next(shape for shape in shapes if math.isclose(shape.y, trace.y, abs_tol=1e-6))
            trace.zoom_y = under.zoom_y
        inside = [Mark("zoom", spans, zoom_top)] + [
            Mark(kind, tokens, bottom_y - tokens * label_scale) for kind, tokens in levels.items() if tokens < spans and (kind != "model" or real_rim_y is not None)
        ]
        zoom = Zoom(tokens=spans, factor=label_scale / scale, top_y=zoom_top, marks=inside, stack_top_y=true_top)

    stack_top = min((s.y if s.zoom_y is None else s.zoom_y for s in shapes), default=bottom_y)
    keep_top = keep_bottom = None
    if call.keep_start < len(blocks):
        first_kept = next(shape for shape in shapes if shape.id == blocks[call.keep_start].id)
        keep_bottom = first_kept.anchor + first_kept.shown_height / 2
        keep_top = stack_top
    labelled = [*shapes, *traces, *(zoom.marks if zoom else [])]
    place_labels(labelled, top=TOP + 6, bottom=size.height - 6, gap=size.label_gap)
    place_labels(marks, top=TOP + 8, bottom=size.height - 6, gap=size.axis_gap)
    reply_room = None
    if call.no_room_for_reply:
        reply_tokens = next((e.detail["reply_tokens"] for e in call.events if e.kind == "no_room_for_reply"), 0)
        reply_room = (stack_top - reply_tokens * label_scale, reply_tokens * label_scale, reply_tokens)
    hammer_settle = 0.0
    if hammer_y is not None and ghosts:
        hammer_settle = min(ghost.y for ghost in ghosts) - hammer_y
    return Well(
        height=size.height,
        rim_y=rim_y,
        bottom_y=bottom_y,
        threshold_y=threshold_y,
        stack_top_y=stack_top,
        shapes=shapes,
        ghosts=ghosts,
        traces=traces,
        marks=marks,
        zoom=zoom,
        keep_top=keep_top,
        keep_bottom=keep_bottom,
        hammer_y=hammer_y,
        hammer_settle=hammer_settle,
        before_y=min((top for top, height in before.values()), default=None) if animated else None,
        overflow=call.overflow,
        real_rim_y=real_rim_y,
        reply_room=reply_room,
        unlabelled=sum(1 for item in [*shapes, *traces] if item.label_y is None),
        projector=size is PROJECTOR,
        caption_dy=size.caption_dy,
    )


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


def place_labels(items: list, top: float, bottom: float, gap: float = LABEL_GAP) -> int:
    """Put each label next to its item's anchor (a Shape, a Trace or a Mark), then push labels apart so none
    overlap. When there are more items than lines, the smallest plain blocks go unlabelled
    (label_y None); returns how many."""
    capacity = int((bottom - top) / gap) + 1
    total = len(items)
    if total > capacity:
        def importance(item) -> tuple:
            special = isinstance(item, (Trace, Mark)) or item.selected or item.state in {"floor", "summary", "truncated"}
            return (not special, -getattr(item, "height", 0))

        chosen = set(map(id, sorted(items, key=importance)[:capacity]))
        for item in items:
            if id(item) not in chosen:
                item.label_y = None
        items = [item for item in items if id(item) in chosen]
    ordered = sorted(items, key=lambda item: -item.anchor)  # bottom first
    position = bottom
    for item in ordered:
        position = min(item.anchor, position)
        item.label_y = position
        position -= gap
    # If the column ran past the top, push it back down from the top.
    position = top
    for item in reversed(ordered):
        position = max(item.label_y, position)
        item.label_y = position
        position += gap
    return total - len(items)
