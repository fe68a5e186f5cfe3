"""With the estimate counter, the engine sends exactly what the seed's own code sends.

The seed's `compact()` (000_fd8adbc93eaf3a52.txt, Python) is loaded from the seed file at run
time; `truncate` and `drop` are compared with its level 1 alone and level 2 alone, `none`
with its loop without `compact()`.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings as hypothesis_settings
from hypothesis import strategies as st

from webapp.core.inputs.library import open_scenario
from webapp.core.engine.replay import replay
from webapp.core.settings import Settings

from .generators import scenarios
from .seed_reference import SEED_PREVIEW, load_seed_compact, seed_requests

pytestmark = pytest.mark.needs_seed
SEED_LEVELS = {"truncate": (1,), "drop": (2,), "truncate-drop": (1, 2)}


def seed_side(scenario, chosen: Settings):
    seed = load_seed_compact(
        system=scenario.system,
        window=chosen.window,
        threshold=chosen.threshold,
        keep=chosen.keep,
        levels=SEED_LEVELS.get(chosen.strategy, (1, 2)),
    )
    if chosen.strategy == "none":
        seed.compact = lambda messages: messages
    return seed_requests([item.message for item in scenario.script], seed)


def engine_side(scenario, chosen: Settings):
    return [call.request(scenario.prefix) for call in replay(scenario, chosen).calls]


@hypothesis_settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    scenarios(max_requests=10),
    st.sampled_from(["none", "truncate", "drop", "truncate-drop"]),
    st.integers(300, 12_000),
    st.sampled_from([0.5, 0.75, 0.8, 0.9, 1.0]),
    st.integers(1, 4),
)
def test_engine_requests_equal_the_seeds_call_by_call(scenario, strategy, window, threshold, keep):
    chosen = Settings(strategy=strategy, window=window, threshold=threshold, keep=keep, counter="estimate", preview=SEED_PREVIEW)
    assert engine_side(scenario, chosen) == seed_side(scenario, chosen)


@pytest.mark.parametrize("strategy", ["none", "truncate", "drop", "truncate-drop"])
@pytest.mark.parametrize("window", [2000, 5000, 8000])
def test_the_bike_shop_equals_the_seed(strategy, window):
    scenario = open_scenario("bike-shop")
    chosen = scenario.settings.model_copy(update={"strategy": strategy, "window": window, "counter": "estimate"})
    assert engine_side(scenario, chosen) == seed_side(scenario, chosen)
