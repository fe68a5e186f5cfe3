"""The well: one call's request drawn as a stack of blocks, as SVG geometry.

Heights are proportional to tokens, so the picture is a measurement: the well's depth is the
window, the red line is the threshold, and a stack above the rim is an overflow. The scale is
the same for every call of a replay, so stepping never rescales the picture.

On a call where compaction changed the history, each block also gets where it stood before
compaction, so the template can play the hammer: ghosts of the old blocks collapse and the
blocks above settle (an SVG transform attribute that a CSS animation takes back to none).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from flask_babel import format_number
from flask_babel import gettext as _

from ..core.history import Block
from ..core.replay import Replay

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
MAX_HEADROOM = 0.6  # at most this share of the window is drawn above the rim


@dataclass
class Shape:
    """One block as drawn."""

    id: str
    kind: str  # floor, user, assistant, tool, summary
    state: str  # floor, original, truncated, summary
    label: str
    name: str  # accessible name: what, tokens, state
    tokens: float
    in_keep: bool
    y: float
    height: float
    settle: float = 0.0  # vertical offset it settles from on a compaction call
    arriving: bool = False
    label_y: float | None = 0.0  # None: too small to label among so many (the table lists it)
    selected: bool = False
    was: float | None = None  # tokens before truncation
    orphan: bool = False  # a tool result whose call is no longer sent: the API rejects the request

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
    label: str
    label_y: float | None = 0.0

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


def tool_names(replay: Replay) -> dict[str, str]:
    """tool_call_id -> function name, over the whole script."""
    names = {}
    for item in replay.scenario.script:
        for call in item.message.get("tool_calls") or []:
            names[call.get("id", "")] = (call.get("function") or {}).get("name", "")
    return names


def last_seen(replay: Replay, number: int) -> dict[str, Block]:
    """Every block sent or received up to call `number`, in its latest form."""
    seen: dict[str, Block] = {}
    for call in replay.calls[:number]:
        for block in call.blocks:
            seen[block.id] = block
        if call.reply is not None:
            seen[call.reply.id] = call.reply
    return seen


def first_seen(replay: Replay, number: int) -> dict[str, Block]:
    """Every block up to call `number`, as it first entered the history (before any truncation)."""
    seen: dict[str, Block] = {}
    for call in replay.calls[:number]:
        for block in (*call.blocks, *([call.reply] if call.reply else [])):
            seen.setdefault(block.id, block)
    return seen


def block_label(block: Block, names: dict[str, str]) -> tuple[str, str]:
    """(kind, label) of a block: its role, and the tool it calls or answers."""
    if block.state == "summary":
        return "summary", _("summary of %(count)d messages", count=len(block.replaces))
    if block.role == "tool":
        return "tool", _("tool result: %(name)s", name=names.get(block.message.get("tool_call_id", ""), "?"))
    if block.role == "function":
        return "tool", _("tool result: %(name)s", name=block.message.get("name", "?"))
    if block.role == "assistant":
        called = [(call.get("function") or {}).get("name", "") for call in block.message.get("tool_calls") or []]
        if called:
            return "assistant", _("assistant → %(tools)s", tools=", ".join(called))
        return "assistant", _("assistant")
    if block.role == "user":
        return "user", _("user")
    return "system", block.role or _("message")


def scale_of(replay: Replay) -> tuple[float, float]:
    """(pixels per token, headroom in pixels above the rim), fixed for the whole replay."""
    window = replay.settings.window
    scale = WELL_H / window
    tallest = max(
        [call.tokens for call in replay.calls]
        + [call.compaction.tokens_before for call in replay.calls if call.compaction],
        default=0,
    )
    above = min(max(tallest - window, 0), window * MAX_HEADROOM)
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


def draw(replay: Replay, number: int, selected: str | None = None) -> Well:
    call = replay.calls[number - 1]
    settings = replay.settings
    scale, headroom = scale_of(replay)
    rim_y = TOP + headroom + (GULP_ROOM if headroom else 0)
    bottom_y = rim_y + WELL_H
    names = tool_names(replay)
    originals = first_seen(replay, number)
    blocks = list(call.blocks)
    after = _stack(blocks, replay, bottom_y, scale)
    previous_ids = {b.id for b in replay.calls[number - 2].blocks} if number > 1 else set()

    compaction = call.compaction
    animated = compaction is not None and compaction.changed
    before = _stack(replay.history_before(number), replay, bottom_y, scale) if animated else {}

    floor_h = replay.floor_tokens * scale
    floor = Shape(
        id="floor",
        kind="floor",
        state="floor",
        label=_("floor: system prompt + tools"),
        name="",
        tokens=replay.floor_tokens,
        in_keep=False,
        y=bottom_y - floor_h,
        height=floor_h,
    )
    shapes = [floor]
    orphans = orphan_results(call.problems, blocks, len(replay.scenario.prefix))
    for index, block in enumerate(blocks):
        kind, label = block_label(block, names)
        y, height = after[block.id]
        tokens = replay.block_tokens(block)
        shape = Shape(
            id=block.id,
            kind=kind,
            state=block.state,
            label=label,
            name="",
            tokens=tokens,
            in_keep=index >= call.keep_start,
            y=y,
            height=height,
            arriving=block.id not in previous_ids and not animated,
        )
        if block.state in ("truncated", "cleared"):
            shape.was = replay.block_tokens(originals[block.id])
        shape.orphan = block.id in orphans
        if animated and block.id in before:
            old_y, old_h = before[block.id]
            # Settle from where its bottom was: a shrunk block stays on what was under it.
            shape.settle = (old_y + old_h) - (y + height)
        shapes.append(shape)

    ghosts: list[Ghost] = []
    hammer_y = None
    if animated:
        current = {b.id: b for b in blocks}
        for block in replay.history_before(number):
            now = current.get(block.id)
            if now is not None and now.state == block.state:
                continue
            old_y, old_h = before[block.id]
            ghosts.append(Ghost(block_label(block, names)[0], old_y, old_h))
        changed = {*compaction.truncated, *compaction.cleared, compaction.summary_id}
        hits = [s for s in shapes if s.state in {"truncated", "cleared", "summary"} and s.id in changed]
        hammer_y = min((s.y for s in hits), default=None)

    traces = _traces(replay, number, blocks, after, bottom_y - floor_h)
    if hammer_y is None and animated and traces:
        hammer_y = traces[0].y

    for shape in shapes:
        shape.selected = shape.id == selected
        shape.name = _accessible_name(shape)
    stack_top = min((s.y for s in shapes), default=bottom_y)
    keep_top = keep_bottom = None
    if call.keep_start < len(blocks):
        first_kept = blocks[call.keep_start]
        keep_bottom = after[first_kept.id][0] + after[first_kept.id][1]
        keep_top = stack_top
    unlabelled = _place_labels([*shapes, *traces], top=8, bottom=bottom_y + BOTTOM - 4)
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
    seen = last_seen(replay, number)
    groups: dict[int, list[str]] = {}
    originals = [b for b in blocks if b.state != "summary"]
    for message_id in dropped:
        # The trace sits under the first remaining block that came after the dropped message.
        at = next((i for i, b in enumerate(blocks) if b in originals and order[b.id] > order[message_id]), len(blocks))
        groups.setdefault(at, []).append(message_id)
    traces = []
    for at, ids in sorted(groups.items()):
        if at == 0:
            y = floor_top
        else:
            y = after[blocks[at - 1].id][0]
        tokens = sum(replay.block_tokens(seen[i]) for i in ids if i in seen)
        label = _("%(count)d dropped (%(tokens)s tokens)", count=len(ids), tokens=format_number(round(tokens)))
        traces.append(Trace(ids, tokens, y, label))
    return traces


def _accessible_name(shape: Shape) -> str:
    tokens = format_number(round(shape.tokens))
    if shape.kind == "floor":
        return _("%(label)s, %(tokens)s tokens, never compacted", label=shape.label, tokens=tokens)
    where = _("in KEEP") if shape.in_keep else _("outside KEEP")
    state = {
        "original": _("kept as sent"),
        "truncated": _("truncated to a note (was %(was)s tokens)", was=format_number(round(shape.was or 0))),
        "cleared": _("cleared to a placeholder (was %(was)s tokens)", was=format_number(round(shape.was or 0))),
        "summary": _("a summary"),
    }.get(shape.state, shape.state)
    if shape.orphan:
        state += ", " + _("its call is gone: the API rejects the request")
    return _("%(label)s, %(tokens)s tokens, %(state)s, %(where)s", label=shape.label, tokens=tokens, state=state, where=where)


def _place_labels(items: list, top: float, bottom: float) -> int:
    """Put each label next to its item, then push labels apart so none overlap. When there
    are more items than lines, the smallest plain blocks go unlabelled; returns how many."""
    capacity = int((bottom - top) / LABEL_GAP) + 1
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
        position -= LABEL_GAP
    # If the column ran past the top, push it back down from the top.
    position = top
    for item in reversed(ordered):
        position = max(item.label_y, position)
        item.label_y = position
        position += LABEL_GAP
    return total - len(items)
