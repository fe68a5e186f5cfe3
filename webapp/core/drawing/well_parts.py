"""What the well is made of, as the layout (well.py) places it: the drawing's sizes, and the
shapes, traces, marks and zoomed view it positions in CSS pixels. Their words are the web
layer's (webapp/web/pages/play/well.py), kept apart from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..engine.history import Block


@dataclass(frozen=True)
class Size:
    """How large the well is drawn: its height in CSS pixels (its width follows the page), and
    the line spacing of its labels, which follows their font size in app.css."""

    height: float
    label_gap: float  # between two block labels (one line each)
    axis_gap: float  # between two axis labels (two lines each: a figure and its caption)
    caption_dy: float  # from an axis label's figure to its caption
    keep_half: float  # half of KEEP's rotated name, along the well (app.css's .keep-label), and a pixel to spare


NORMAL = Size(height=460, label_gap=19, axis_gap=37, caption_dy=20, keep_half=21)  # KEEP in 12 px: 40 px long
PROJECTOR = Size(height=505, label_gap=25, axis_gap=48, caption_dy=25, keep_half=26)  # app.css: svg.well.projector, fits 1280×720; KEEP in 15 px
TOP = 34  # a band over the whole drawing for "Gulp!" and the zoom's caption, so no label meets them
BOTTOM = 16
LABEL_GAP = NORMAL.label_gap
LEADER = 22  # the leader lines' horizontal run: app.css's --gap (30px) less the labels' margin
AXIS_LEADER = 18  # from the axis labels to the lines: app.css's --well-x less --axis, less 10px
HAMMER_HALF = 16  # half the hammer's head (_well.html draws it 32 px tall)
# How far an axis label's text reaches above its figure's baseline and below its caption's (12 px type).
AXIS_LABEL_ABOVE = 12
AXIS_LABEL_BELOW = 4
HAMMER_AT_WALL = -4  # where the head's face rests, left of the well's wall
HAMMER_BESIDE_KEEP = -34  # left of KEEP's bracket (-8 to -16) and its name (around -22, up to -31 in projector mode)
NOTE_X = 12  # a label's note lines are indented this far under its name
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
    """One block as drawn."""

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
    unlogged: int = 0  # the floor's tokens a pasted session's log does not hold (its system prompt and tools)
    zoom_y: float | None = None  # where the zoomed view draws it, when there is one
    zoom_height: float = 0.0
    # The lines its label takes (well_labels.py): its name, then a line for each note (what the
    # hammer did: its tokens before it was cut, its call gone; the floor's unlogged part), unless
    # the column is crowded.
    lines: int = 1

    @property
    def notes(self) -> int:
        """The notes under its name, each a line of its label when there is room: what the hammer
        did to it, or the floor's part the log does not hold."""
        return self.cut + self.orphan + (self.unlogged > 0)

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
    def leader_y(self) -> float:
        """Where its label's leader line starts: its anchor, or the top band's edge for a block
        of a runaway stack cut off above it (_well.html's clip), so no leader runs up into the
        band and across "Gulp!"."""
        return max(self.anchor, TOP)

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
    zoom_y: float | None = None
    lines: int = 2  # "✕ 3 dropped", then their tokens (one line when the column is crowded)

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
    lines = 1

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
    keep_name_y: float | None = None  # the middle of KEEP's name, beside its bracket
    hammer_y: float | None = None
    hammer_settle: float = 0.0  # the hammer strikes the old top of what it hits, then presses it down
    hammer_x: float = HAMMER_AT_WALL
    before_y: float | None = None  # the stack's top before this call's compaction
    overflow: bool = False
    real_rim_y: float | None = None  # the model's real window, when the compactor was told another
    gulp_y: float = TOP - 11
    reply_room: tuple[float, float, int] | None = None  # (y, height, reply tokens) when it does not fit
    unlabelled: int = 0
    projector: bool = False
    caption_dy: float = NORMAL.caption_dy
    label_gap: float = NORMAL.label_gap  # from a label's line to the next
    top = TOP
    note_x = NOTE_X
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

