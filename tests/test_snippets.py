"""Settings to code: what a user pastes must set exactly the settings they were looking at."""

from __future__ import annotations

import json
import re

from hypothesis import given, strategies as st

from webapp.core.engine.strategy_catalog import STRATEGIES
from webapp.core.settings import Settings, parse_settings
from webapp.core.output.snippets import astorlm_block, python_window, settings_code

settings_strategy = st.builds(
    Settings,
    strategy=st.sampled_from(sorted(STRATEGIES)),
    window=st.integers(100, 10_000_000),
    model_window=st.integers(0, 10_000_000),
    threshold=st.floats(0.01, 1.0, allow_nan=False).map(lambda x: round(x, 3)).filter(lambda x: x > 0),
    keep=st.integers(1, 1000),
    preview=st.integers(0, 10_000),
)


def typescript_object(block: str) -> dict:
    """The contextOptimizer object literal, read as JSON (comments off, keys quoted)."""
    code = "\n".join(line.split("//")[0] for line in block.splitlines())
    code = "{" + re.sub(r"(\w+):", r'"\1":', code).strip().rstrip(",") + "}"
    return json.loads(re.sub(r",\s*}", "}", code))


@given(settings_strategy)
def test_astorlm_block_sets_window_threshold_and_keep(settings):
    values = typescript_object(astorlm_block(settings))["contextOptimizer"]
    assert values == {"maxTokens": settings.window, "compressThreshold": settings.threshold, "keepRecentTurns": settings.keep}


@given(settings_strategy)
def test_python_window_is_the_seeds_dict(settings):
    namespace: dict = {}
    exec(python_window(settings), namespace)  # the snippet is plain Python a user pastes
    assert namespace["WINDOW"] == {"max_tokens": settings.window, "threshold": settings.threshold, "keep_recent_turns": settings.keep}


def test_the_seeds_own_settings_render_as_in_the_seed():
    settings = parse_settings({})
    block = astorlm_block(settings)
    assert "maxTokens: 8000," in block
    assert "compressThreshold: 0.8, // compact once the request passes 80% of the window" in block
    assert "keepRecentTurns: 2," in block
    assert python_window(settings) == 'WINDOW = {"max_tokens": 8000, "threshold": 0.8, "keep_recent_turns": 2}'
    assert [snippet.language for snippet in settings_code(settings)] == ["typescript", "python"]


def test_a_wrong_window_and_another_strategy_are_called_out():
    settings = parse_settings({"window": 128000, "model_window": 8000, "strategy": "summarize"})
    for code in (astorlm_block(settings), python_window(settings)):
        assert "The model really has 8,000 tokens" in code
        assert "showing summarize" in code
    plain = parse_settings({"window": 8000})
    assert "really has" not in astorlm_block(plain) and "showing" not in astorlm_block(plain)
