"""The fast references finder finds exactly what the plain one did (tests/references_before.py):
the same values in every text, the same references (value, kind, source, uses, holders, in
order) and the same fate at every use, on generated chats full of value-shaped text, on every
lesson and on every real session of tests/fixtures/sessions."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings as hypothesis_settings
from hypothesis import strategies as st

from tests import references_before as before
from tests.generators import scenarios, settings as replay_settings
from webapp.core.analysis import references as fast
from webapp.core.engine.replay import replay
from webapp.core.inputs.library import load_file, open_scenario
from webapp.core.inputs.scenarios import ScenarioError
from webapp.core.model import Scenario, ScriptMessage
from webapp.core.engine.strategy_catalog import STRATEGIES

SESSIONS = Path(__file__).parent / "fixtures" / "sessions"
LESSONS = sorted(path.stem for path in (Path(__file__).parent.parent / "scenarios").glob("*.toml"))
# Pieces that make every shape of value and every edge of one: quotes of each kind, separators,
# marks, units, JSON keys, words of several scripts.
PIECES = st.sampled_from(
    [
        '"', "'", "`", "“", "”", "«", "»", "「", "」", " ", "  ", "\n", "\t", ":", ",", ".", "/", "_", "-", "(", ")",
        "4471", "12", "200ms", "1,481.22", "10.00", "3.335", "v2.3.1", "1.24.6", "go1.22.1", "src/shop/cart.py",
        "/var/log/app.log", "~/notes", "https://shop.example.com/orders/4471?x=1", "ERR_CART_LOCKED", "INV-2024-0031",
        "3f2a9c1", "README.md", "pyproject.toml", "Marie Dupont", "status", "shipped", "rim tyre", "车轮", "订单",
        "naïve", "é", "🚲", "x", "A1", "http", "3rd", "node-18.17.0", "python3.12", "file1.2.txt", "Field(strict=True)", "=",
        "$(", "->", "[", "{", ";",
    ]
)
TEXTS = st.lists(PIECES, min_size=0, max_size=40).map("".join)


def references_of(module, scenario: Scenario) -> list[tuple]:
    found = module.find_references(scenario)
    return [tuple(vars(reference).values()) for reference in found.items] + [found.script_ids]


def fates_of(module, references, calls) -> list[tuple]:
    return [(fate.reference.value, fate.held) for fate in module.reference_fates(references, calls)]


@hypothesis_settings(max_examples=400, deadline=None)
@given(TEXTS)
def test_every_text_holds_the_same_values_in_the_same_order(text):
    assert list(fast.values_in(text)) == list(before.values_in(text))
    # Read with the chat's table of stretches already holding those of another text.
    stretches: dict = {}
    list(fast.values_in(text[::-1], stretches))
    assert list(fast.values_in(text, stretches)) == list(before.values_in(text))


@st.composite
def value_chats(draw):
    """A generated chat whose messages are value-shaped text, each of any role, some repeated."""
    scenario = draw(scenarios(min_requests=1, max_requests=5))
    script = []
    for index, item in enumerate(scenario.script):
        message = dict(item.message)
        if message.get("content") is not None and draw(st.booleans()):
            message["content"] = draw(TEXTS) + " " + message["content"]
        if index and draw(st.integers(0, 4)) == 0:  # an earlier message's text, word for word
            message["content"] = script[draw(st.integers(0, index - 1))].message.get("content")
        script.append(ScriptMessage(item.id, message))
    return replace(scenario, script=script)


@hypothesis_settings(max_examples=60, deadline=None)
@given(value_chats(), replay_settings())
def test_generated_chats_give_the_same_references_and_fates(scenario, chosen):
    assert references_of(fast, scenario) == references_of(before, scenario)
    calls = replay(scenario, chosen).calls
    assert fates_of(fast, fast.find_references(scenario), calls) == fates_of(before, before.find_references(scenario), calls)


@pytest.mark.parametrize("name", LESSONS)
def test_every_lesson_gives_the_same_references_and_fates_under_every_strategy(name):
    scenario = open_scenario(name)
    assert references_of(fast, scenario) == references_of(before, scenario)
    found_fast, found_before = fast.find_references(scenario), before.find_references(scenario)
    for strategy in STRATEGIES:
        calls = replay(scenario, scenario.settings.model_copy(update={"strategy": strategy, "window": scenario.settings.window // 2})).calls
        assert fates_of(fast, found_fast, calls) == fates_of(before, found_before, calls), strategy


def _sessions() -> list[Path]:
    return sorted(path for path in SESSIONS.glob("*/*") if path.suffix in (".json", ".jsonl"))


@pytest.mark.parametrize("path", _sessions(), ids=lambda path: f"{path.parent.name}/{path.name}")
def test_every_real_session_gives_the_same_references(path):
    try:
        scenario = load_file(path)
    except (ScenarioError, json.JSONDecodeError):
        pytest.skip("not a chat the app reads")
    assert references_of(fast, scenario) == references_of(before, scenario)
