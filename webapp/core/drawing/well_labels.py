"""Where the well's labels go: each next to what it names, pushed apart so none overlap, and
the least telling left out when there are more than the column has lines.
"""

from __future__ import annotations

from .well_parts import LABEL_GAP, Mark, Trace


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
