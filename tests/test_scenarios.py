"""Scenario files and transcripts: what loads, and what a bad file is told."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from webapp.core.inputs.library import SCENARIOS_DIR
from webapp.core.inputs.lessons import parse_scenario_toml
from webapp.core.inputs.library import load_library
from webapp.core.inputs.scenarios import ScenarioError
from webapp.core.inputs.transcripts import parse_transcript

MINIMAL = '''
id = "tiny"
title = "Tiny"
lesson = "One request."
system = "You help."

[[tools]]
name = "lookup"

[[chat]]
user = "Hello"

[[chat]]
tool_calls = [{ id = "c1", name = "lookup", arguments = { q = "x" } }]

[[chat]]
tool = "c1"
content = "result"
'''


def problems_of(text: str) -> list[tuple[str, str]]:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario_toml(text, "broken.toml")
    assert str(caught.value).startswith("broken.toml: ")
    return caught.value.problems


def test_a_minimal_scenario_becomes_openai_messages():
    scenario = parse_scenario_toml(MINIMAL, "tiny.toml")
    messages = [item.message for item in scenario.script]
    assert messages[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}],
    }
    assert messages[2] == {"role": "tool", "tool_call_id": "c1", "content": "result"}
    # Ends on a tool result: one call before the assistant message and one at the end.
    assert scenario.call_count == 2
    assert scenario.tools[0]["function"]["name"] == "lookup"


@pytest.mark.parametrize(
    "change, where, what",
    [
        (("[[chat]]\nuser = \"Hello\"", "[[chat]]\nuser = 42"), "chat[0].user", "string"),
        (("id = \"tiny\"", "id = \"Tiny Id!\""), "id", "pattern"),
        (("[[chat]]\ntool = \"c1\"", "[[chat]]\ntool = \"c9\""), "chat[2].tool_call_id", "no matching call"),
        (("name = \"lookup\", arguments", "name = \"missing\", arguments"), "chat[1].tool_calls[0].name", "not declared"),
        (("system = \"You help.\"", ""), "system", "required"),
        (("[[chat]]\nuser = \"Hello\"", "[[chat]]\nspeaker = \"Hello\""), "chat[0]", "user, assistant"),
        (("lesson = \"One request.\"", "lesson = \"One request.\"\ncolour = \"red\""), "colour", "unknown field"),
        (("system = \"You help.\"", "system = \"You help.\"\n[settings]\nwindow = \"big\""), "settings", "window"),
    ],
)
def test_errors_name_the_field_and_what_is_expected(change, where, what):
    old, new = change
    assert old in MINIMAL
    problems = problems_of(MINIMAL.replace(old, new, 1))
    assert any(p_where == where and what in p_what for p_where, p_what in problems) or any(
        where in p_where and what in p_what for p_where, p_what in problems
    ), problems


def test_invalid_toml_says_where():
    problems = problems_of('id = "x"\ntitle = \n')
    assert "line 2" in problems[0][1]


def test_a_call_without_its_result_and_a_reused_id_are_reported():
    text = MINIMAL + '\n[[chat]]\ntool_calls = [{ id = "c1", name = "lookup" }, { id = "c2", name = "lookup" }]\n\n[[chat]]\ntool = "c1"\ncontent = "again"\n'
    problems = dict(problems_of(text))
    assert "used twice" in problems["chat[3].tool_calls[0].id"]
    assert "never gets its tool result" in problems["chat[3].tool_calls"]


def test_one_bad_file_does_not_stop_the_others(tmp_path: Path):
    (tmp_path / "good.toml").write_text(MINIMAL)
    (tmp_path / "bad.toml").write_text(MINIMAL.replace('id = "tiny"', 'id = "bad"').replace("system", "sistem"))
    (tmp_path / "notes.txt").write_text("ignored")
    library = load_library(tmp_path)
    assert list(library.scenarios) == ["tiny"]
    assert [error.source for error in library.errors] == ["bad.toml"]
    assert "sistem" in str(library.errors[0])


def test_duplicate_ids_are_reported(tmp_path: Path):
    (tmp_path / "a.toml").write_text(MINIMAL)
    (tmp_path / "b.toml").write_text(MINIMAL)
    library = load_library(tmp_path)
    assert list(library.scenarios) == ["tiny"]
    assert "already used by a.toml" in str(library.errors[0])


def test_the_built_in_scenarios_all_load():
    library = load_library(SCENARIOS_DIR)
    assert library.errors == []
    assert "bike-shop" in library.scenarios


# --- transcripts -----------------------------------------------------------------------------

TRANSCRIPT = [
    {"role": "system", "content": "You help."},
    {"role": "user", "content": "Find order 1", "name": "dana"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "get", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "a", "content": "order 1"},
    {"role": "assistant", "content": "Here it is.", "refusal": None},
]


@pytest.mark.parametrize("wrap", [lambda m: m, lambda m: {"messages": m, "tools": []}])
def test_a_transcript_is_sent_exactly_as_given(wrap):
    text = json.dumps(wrap(TRANSCRIPT))
    scenario = parse_transcript(text, "paste")
    assert scenario.system == "You help."
    assert [item.message for item in scenario.script] == TRANSCRIPT[1:]
    assert [list(item.message) for item in scenario.script] == [list(m) for m in TRANSCRIPT[1:]], "same keys, same order"
    assert scenario.id == parse_transcript(text, "again").id, "same content, same id"


@pytest.mark.parametrize(
    "messages, where, what",
    [
        ([{"role": "tool", "tool_call_id": "x", "content": "orphan"}], "messages[0].tool_call_id", "no matching call"),
        ([{"role": "robot", "content": "hi"}], "messages[0].role", "got 'robot'; accepted: system, developer, user, assistant, tool, function"),
        ([], "messages", "at least 1"),
        ([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}, {"role": "tool", "tool_call_id": "z", "content": "r"}], "messages[2].tool_call_id", "no matching call"),
    ],
)
def test_transcript_errors_name_the_message_and_field(messages, where, what):
    with pytest.raises(ScenarioError) as caught:
        parse_transcript(json.dumps(messages), "paste")
    assert any(p_where == where and what in p_what for p_where, p_what in caught.value.problems), caught.value.problems


def test_not_json_is_said_plainly():
    with pytest.raises(ScenarioError, match="not valid JSON"):
        parse_transcript("{oops", "paste")
