"""Scenario files and transcripts broken in every way we could think of: each gives a clear
error naming the file and the field, none crashes the loader or stops the other files."""

from __future__ import annotations

import json

import pytest

from bench.transcript import generate_transcript
from webapp.core.engine.replay import replay
from webapp.core.inputs.library import load_library
from webapp.core.inputs.scenarios import MAX_NESTING
from webapp.core.inputs.transcripts import parse_transcript
from webapp.core.settings import Settings

HEAD = 'id = "broken"\ntitle = "T"\nlesson = "L"\nsystem = "S"\n'
TOOL = '[[tools]]\nname = "f"\n'
CALL = '[[chat]]\nuser = "u"\n[[chat]]\ntool_calls = [{ id = "c", name = "f" }]\n[[chat]]\ntool = "c"\ncontent = "r"\n'


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def transcript(*messages) -> str:
    return json.dumps(list(messages))


USER = {"role": "user", "content": "u"}


def call(call_id="c", name="f", arguments="{}"):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# (file name, content, where the error points, what it says)
BROKEN = [
    # TOML scenarios
    ("syntax.toml", HEAD + "chat = [", "", "not valid TOML"),
    ("nul.toml", HEAD.replace('"S"', '"S\x00"'), "", "not valid TOML"),
    ("deep-array.toml", HEAD + "x = " + nested(50_000), "", "nested too deep"),
    ("deep-table.toml", HEAD + "x = " + "{a=" * 3000 + "1" + "}" * 3000, "", "nest"),
    ("nested-settings.toml", HEAD + "[settings]\nwindow = " + nested(MAX_NESTING + 5) + "\n" + CALL, "", f"more than {MAX_NESTING} levels"),
    ("no-id.toml", HEAD.replace('id = "broken"\n', "") + CALL, "id", "required field is missing"),
    ("no-chat.toml", HEAD, "chat", "required field is missing"),
    ("empty-chat.toml", HEAD + "chat = []\n", "chat", "at least 1"),
    ("chat-string.toml", HEAD + 'chat = "hello"\n', "chat", "valid list"),
    ("chat-numbers.toml", HEAD + "chat = [1, 2]\n", "chat[0]", "user, assistant"),
    ("user-number.toml", HEAD + "[[chat]]\nuser = 42\n", "chat[0].user", "valid string"),
    ("title-list.toml", HEAD.replace('title = "T"', "title = [1]") + CALL, "title", "valid string"),
    ("title-language.toml", HEAD.replace('title = "T"', 'title = { de = "T" }') + CALL, "title", "'en', 'fr' or 'zh'"),
    ("unknown-role.toml", HEAD + '[[chat]]\nrobot = "beep"\n', "chat[0]", "user, assistant"),
    ("unknown-field.toml", HEAD + 'colour = "red"\n' + TOOL + CALL, "colour", "unknown field"),
    ("orphan-result.toml", HEAD + '[[chat]]\nuser = "u"\n[[chat]]\ntool = "nope"\ncontent = "r"\n', "chat[1].tool_call_id", "no matching call"),
    ("unanswered-call.toml", HEAD + TOOL + '[[chat]]\nuser = "u"\n[[chat]]\ntool_calls = [{ id = "c", name = "f" }]\n[[chat]]\nuser = "again"\n', "chat[1].tool_calls", "never gets its tool result"),
    ("duplicate-ids.toml", HEAD + TOOL + CALL + '[[chat]]\ntool_calls = [{ id = "c", name = "f" }]\n[[chat]]\ntool = "c"\ncontent = "r"\n', "chat[3].tool_calls[0].id", "used twice"),
    ("undeclared-tool.toml", HEAD + CALL, "chat[1].tool_calls[0].name", "not declared"),
    ("arguments-number.toml", HEAD + TOOL + CALL.replace('name = "f" }', 'name = "f", arguments = 5 }'), "chat[1].tool_calls[0].arguments", "valid"),
    ("arguments-not-json.toml", HEAD + TOOL + CALL.replace('name = "f" }', 'name = "f", arguments = "{oops" }'), "chat[1].tool_calls[0].arguments", "not valid JSON"),
    ("arguments-deep.toml", HEAD + TOOL + CALL.replace('name = "f" }', f'name = "f", arguments = "{nested(100_000)}" }}'), "chat[1].tool_calls[0].arguments", "not valid JSON"),
    ("window-text.toml", HEAD + '[settings]\nwindow = "big"\n' + TOOL + CALL, "settings", "window"),
    ("threshold-nan.toml", HEAD + "[settings]\nthreshold = nan\n" + TOOL + CALL, "settings.threshold", "not a number JSON can write"),
    ("parameter-inf.toml", HEAD + '[[tools]]\nname = "f"\nparameters = { type = "object", properties = { n = { type = "number", maximum = inf } } }\n' + CALL, "tools[0].parameters.properties.n.maximum", "not a number JSON can write"),
    ("keep-huge.toml", HEAD + "[settings]\nkeep = 100000000000000000\n" + TOOL + CALL, "settings", "keep"),
    ("fact-too-late.toml", HEAD + TOOL + '[[facts]]\ntext = "u"\nneeded_from_call = 99\n' + CALL, "facts[0].needed_from_call", "model calls"),
    ("bad-id.toml", HEAD.replace('"broken"', '"<script>"') + TOOL + CALL, "id", "pattern"),
    # JSON transcripts
    ("not-json.json", "{oops", "", "not valid JSON"),
    ("deep.json", nested(100_000), "", "not valid JSON"),
    ("deep-inside.json", json.dumps([{"role": "user", "content": "u", "meta": json.loads(nested(MAX_NESTING + 1))}]), "", f"more than {MAX_NESTING} levels"),
    ("number.json", "5", "", "OpenAI chat completions: a JSON list of messages"),
    ("null.json", "null", "", "OpenAI chat completions: a JSON list of messages"),
    ("empty-list.json", "[]", "messages", "at least 1"),
    ("empty-object.json", "{}", "", "expected a transcript"),
        ("message-number.json", transcript(1), "messages[0]", "expected a message object, got a number"),
    ("unknown-role.json", transcript({"role": "robot", "content": "beep"}), "messages[0].role", "accepted: system, developer, user, assistant, tool, function"),
    ("no-role.json", transcript({"content": "u"}), "messages[0].role", "got nothing; accepted"),
    ("content-number.json", transcript({"role": "user", "content": 5}), "messages[0].content", "expected a string or a list of content parts, got a number"),
    ("tool-calls-string.json", transcript(USER, {"role": "assistant", "tool_calls": "x"}), "messages[1].tool_calls", "expected a list of tool calls, got a string"),
    ("orphan-result.json", transcript(USER, {"role": "tool", "tool_call_id": "x", "content": "r"}), "messages[1].tool_call_id", "no matching call"),
    ("result-without-id.json", transcript(USER, {"role": "assistant", "tool_calls": [call()]}, {"role": "tool", "content": "r"}), "messages[2].tool_call_id", "required field is missing"),
    ("call-without-id.json", transcript(USER, {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}), "messages[1].tool_calls[0].id", "required field is missing"),
    ("call-without-name.json", transcript(USER, {"role": "assistant", "tool_calls": [{"id": "c", "function": {}}]}, {"role": "tool", "tool_call_id": "c", "content": "r"}), "messages[1].tool_calls[0].function.name", "required field is missing"),
    ("arguments-object.json", transcript(USER, {"role": "assistant", "tool_calls": [call(arguments={"a": 1})]}, {"role": "tool", "tool_call_id": "c", "content": "r"}), "messages[1].tool_calls[0].function.arguments", "JSON string"),
    ("duplicate-ids.json", transcript(USER, {"role": "assistant", "tool_calls": [call(), call()]}, {"role": "tool", "tool_call_id": "c", "content": "r"}), "messages[1].tool_calls[1].id", "used twice"),
    ("unanswered.json", transcript(USER, {"role": "assistant", "tool_calls": [call()]}, USER), "messages[1].tool_calls", "never gets its tool result"),
    ("tools-string.json", json.dumps({"messages": [USER], "tools": "x"}), "tools", "expected a list of tool definitions, got a string"),
    ("huge-number.json", '[{"role": "user", "content": "u", "n": ' + "9" * 5000 + "}]", "", "not valid JSON"),
]


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    directory = tmp_path_factory.mktemp("broken")
    for name, content, _, _ in BROKEN:
        (directory / name).write_text(content, encoding="utf-8")
    (directory / "not-utf8.toml").write_bytes(b'id = "x"\ntitle = "\xff\xfe"\n')
    (directory / "folder.toml").mkdir()
    (directory / "good.json").write_text(transcript(USER, {"role": "assistant", "content": "ok"}))
    return load_library(directory)


