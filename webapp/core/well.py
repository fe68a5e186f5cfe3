"""The well's geometry: one call's request as a stack of blocks, in SVG user units.

Pure layout, free of Flask and of any language: the stack (heights proportional to tokens),
the motion of a compaction call (where each block stood before, the ghosts of what the hammer
shrank or removed, where the hammer strikes), the traces of dropped messages, and where each
label goes. The web layer (webapp/web/well.py) writes the labels' words and draws the SVG.

Heights are proportional to tokens, so the picture is a measurement: the well's depth is the
window, the red line is the threshold, and a stack above the rim is an overflow. The scale is
the same for every call of a replay, so stepping never rescales the picture.

What every call of a replay derives from the whole replay (tool names, the scale, each
block's versions) is computed once per replay (`per_replay`), not once per step.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from .history import Block
from .replay import Replay, per_replay

VIEW_W = 720
AXIS_X = 74  # right edge of the axis labels
KEEP_X = 92  # the KEEP bracket
WELL_X = 108
WELL_W = 250
LABEL_X = 392  # labels start here, joined to their block by a leader line
WELL_H = 480
TOP = 24  # room above the rim for its caption
GULP_ROOM = 36  # and for an overflow's "Gulp"
BOTTOM = 30
LABEL_GAP = 21
# At most this share of the window is drawn above the rim: enough to see an overflow, not so
# much that one runaway request shrinks the window to a sliver. The comparison's small wells
# (core/chart.py) use the same.
HEADROOM = 0.6
KINDS = ("floor", "user", "assistant", "tool", "summary", "system")


def block_kind(block: Block) -> str:
    """What a block is, for its colour: a summary, or its role (a function result is a tool
    result; any other role is "system")."""
    if block.state == "summary":
        return "summary"
    if block.role == "function":  # a legacy function-calling result
        return "tool"
    return block.role if block.role in {"user", "assistant", "tool"} else "system"


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
    name: str = ""  # accessible name: what, tokens, state

    @property
    def mid(self) -> float:
        return self.y + self.height / 2


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

    @property
    def mid(self) -> float:
        return self.y


@dataclass
class Well:
    width: int
    height: float
    rim_y: float
    bottom_y: float
    threshold_y: float
    stack_top_y: float
    shapes: list[Shape]
    ghosts: list[Ghost] = field(default_factory=list)
    traces: list[Trace] = field(default_factory=list)
    keep_top: float | None = None
    keep_bottom: float | None = None
    hammer_y: float | None = None
    hammer_settle: float = 0.0  # the hammer strikes the old top of what it hits, then presses it down
    before_y: float | None = None  # the stack's top before this call's compaction
    overflow: bool = False
    real_rim_y: float | None = None  # the model's real window, when the compactor was told another
    gulp_y: float = 26.0
    reply_room: tuple[float, float, int] | None = None  # (y, height, reply tokens) when it does not fit
    unlabelled: int = 0

    well_x = WELL_X
    well_w = WELL_W
    axis_x = AXIS_X
    keep_x = KEEP_X
    label_x = LABEL_X

    @property
    def well_right(self) -> int:
        return WELL_X + WELL_W

    @property
    def animated(self) -> bool:
        return self.hammer_y is not None


@per_replay
def tool_names(replay: Replay) -> dict[str, str]:
    """tool_call_id -> function name, over the whole script."""
    names = {}
    for item in replay.scenario.script:
        for call in item.message.get("tool_calls") or []:
            names[call.get("id", "")] = (call.get("function") or {}).get("name", "")
    return names


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
def scale_of(replay: Replay) -> tuple[float, float]:
    """(pixels per token, headroom in pixels above the rim), fixed for the whole replay."""
    window = replay.settings.window
    scale = WELL_H / window
    tallest = max(
        [call.tokens for call in replay.calls]
        + [call.compaction.tokens_before for call in replay.calls if call.compaction],
        default=0,
    )
    above = min(max(tallest - window, 0), window * HEADROOM)
    return scale, above * scale


def _stack(blocks: list[Block], replay: Replay, bottom: float, scale: float) -> dict[str, tuple[float, float]]:
    """id -> (y, height) of blocks stacked on the floor."""
    top = bottom - replay.floor_tokens * scale
    out = {}
    for block in blocks:
        height = replay.block_tokens(block) * scale
        top -= height
        out[block.id] = (top, height)
    return out


def layout(replay: Replay, number: int, selected: str | None = None) -> Well:
    """The well of call `number`, with `selected` (a block id) marked; labels placed but not
    worded."""
    call = replay.calls[number - 1]
    settings = replay.settings
    scale, headroom = scale_of(replay)
    rim_y = TOP + headroom + (GULP_ROOM if headroom else 0)
    bottom_y = rim_y + WELL_H
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
    stack_top = min((s.y for s in shapes), default=bottom_y)
    keep_top = keep_bottom = None
    if call.keep_start < len(blocks):
        first_kept = blocks[call.keep_start]
        keep_bottom = after[first_kept.id][0] + after[first_kept.id][1]
        keep_top = stack_top
    unlabelled = place_labels([*shapes, *traces], top=8, bottom=bottom_y + BOTTOM - 4)
    real_rim_y = bottom_y - settings.real_window * scale if settings.real_window != settings.window else None
    reply_room = None
    if call.no_room_for_reply:
        reply_tokens = next((e.detail["reply_tokens"] for e in call.events if e.kind == "no_room_for_reply"), 0)
        reply_room = (stack_top - reply_tokens * scale, reply_tokens * scale, reply_tokens)
    ceiling = min(stack_top, real_rim_y if real_rim_y is not None else rim_y)
    hammer_settle = 0.0
    if hammer_y is not None and ghosts:
        hammer_settle = min(ghost.y for ghost in ghosts) - hammer_y
    return Well(
        width=VIEW_W,
        height=bottom_y + BOTTOM,
        rim_y=rim_y,
        bottom_y=bottom_y,
        threshold_y=bottom_y - settings.limit * scale,
        stack_top_y=stack_top,
        shapes=shapes,
        ghosts=ghosts,
        traces=traces,
        keep_top=keep_top,
        keep_bottom=keep_bottom,
        hammer_y=hammer_y,
        hammer_settle=hammer_settle,
        before_y=min((top for top, height in before.values()), default=None) if animated else None,
        overflow=call.overflow,
        real_rim_y=real_rim_y,
        gulp_y=max(26.0, ceiling - 14),
        reply_room=reply_room,
        unlabelled=unlabelled,
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
    originals = [b for b in blocks if b.state != "summary"]
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
    """Put each label next to its item (a Shape or a Trace), then push labels apart so none
    overlap. When there are more items than lines, the smallest plain blocks go unlabelled
    (label_y None); returns how many."""
    capacity = int((bottom - top) / gap) + 1
    total = len(items)
    if total > capacity:
        def importance(item) -> tuple:
            special = isinstance(item, Trace) or item.selected or item.state in {"floor", "summary"}
            return (not special, -getattr(item, "height", 0))

        chosen = set(map(id, sorted(items, key=importance)[:capacity]))
        for item in items:
            if id(item) not in chosen:
                item.label_y = None
        items = [item for item in items if id(item) in chosen]
    ordered = sorted(items, key=lambda item: -item.mid)  # bottom first
    position = bottom
    for item in ordered:
        position = min(item.mid, position)
        item.label_y = position
        position -= gap
    # If the column ran past the top, push it back down from the top.
    position = top
    for item in reversed(ordered):
        position = max(item.label_y, position)
        item.label_y = position
        position += gap
    return total - len(items)
