"""The comparison's column "as recorded": what the harness really sent, by the provider's own
count, beside the strategies the playground replays.

It is no replay. Each call's request is the input the session recorded for it (cached tokens
included), its cached part the recorded cached tokens, its compactions the harness's own; the
bill is `pricing.bill` of those figures. What the log cannot tell is left unknown, never made
up: a call without a recorded figure has none (not zero), cache writes are not recorded (so
they are billed as uncached input), and facts and API validity are not judged. It never enters
the verdict, which compares strategies (engine/recorded.py numbers the calls as the replay).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engine.recorded import recorded_compactions, recorded_usage
from ..model import RecordedCompaction, Scenario
from .pricing import Bill, Pricing, bill

FAMILY = "recorded"
KEY = "as recorded"


@dataclass(frozen=True)
class RecordedCall:
    """One call of the replay's numbering, as the session recorded it."""

    number: int
    tokens: int | None  # the input the provider counted; None when the log holds no figure
    cached: int | None  # of it, read from the provider's cache, when recorded
    overflow: bool  # the recorded request is larger than the window
    compaction: RecordedCompaction | None  # the harness compacted just before this call


@dataclass(frozen=True)
class AsRecorded:
    calls: tuple[RecordedCall, ...]
    bill: Bill

    family = FAMILY
    key = KEY

    def call(self, number: int) -> RecordedCall:
        return self.calls[number - 1]

    def sent_at(self, number: int) -> int:
        """The recorded input of calls 1 to `number` (the calls that recorded one)."""
        return sum(call.tokens or 0 for call in self.calls[:number])

    @property
    def sent_total(self) -> int:
        return self.sent_at(len(self.calls))

    @property
    def cached_total(self) -> int:
        return sum(call.cached or 0 for call in self.calls)

    @property
    def recorded_calls(self) -> int:
        return sum(1 for call in self.calls if call.tokens is not None)

    @property
    def compactions(self) -> list[RecordedCall]:
        return [call for call in self.calls if call.compaction is not None]

    @property
    def overflow_calls(self) -> list[int]:
        return [call.number for call in self.calls if call.overflow]

    @property
    def peak_tokens(self) -> int:
        return max((call.tokens or 0 for call in self.calls), default=0)


def as_recorded(scenario: Scenario, window: int, pricing: Pricing) -> AsRecorded | None:
    """The session's recorded calls against `window` (the model's real one), billed at
    `pricing`; None when the session recorded no usage."""
    usage = recorded_usage(scenario)
    if not usage:
        return None
    compactions = recorded_compactions(scenario)
    calls = tuple(
        RecordedCall(
            number,
            usage[number].input_tokens if number in usage else None,
            usage[number].cached_tokens if number in usage else None,
            number in usage and usage[number].input_tokens > window,
            compactions.get(number),
        )
        for number in range(1, scenario.call_count + 1)
    )
    sent = sum(call.tokens or 0 for call in calls)
    cached = sum(call.cached or 0 for call in calls)
    return AsRecorded(calls, bill(pricing, sent, cached, 0, 0))
