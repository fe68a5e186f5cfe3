"""The request as the provider counts it, beside the loop's own count: the same number,
unless the loop counts with the characters / 4 estimate, which is what a loop believes, while
a provider counts real tokens. Overflow and the room for the reply are decided on it."""

from __future__ import annotations

from ..model import Scenario
from .calls import chat_counter, chat_floor
from .compaction import Compaction, Context
from .history import Block

# The tokenizer taken for the provider's count when the loop counts with the estimate: the
# one of today's common OpenAI models.
PROVIDER_COUNTER = "o200k_base"


class ProviderCount:
    """The provider's units of the history, kept up to date as messages come and recounted
    only when compaction changed the history, so that a long chat is not walked again at
    every call."""

    def __init__(self, scenario: Scenario, context: Context):
        self.same = context.counter.name != "estimate"
        self.counter = context.counter if self.same else chat_counter(scenario, PROVIDER_COUNTER)
        self.floor = context.floor_units if self.same else chat_floor(scenario, PROVIDER_COUNTER)[0]
        self.units = 0
        self._measured: dict[int, tuple[dict, int]] = {}

    def add(self, message: dict, units: int | None = None) -> None:
        """A message entered the history (`units`: the provider's, when already measured)."""
        if not self.same:
            self.units += self.measure(message) if units is None else units

    def recount(self, history: list[Block]) -> None:
        if not self.same:
            self.units = sum(self.measure(block.message) for block in history)

    def tokens(self, tokens: int, history: list[Block], compaction: Compaction | None, built_on_recorded: bool = False) -> int:
        """The provider's count of the request the loop counts as `tokens`: that count itself
        when it is built on the provider's own recorded counts (recorded.Calibration)."""
        if self.same:
            return tokens
        if compaction is not None and compaction.changed:
            self.recount(history)
        return tokens if built_on_recorded else self.counter.request_tokens(self.floor + self.units)

    def measure(self, message: dict) -> int:
        # A recount after each compaction sees mostly the same messages: measure each once.
        # The message is kept beside its units, so its id() cannot be reused by another.
        found = self._measured.get(id(message))
        if found is None:
            found = self._measured[id(message)] = (message, self.counter.measure(message))
        return found[1]
