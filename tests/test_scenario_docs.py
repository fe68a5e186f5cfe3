"""docs/scenarios.md documents every field of the scenario format, and its example works."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from webapp.core.model import Budget
from webapp.core.engine.replay import replay
from webapp.core.inputs.lessons import (
    AssistantEntry,
    ContextEntry,
    FactSpec,
    NarrationSpec,
    NarrationWhen,
    ScenarioFile,
    ToolCallSpec,
    ToolEntry,
    ToolSpec,
    UserEntry,
    parse_scenario_toml,
)
from webapp.core.engine.strategy_catalog import STRATEGIES
from webapp.core.settings import Settings, parse_settings
from webapp.core.analysis.story import narration_at

DOC = (Path(__file__).resolve().parents[1] / "docs" / "scenarios.md").read_text(encoding="utf-8")
MODELS = [
    ScenarioFile, Settings, ToolSpec, FactSpec, ToolCallSpec, UserEntry, AssistantEntry, ToolEntry, ContextEntry,
    NarrationSpec, NarrationWhen, Budget,
]


def section_of(model: type[BaseModel]) -> str:
    """The table right after a paragraph naming the model (*UserEntry*:), or else the text from
    the heading that names it to the next heading of the same level."""
    mention = re.search(rf"\*{model.__name__}\*:\s*\n", DOC)
    if mention:
        rest = DOC[mention.end():]
        end = re.search(r"\n\n(?!\|)", rest)
        return rest[: end.start()] if end else rest
    heading = re.search(rf"^(#+) .*\b{model.__name__}\b.*$", DOC, re.M)
    assert heading, f"docs/scenarios.md has no section for {model.__name__}"
    level = heading.group(1)
    rest = DOC[heading.end():]
    end = re.search(rf"^{level} ", rest, re.M)
    return rest[: end.start()] if end else rest


def nested_models(model: type[BaseModel]) -> set[type[BaseModel]]:
    found = set()
    for info in model.model_fields.values():
        for candidate in re.findall(r"\b(\w+)\b", repr(info.annotation)):
            for known in MODELS:
                if known.__name__ == candidate:
                    found.add(known)
    return found


def test_every_model_of_the_schema_is_listed():
    reachable, todo = set(), [ScenarioFile, ToolEntry, UserEntry, AssistantEntry, ContextEntry]
    while todo:
        model = todo.pop()
        if model not in reachable:
            reachable.add(model)
            todo += nested_models(model)
    assert reachable | {Settings} == set(MODELS)


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.__name__)
def test_every_field_is_documented_in_its_models_section(model):
    section = section_of(model)
    missing = [name for name in model.model_fields if f"`{name}`" not in section]
    assert not missing, f"docs/scenarios.md, section {model.__name__}: document {', '.join(missing)}"


def test_every_strategy_and_counter_is_named():
    section = section_of(Settings)
    for name in list(STRATEGIES) + ["estimate", "cl100k_base", "o200k_base"]:
        assert f"`{name}`" in section, name


def test_the_worked_example_loads_and_teaches_what_the_doc_says():
    example = re.search(r"```toml\n(id = .*?)```", DOC, re.S).group(1)
    scenario = parse_scenario_toml(example, "lost-ticket.toml")
    forgetful = replay(scenario)
    assert forgetful.calls[2].compaction is not None
    assert [fact.present for fact in forgetful.calls[2].facts] == [False]
    careful = replay(scenario, parse_settings({"keep_facts": True}, scenario.settings))
    assert [fact.present for fact in careful.calls[2].facts] == [True]
    assert "Tick Keep facts" in narration_at(forgetful, 3).text()
    assert "word for word" in narration_at(careful, 3).text()
