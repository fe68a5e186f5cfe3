"""The layers' strip beside the stack: each layer of the manual's budget as a band at the
well's scale (what it uses, and its budget beside it), in the view that carries the labels."""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.layers import LayerUse
from ..model import ROOM_LAYERS
from .well_parts import Well


@dataclass(frozen=True)
class Band:
    """One layer drawn beside the stack, in the well's pixels: what it uses (`y`, `height`)
    and its budget (`plan_y`, `plan_height`)."""

    layer: str
    over: bool
    y: float
    height: float
    plan_y: float
    plan_height: float



def bands(uses: list[LayerUse], window: int, well: Well) -> list[Band]:
    """The layers as bands at the well's scale, in the view that carries the labels (the zoomed
    one when there is one). The request's layers stack from the bottom in the manual's order,
    as tall as the stack; the room kept free hangs from the rim, the reply's first, then the
    margin, which a growing request eats first. A zoomed view stops below the rim, so it
    leaves the room out; what passes the view's top (a budget taller than the zoomed range,
    a runaway stack) is cut there, as the blocks are."""
    zoom = well.zoom
    top = zoom.top_y if zoom else well.rim_y
    ceiling = zoom.top_y if zoom else well.top - 2
    scale = (well.bottom_y - top) / (zoom.tokens if zoom else window)

    def span(tokens_below: float, tokens: float) -> tuple[float, float]:
        """(y, height) of a band from `tokens_below` up `tokens`, cut at the ceiling."""
        bottom = well.bottom_y - tokens_below * scale
        y = max(bottom - tokens * scale, ceiling)
        return y, max(bottom - y, 0.0)

    out = []
    used = planned = hanging = 0.0
    for use in uses:
        if use.layer not in ROOM_LAYERS:
            out.append(Band(use.layer, use.over, *span(used, use.tokens), *span(planned, use.budget_tokens)))
            used += use.tokens
            planned += use.budget_tokens
        elif not zoom:  # drawn whole (its budget), outlined when the request eats into it
            y = well.rim_y + hanging * scale
            out.append(Band(use.layer, use.over, y, use.tokens * scale, y, use.budget_tokens * scale))
            hanging += use.budget_tokens
    return out
