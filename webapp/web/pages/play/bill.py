"""The bill panel: SENT so far, what this call added and how that compares with the previous call,
the cost, and a bar per call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ....core.analysis.usage import UsageFit, usage_fit
from ....core.counting.tokens import get_counter
from ....core.engine.calls import Replay, per_replay

if TYPE_CHECKING:
    from . import PlayData


@dataclass
class Bill:
    sent_total: int
    this_call: int  # what SENT grew by on this call (the request, plus any summarizer input)
    tokens: int
    growth: int | None  # what SENT grew by on this call minus what it grew by on the previous one
    cost: float
    price: float
    bars: list[tuple[int, int]]  # (call, what SENT grew by) for every call
    bar_max: int
    summarizer_output: int
    recorded: int | None = None  # what the provider counted for this call, when recorded
    unlogged: int = 0  # the floor's part the log does not hold
    unlogged_at: int | None = None  # the call it was measured at
    fit: UsageFit | None = None
    # How this call's count was built: the recorded call it starts from, that call's recorded
    # input, and the counter's own count of this request (engine/recorded.py, Calibration).
    built_on: int | None = None
    built_on_recorded: int | None = None
    counted: int = 0
    counter_label: str = ""  # the counter's name, a catalog message

    @property
    def slot(self) -> float:
        """Width of one call's slot in the bars' 560-unit row."""
        return 560 / len(self.bars)

    @property
    def labelled(self) -> bool:
        """Whether each bar gets its call number under it (not when they would crowd)."""
        return len(self.bars) <= 24


@per_replay
def increments(result: Replay) -> list[tuple[int, int]]:
    """(call, what SENT grew by on it) for every call."""
    totals = [0] + [call.sent_total for call in result.calls]
    return [(call.number, totals[call.number] - totals[call.number - 1]) for call in result.calls]


def bill(data: PlayData) -> Bill:
    """The bill panel at the page's call: SENT, this call's share of it, and its cost."""
    result, call = data.result, data.call
    bars = increments(result)
    # Against what the previous call added, as the story says it: the request's own change left
    # out a summarizer's tokens ("vs previous call −15,349" beside "3,261 more than at the previous call").
    this_call = bars[call.number - 1][1]
    return Bill(
        sent_total=call.sent_total,
        this_call=this_call,
        tokens=call.tokens,
        growth=this_call - bars[call.number - 2][1] if call.number > 1 else None,
        cost=data.cost,
        price=data.view.price,
        bars=bars,
        bar_max=max((amount for _, amount in bars), default=1) or 1,
        summarizer_output=call.summarizer_output_total,
        recorded=call.recorded.input_tokens if call.recorded else None,
        unlogged=result.unlogged.tokens,
        unlogged_at=result.unlogged.at,
        fit=usage_fit(result),
        built_on=call.calibration.call if call.calibration else None,
        built_on_recorded=call.calibration.recorded if call.calibration else None,
        counted=call.counted,
        counter_label=get_counter(result.settings.counter).label,
    )
