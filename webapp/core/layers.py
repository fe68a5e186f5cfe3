"""The budget by layer of the "Agent Context Manager" manual (004_abe3947712a3ce73.txt, step 1).

A request is made of layers, in the manual's order: the system prompt, the tool definitions,
long-term memory, the retrieval (RAG) context, the conversation history. Two more layers are
room kept free: the reply's, and a safety margin. Each layer has its share of the window;
what is left is free room, so the budgets and the free room add up to the window.

The manual calls memory "ltm" and retrieval "rag" (its metrics' keys, `MANUAL_KEYS`); the
playground says memory and retrieval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .i18n import N_
from .tokens import get_counter

if TYPE_CHECKING:
    from .replay import Call, Replay
    from .settings import Settings

# The layers a request's tokens belong to, in the manual's order of assembly (its step 7).
REQUEST_LAYERS = ("system", "tools", "memory", "retrieval", "history")
# Room kept free in the window, after the request.
ROOM_LAYERS = ("reply", "margin")
LAYERS = (*REQUEST_LAYERS, *ROOM_LAYERS)
# What a message of the chat may be marked as (system and tools are the floor's).
MESSAGE_LAYERS = ("memory", "retrieval", "history")
MANUAL_KEYS = {"system": "system", "tools": "tools", "memory": "ltm", "retrieval": "rag", "history": "history"}
LAYER_WORDS = {
    "system": N_("system prompt"),
    "tools": N_("tool definitions"),
    "memory": N_("long-term memory"),
    "retrieval": N_("retrieved documents"),
    "history": N_("conversation history"),
    "reply": N_("room for the reply"),
    "margin": N_("safety margin"),
}


class Budget(BaseModel):
    """Each layer's share of the window. Defaults: the manual's, for a 200,000-token window
    (system 2,000, tools 3,000, memory 5,000, retrieval 20,000, history 40,000, reply 10,000,
    margin 20,000); the remaining 50% is free room. A scenario's `[budget]` table overrides."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    system: float = Field(0.01, ge=0, le=1, description="the system prompt's share of the window")
    tools: float = Field(0.015, ge=0, le=1, description="the tool definitions' share")
    memory: float = Field(0.025, ge=0, le=1, description="long-term memory's share")
    retrieval: float = Field(0.10, ge=0, le=1, description="the retrieved documents' share")
    history: float = Field(0.20, ge=0, le=1, description="the conversation history's share")
    reply: float = Field(0.05, ge=0, le=1, description="the room kept for the reply")
    margin: float = Field(0.10, ge=0, le=1, description="the safety margin")

    @model_validator(mode="after")
    def fits_the_window(self) -> Budget:
        total = sum(self.shares().values())
        if total > 1 + 1e-9:
            raise ValueError(f"the shares add up to {total:g}, more than the whole window (1)")
        return self

    def shares(self) -> dict[str, float]:
        return {layer: getattr(self, layer) for layer in LAYERS}

    def tokens(self, window: int) -> dict[str, int]:
        """Each layer's budget in tokens (rounded down), and "free": the rest of the window,
        so that the values add up to `window` exactly."""
        out = {layer: math.floor(window * share + 1e-9) for layer, share in self.shares().items()}
        out["free"] = window - sum(out.values())
        return out


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