def test_the_good_file_still_loads_beside_the_broken_ones(library):
    assert list(library.scenarios) == ["good"]
    assert sorted(error.source for error in library.errors) == sorted([name for name, *_ in BROKEN] + ["not-utf8.toml", "folder.toml"])


@pytest.mark.parametrize("name, content, where, what", BROKEN, ids=[case[0] for case in BROKEN])
def test_each_broken_file_is_named_with_the_field_and_the_problem(library, name, content, where, what):
    error = next(error for error in library.errors if error.source == name)
    assert str(error).startswith(f"{name}: ")
    assert any(p_where.startswith(where) and what in p_what for p_where, p_what in error.problems), error.problems
    assert len(str(error)) < 2000, "an error message stays readable, whatever the input's size"


@pytest.mark.parametrize("name", ["not-utf8.toml", "folder.toml"])
def test_an_unreadable_file_is_named(library, name):
    error = next(error for error in library.errors if error.source == name)
    assert "cannot be read" in str(error)


def test_ten_thousand_messages_load_and_replay():
    text = json.dumps(generate_transcript(10_000))
    scenario = parse_transcript(text, "long.json")
    assert len(scenario.script) == 10_000
    result = replay(scenario, Settings(strategy="truncate-drop", window=32_000, counter="o200k_base"))
    assert len(result.calls) == scenario.call_count
    assert not any(call.problems for call in result.calls), "truncate-drop keeps every request valid"


def test_nul_bytes_and_control_characters_in_a_transcript_are_kept_as_given():
    message = {"role": "user", "content": "a\x00b\u202ec\x1b[31m"}
    scenario = parse_transcript(transcript(message), "nul.json")
    assert scenario.script[0].message == message
    assert replay(scenario).calls[0].request(scenario.prefix) == [message], "no system message is invented"
