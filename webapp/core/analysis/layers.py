"""The budget by layer of the "Agent Context Manager" manual (004_abe3947712a3ce73.txt, step 1).

A request is made of layers, in the manual's order: the system prompt, the tool definitions,
long-term memory, the retrieval (RAG) context, the conversation history. Two more layers are
room kept free: the reply's, and a safety margin. Each layer has its share of the window;
what is left is free room, so the budgets and the free room add up to the window.

The manual calls memory "ltm" and retrieval "rag" (its metrics' keys, `MANUAL_KEYS`); the
playground says memory and retrieval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING


from ..counting.tokens import get_counter
from ..model import REQUEST_LAYERS, ROOM_LAYERS, Budget

if TYPE_CHECKING:
    from ..engine.calls import Call, Replay
    from ..settings import Settings

@dataclass(frozen=True)
class LayerUse:
    """One layer at one call: its tokens, its budget, and whether it passes it. For the reply
    and the margin, `tokens` is the room the request leaves them, and `over` says the
    request ate into it."""

    layer: str
    tokens: int
    budget_tokens: int
    over: bool


def layer_use(settings: Settings, budget: Budget, request: dict[str, int]) -> tuple[list[LayerUse], int]:
    """Each layer's use at one call, from `request` (tokens by request layer, as
    `request_layers` gives them), and the free room left: the layers' tokens and the free
    room add up to the window (the free room is negative when the request overflows it)."""
    window = settings.real_window
    budgets = budget.tokens(window)
    uses = [LayerUse(layer, request[layer], budgets[layer], request[layer] > budgets[layer]) for layer in REQUEST_LAYERS]
    left = window - sum(request[layer] for layer in REQUEST_LAYERS)
    for layer in ROOM_LAYERS:
        room = min(budgets[layer], max(0, left))
        uses.append(LayerUse(layer, room, budgets[layer], room < budgets[layer]))
        left -= room
    return uses, left


def request_layers(result: Replay, call: Call) -> dict[str, int]:
    """The tokens of the request sent at `call`, by layer; they add up to `call.tokens`. Each
    layer is its exact share, rounded; what rounding and the counter's per-request tokens (the
    reply's priming) leave goes to the history, the layer that changes anyway, so that the
    system prompt's figure stays the same from call to call."""
    counter = get_counter(result.settings.counter)
    units = dict(result.scenario.floor_layers(result.floor_units, counter))
    for block in call.blocks:
        units[block.layer] = units.get(block.layer, 0) + block.units
    out = {layer: round(counter.block_tokens(units.get(layer, 0))) for layer in REQUEST_LAYERS if layer != "history"}
    out["history"] = call.tokens - sum(out.values())
    return {layer: out[layer] for layer in REQUEST_LAYERS}
