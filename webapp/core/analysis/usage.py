"""The recorded usage against the playground's counts: how far apart they are, and the ratio of
the provider's tokenizer to the playground's counter, fit on the session's own calls.

Claude's tokenizer is not public, so no counter of the playground counts as Claude does. The
ratio is measured instead, on the growth of the request since the first recorded call (the
unlogged part, engine/recorded.py, already makes that call agree): least squares through the
origin, recorded growth = ratio × counted growth, over the calls of the replay with nothing
compacted, before the first compaction the harness recorded (after it, the harness sent less
than the whole history), on the counter's own counts (`Call.counted`, before the replay built
them on the recorded ones: engine/recorded.py, Calibration). The ratio is stated, never applied."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from ..engine.calls import Replay, per_replay
from ..engine.recorded import recorded_compactions
from ..engine.replay import replay

MIN_GROWTH = 1  # calls whose counted request has not grown since the first say nothing of the ratio


@dataclass(frozen=True)
class UsageFit:
    """The recorded calls of a replay, set against the playground's count."""

    recorded_calls: int  # calls of the replay whose usage the session recorded
    median_difference: int  # of counted - recorded, over those calls (this replay's counts)
    ratio: float | None = None  # provider's tokens per playground token, on the request's growth
    error: float | None = None  # root mean square of (fitted - recorded) / recorded, a share
    fit_calls: int = 0  # the calls the ratio was fit on


def fit_ratio(points: list[tuple[int, int]]) -> tuple[float, float] | None:
    """(ratio, error) of `points` (counted, recorded) of successive calls, the first being where
    both agree: recorded - recorded₀ ≈ ratio × (counted - counted₀) by least squares through the
    origin, and the root mean square relative error of that fit. None when the request never
    grew."""
    if len(points) < 2:
        return None
    (x0, y0), rest = points[0], points[1:]
    growth = [(x - x0, y - y0, y) for x, y in rest if x - x0 >= MIN_GROWTH]
    if not growth:
        return None
    ratio = sum(dx * dy for dx, dy, _ in growth) / sum(dx * dx for dx, _, _ in growth)
    error = math.sqrt(statistics.fmean(((y0 + ratio * dx - y) / y) ** 2 for dx, _, y in growth if y))
    return ratio, error


@per_replay
def usage_fit(result: Replay) -> UsageFit | None:
    """How the recorded usage and this replay's counts compare, and the ratio fit on the
    replay of the same settings with nothing compacted. None when the session recorded none."""
    recorded = [call for call in result.calls if call.recorded is not None]
    if not recorded:
        return None
    median = round(statistics.median(call.tokens - call.recorded.input_tokens for call in recorded))
    whole = result if result.settings.strategy == "none" else replay(result.scenario, result.settings.model_copy(update={"strategy": "none"}))
    first = recorded[0].number
    harness = min((call for call in recorded_compactions(result.scenario) if call > first), default=len(whole.calls) + 1)
    points = [(call.counted, call.recorded.input_tokens) for call in whole.calls if call.recorded is not None and call.number < harness]
    fitted = fit_ratio(points)
    if fitted is None:
        return UsageFit(len(recorded), median)
    return UsageFit(len(recorded), median, fitted[0], fitted[1], len(points))
