"""What a session recorded, set against the replay: the provider's count of each call, the
compactions the harness did, and the part of every request the log does not hold.

Numbering. `RecordedUsage.call` is 1 for the transcript's first assistant message; the
replay's call N is the model call before the script's N-th assistant message. An assistant
message in the prefix (an opening reply, or the history of a file that starts in the middle
of a session) is no call of the replay, so recorded call k is replay call k - p, where p is
the number of assistant messages in the prefix; recorded calls in the prefix are left out.

The unlogged part. Claude Code's log holds neither the system prompt nor the tool
definitions, yet the provider counted them. At the first call that recorded usage, what the
provider counted minus what the playground counts there (when positive) is taken as a part of
the floor, sent with every request: the first recorded call's count then equals the
recorded one, and later calls carry it too (docs/transcripts.md, "Recorded usage").

Counting as the harness counts (`Calibration`). Claude Code and Codex know, before a call,
the provider's count of the last one, and add their own estimate of what came since. So does
the replay: once a call's usage is recorded while the replay's history is still the one the
session sent, each later request is that call's recorded input plus what changed since,
counted with the counter (a ratio of tokenizers fit on so few calls scales noise more than it
corrects: analysis/usage.py states it, unapplied). The anchor moves with each recorded call,
never to the call it predicts, and stays where it was once the history differs from the
recorded one (the strategy compacted, or the harness did)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..counting.tokens import Counter
from ..model import RecordedCompaction, RecordedUsage, Scenario


@dataclass(frozen=True)
class Unlogged:
    """The floor's part the log does not hold: its tokens (in the counter's tokens), its units
    (what the replay adds), and the replay call it was measured at (None: nothing recorded)."""

    tokens: int = 0
    units: int = 0
    at: int | None = None


def _shift(scenario: Scenario) -> int:
    return sum(1 for message in scenario.prefix if message.get("role") == "assistant")


def recorded_usage(scenario: Scenario) -> dict[int, RecordedUsage]:
    """The recorded usage of each call of the replay, by the replay's call number."""
    if scenario.origin is None:
        return {}
    shift = _shift(scenario)
    return {u.call - shift: u for u in scenario.origin.usage if 0 < u.call - shift <= scenario.call_count}


def recorded_compactions(scenario: Scenario) -> dict[int, RecordedCompaction]:
    """The harness's own compactions, by the replay call each came before (one that came
    before the script's first call, in the prefix, is given call 1)."""
    if scenario.origin is None:
        return {}
    shift = _shift(scenario)
    return {max(1, c.before_call - shift): c for c in scenario.origin.compactions if c.before_call - shift <= scenario.call_count}


def units_of(counter: Counter, tokens: int) -> int:
    """The units of a part of the request worth `tokens` tokens (4 characters a token for the
    estimate, one unit a token for the tokenizers)."""
    return math.ceil(tokens / counter.block_tokens(1))


def unlogged(scenario: Scenario, counter: Counter, floor_units: int) -> Unlogged:
    """The part of the floor the log does not hold, measured at the first call that recorded
    usage: what the provider counted there minus what `counter` counts, never below 0."""
    usage = recorded_usage(scenario)
    if not usage:
        return Unlogged()
    first = min(usage)
    units, replies = 0, 0
    for item in scenario.script:
        if item.role == "assistant":
            replies += 1
            if replies == first:
                break
        units += counter.measure(item.message)
    tokens = max(0, usage[first].input_tokens - counter.request_tokens(floor_units + units))
    return Unlogged(tokens, units_of(counter, tokens), first)



@dataclass(frozen=True)
class Calibration:
    """How the loop counts a request from the last recorded call whose history it shares:
    that call's recorded input, plus the change since as the counter counts it."""

    call: int  # the replay call whose recorded input it builds on
    counted: int  # that call's request as the counter counts it
    recorded: int  # and as the provider counted it

    def tokens(self, counted: int) -> int:
        """The request the counter counts as `counted`, as the harness would count it."""
        return max(0, self.recorded + counted - self.counted)
