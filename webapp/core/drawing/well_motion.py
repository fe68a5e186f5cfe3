"""The motion of a call whose compaction changed the history: where each block settles from,
the ghosts of what the hammer shrank or removed, and where the hammer strikes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..engine.calls import Replay
from .well_parts import HAMMER_AT_WALL, Ghost, Shape, Trace, block_kind
from .well_scale import stack


@dataclass
class Motion:
    """What moves on a compaction call; a call that compacted nothing has none of it."""

    ghosts: list[Ghost] = field(default_factory=list)
    hammer_y: float | None = None
    hammer_settle: float = 0.0  # the hammer strikes the old top of what it hits, then presses it down
    hammer_x: float = HAMMER_AT_WALL  # where its head's face rests, from the well's left wall
    before_y: float | None = None  # the stack's top before this call's compaction


def motion(replay: Replay, number: int, shapes: list[Shape], traces: list[Trace], bottom_y: float, scale: float) -> Motion:
    """The motion of compaction call `number`, from the stack as it stood before compaction.
    Sets each shape's `settle`."""
    call = replay.calls[number - 1]
    compaction = call.compaction
    history_before = replay.history_before(number)
    before = stack(history_before, replay, bottom_y, scale, replay.floor_at(number))
    for shape in shapes[1:]:  # the floor never moves
        if shape.id in before:
            old_y, old_h = before[shape.id]
            # Settle from where its bottom was: a shrunk block stays on what was under it.
            shape.settle = (old_y + old_h) - (shape.y + shape.height)
    current = {block.id: block for block in call.blocks}
    ghosts = []
    for block in history_before:
        now = current.get(block.id)
        if now is not None and now.state == block.state:
            continue
        old_y, old_h = before[block.id]
        ghosts.append(Ghost(block_kind(block), old_y, old_h))
    struck = {*compaction.truncated, *compaction.cleared, compaction.summary_id}
    hammer_y = min((s.y for s in shapes if s.state in {"truncated", "cleared", "summary"} and s.id in struck), default=None)
    if hammer_y is None and traces:  # no block it struck is drawn: it strikes where messages were dropped
        hammer_y = traces[0].y
    return Motion(
        ghosts=ghosts,
        hammer_y=hammer_y,
        hammer_settle=min(ghost.y for ghost in ghosts) - hammer_y if hammer_y is not None and ghosts else 0.0,
        before_y=min((top for top, height in before.values()), default=None),
    )
