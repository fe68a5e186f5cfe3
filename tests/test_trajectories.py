"""Real agent trajectories from public sources (tests/fixtures/trajectories/*.json; each file
names its source and how it was converted): whenever the system prompt, the tools and KEEP
(and the first message, which no strategy touches) fit under the line, at least one strategy
replays the whole run without an overflow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from webapp.core.analysis.compare import compare
from webapp.core.engine.history import keep_start
from webapp.core.inputs.library import load_file
from webapp.core.settings import parse_settings
from webapp.core.counting.tokens import get_counter

TRAJECTORIES = sorted((Path(__file__).parent / "fixtures" / "trajectories").glob("*.json"))
WINDOWS = (4000, 6000, 8000, 12000)
KEEPS = ((1, "tool_results"), (3, "tool_results"), (2, "turns"))


def test_there_are_three_real_trajectories_with_their_sources():
    assert len(TRAJECTORIES) >= 3
    for path in TRAJECTORIES:
        raw = json.loads(path.read_text(encoding="utf-8"))
        assert raw["source"]["repository"].startswith("https://github.com/")
        assert raw["source"]["commit"] and raw["source"]["path"] and raw["conversion"]
        assert sum(1 for message in raw["messages"] if message["role"] == "tool") >= 10


def keep_fits(result) -> bool:
    """The floor, the first message and KEEP, as the loop counts them, fit under the line at
    every call. No strategy touches the first message (the task, or SWE-agent's demonstration),
    so it is as fixed as the system prompt; the line, not the window, leaves the room that a
    summary or the placeholders of cleared results take."""
    settings = result.settings
    counter = get_counter(settings.counter)
    for call in result.calls:
        blocks = list(call.blocks)
        start = keep_start(blocks, settings.keep, settings.keep_unit)
        units = result.floor_units + blocks[0].units + sum(block.units for block in blocks[max(start, 1):])
        if counter.request_tokens(units) > settings.limit:
            return False
    return True


@pytest.mark.parametrize("path", TRAJECTORIES, ids=lambda path: path.stem)
@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("keep, unit", KEEPS)
def test_a_strategy_never_overflows_when_keep_fits(path, window, keep, unit):
    scenario = load_file(path)
    settings = parse_settings({"window": window, "keep": keep, "keep_unit": unit, "counter": "o200k_base"})
    comparison = compare(scenario, settings)
    if not keep_fits(comparison.column("none").result):
        pytest.skip("the system prompt, the tools, the first message and KEEP alone pass the line")
    safe = [
        column.key
        for column in comparison.columns
        if not column.overflows and column.valid_requests and column.strategy != "naive-drop"
    ]
    assert safe, f"every strategy overflows at window {window}, keep {keep} {unit}"
