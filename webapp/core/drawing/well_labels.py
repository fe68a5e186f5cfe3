"""Where the well's labels go: each next to what it names, pushed apart so none overlap, and
the least telling left out when there are more than the column has lines.
"""

from __future__ import annotations

from .well_parts import LABEL_GAP, Mark, Trace


def importance(item) -> tuple:
    """How telling a label is, most first: traces, levels, the selected block and the floor;
    then what compaction made or left broken (summaries, cut results, orphans); then the
    tallest blocks."""
    if isinstance(item, (Trace, Mark)) or item.selected or item.state == "floor":
        return (0, 0)
    return (1 if item.orphan or item.state in {"summary", "truncated", "cleared"} else 2, -item.height)


def labelled(items: list, capacity: int) -> list:
    """The items that get a label in a column of `capacity` lines, each taking its `lines`.
    A crowded column first leaves the smallest plain blocks unlabelled, then writes the notes
    of what the hammer did on no line of their own (they stay in the block's name and the table
    view), least telling first, and only then leaves out more. The others get label_y None."""
    kept = sorted(items, key=importance)  # most telling first
    lines = sum(item.lines for item in kept)
    while lines > capacity and kept and importance(kept[-1])[0] == 2:
        lines -= kept.pop().lines
    for item in reversed(kept):
        if lines <= capacity:
            break
        lines -= item.lines - 1
        item.lines = 1
    while lines > capacity:
        lines -= kept.pop().lines
    chosen = set(map(id, kept))
    for item in items:
        if id(item) not in chosen:
            item.label_y = None
    return [item for item in items if id(item) in chosen]


def place_labels(items: list, top: float, bottom: float, gap: float = LABEL_GAP) -> int:
    """Put each label next to its item's anchor (a Shape, a Trace or a Mark), then push labels apart so none
    overlap; a label of several lines (`lines`) takes that many, its first beside the anchor.
    When there are more lines than the column holds, the least telling go unlabelled (label_y
    None, `labelled`); returns how many."""
    total = len(items)
    items = labelled(items, int((bottom - top) / gap) + 1)
    ordered = sorted(items, key=lambda item: -item.anchor)  # bottom first
    position = bottom  # the lowest a label's last line may sit
    for item in ordered:
        item.label_y = min(item.anchor, position - (item.lines - 1) * gap)
        position = item.label_y - gap
    # If the column ran past the top, push it back down from the top.
    position = top
    for item in reversed(ordered):
        item.label_y = max(item.label_y, position)
        position = item.label_y + item.lines * gap
    return total - len(items)
