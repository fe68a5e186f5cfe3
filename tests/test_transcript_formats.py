"""Transcripts in every common format, read from real recorded requests (tests/fixtures/
transcripts/SOURCES.md), sent exactly as they hold, through the core, the CLI and the web."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.generators import scenarios
from webapp.cli import main
from webapp.core.engine.replay import replay
from webapp.core.inputs.scenarios import ScenarioError
from webapp.core.inputs.transcripts import parse_transcript
from webapp.core.settings import Settings

FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"
# file: (format, messages ahead of the first request, messages of the script)
SAMPLES = {
    "chat-tool-call.json": ("openai-chat", 1, 3),
    "chat-legacy-functions.json": ("openai-chat", 1, 4),
    "chat-few-shot-cookbook.json": ("openai-chat", 5, 1),
    "responses-reasoning-function-call.json": ("openai-responses", 0, 3),
    "anthropic-parallel-tools.json": ("anthropic-messages", 1, 6),
    "anthropic-image-url.json": ("anthropic-messages", 0, 1),
    "anthropic-thinking.json": ("anthropic-messages", 0, 3),
    "swe-agent-function-calling-simple.traj.json": ("swe-agent", 1, 11),
}
LABELS = {
    "openai-chat": "OpenAI chat completions",
    "openai-responses": "OpenAI Responses API input items",
    "anthropic-messages": "Anthropic Messages",
    "swe-agent": "SWE-agent trajectory",
}
STRATEGIES = ("none", "truncate", "drop", "truncate-drop", "summarize")


def sample(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def transcript(messages, **top) -> str:
    return json.dumps({"messages": messages, **top} if top else messages)


def requests(text: str, **chosen) -> list[list[dict]]:
    scenario = parse_transcript(text, "paste")
    return [call.request(scenario.prefix) for call in replay(scenario, Settings(**chosen)).calls]


# --- Every format, from real samples ----------------------------------------------------------


@pytest.mark.parametrize("name", SAMPLES)
def test_each_real_sample_is_read_as_its_format_and_replays_valid_requests(name):
    expected_format, prefix, script = SAMPLES[name]
    scenario = parse_transcript(sample(name), name)
    assert scenario.origin.format == expected_format
    assert (len(scenario.prefix), len(scenario.script)) == (prefix, script)
    for strategy in STRATEGIES:
        result = replay(scenario, Settings(strategy=strategy, window=600, keep=1, counter="o200k_base"))
        assert all(call.valid for call in result.calls), (strategy, [call.problems for call in result.calls])


def test_a_chat_transcript_is_sent_exactly_as_recorded():
    recorded = json.loads(sample("chat-tool-call.json"))
    scenario = parse_transcript(sample("chat-tool-call.json"), "chat")
    last = replay(scenario).calls[-1]
    assert last.request(scenario.prefix) == recorded["messages"]
    assert scenario.tools == recorded["tools"]


def test_responses_items_become_the_chat_messages_they_stand_for():
    scenario = parse_transcript(sample("responses-reasoning-function-call.json"), "responses")
    messages = [item.message for item in scenario.script]
    assert messages[0] == {"role": "user", "content": "What is the meaning of life?"}
    assert messages[1]["tool_calls"] == [
        {"id": "call_cp3x6W9eeyMIryJUNhgMaP5w", "type": "function", "function": {"name": "get_meaning_of_life", "arguments": "{}"}}
    ]
    assert messages[2] == {"role": "tool", "tool_call_id": "call_cp3x6W9eeyMIryJUNhgMaP5w", "content": "42"}
    assert scenario.tools[0]["function"]["name"] == "get_meaning_of_life"
    assert "description" not in scenario.tools[0]["function"], "a null description is no description"
    assert any(note.startswith("Reasoning items left out") and values == {"count": 1} for note, values in scenario.origin.notes)


def test_responses_calls_of_one_turn_join_its_text_and_instructions_lead():
    items = {
        "instructions": "Be brief.",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris and Oslo?"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking both."}]},
            {"type": "function_call", "call_id": "a", "name": "weather", "arguments": '{"city":"Paris"}'},
            {"type": "function_call", "call_id": "b", "name": "weather", "arguments": '{"city":"Oslo"}'},
            {"type": "function_call_output", "call_id": "a", "output": "12 C"},
            {"type": "function_call_output", "call_id": "b", "output": [{"type": "input_text", "text": "3 C"}]},
        ],
    }
    scenario = parse_transcript(json.dumps(items), "responses")
    assert scenario.prefix == ({"role": "system", "content": "Be brief."},)
    reply = scenario.script[1].message
    assert reply["content"] == [{"type": "text", "text": "Checking both."}]
    assert [call["id"] for call in reply["tool_calls"]] == ["a", "b"]
    assert scenario.script[3].message["content"] == [{"type": "text", "text": "3 C"}]


def test_anthropic_blocks_become_tool_calls_and_tool_messages():
    recorded = json.loads(sample("anthropic-parallel-tools.json"))
    scenario = parse_transcript(sample("anthropic-parallel-tools.json"), "anthropic")
    assert scenario.prefix == ({"role": "system", "content": recorded["system"]},)
    reply = scenario.script[1].message
    uses = [block for block in recorded["messages"][1]["content"] if block["type"] == "tool_use"]
    assert [call["id"] for call in reply["tool_calls"]] == [block["id"] for block in uses]
    assert [json.loads(call["function"]["arguments"]) for call in reply["tool_calls"]] == [block["input"] for block in uses]
    results = [item.message for item in scenario.script[2:]]
    assert [m["role"] for m in results] == ["tool"] * 4
    assert [m["tool_call_id"] for m in results] == [block["id"] for block in uses]
    assert scenario.tools[0]["function"]["parameters"] == recorded["tools"][0]["input_schema"]


def test_anthropic_images_thinking_and_mixed_user_turns():
    image = parse_transcript(sample("anthropic-image-url.json"), "image").script[0].message
    assert image["content"][1] == {"type": "image_url", "image_url": {"url": json.loads(sample("anthropic-image-url.json"))["messages"][0]["content"][1]["source"]["url"]}}
    thinking = parse_transcript(sample("anthropic-thinking.json"), "thinking")
    reply = thinking.script[1].message
    assert [part["type"] for part in reply["content"]] == ["text"], "thinking is left out"
    mixed = [
        {"role": "user", "content": "Look at it"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "shot", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": [
                {"type": "text", "text": "taken"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            ]},
            {"type": "text", "text": "What do you see?"},
        ]},
    ]
    scenario = parse_transcript(json.dumps({"system": "You see.", "messages": mixed}), "mixed")
    tool, user = scenario.script[2].message, scenario.script[3].message
    assert tool == {"role": "tool", "tool_call_id": "t1", "content": [{"type": "text", "text": "taken"}]}
    assert user["content"] == [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        {"type": "text", "text": "What do you see?"},
    ]


def test_a_swe_agent_trajectory_sends_what_swe_agent_sends():
    recorded = json.loads(sample("swe-agent-function-calling-simple.traj.json"))["history"]
    scenario = parse_transcript(sample("swe-agent-function-calling-simple.traj.json"), "swe")
    sent = [*scenario.prefix, *(item.message for item in scenario.script)]
    assert [m["role"] for m in sent] == [m["role"] for m in recorded]
    assert [m["content"] for m in sent] == [m["content"] for m in recorded]
    for message, original in zip(sent, recorded):
        assert not {"agent", "message_type", "thought", "action", "tool_call_ids"} & set(message)
        if original["role"] == "tool":
            assert message["tool_call_id"] == original["tool_call_ids"][0]


def test_swe_agent_demonstrations_are_part_of_the_prefix():
    history = [
        {"role": "system", "content": "You fix bugs.", "agent": "main", "message_type": "system_prompt"},
        {"role": "user", "content": "Here is a demonstration...", "is_demo": True, "agent": "main", "message_type": "demonstration"},
        {"role": "user", "content": "Fix issue 7.", "agent": "main", "message_type": "observation"},
        {"role": "assistant", "content": "Done.", "agent": "main", "message_type": "action"},
    ]
    scenario = parse_transcript(json.dumps({"history": history, "info": {}}), "demo")
    assert [m["content"] for m in scenario.prefix] == ["You fix bugs.", "Here is a demonstration..."]
    assert scenario.script[0].message == {"role": "user", "content": "Fix issue 7."}


@pytest.mark.parametrize(
    "raw, where, what",
    [
        ({"history": [{"role": "user", "content": "u"}, {"role": "tool", "content": "r", "tool_call_ids": ["a", "b"]}]}, "history[1].tool_call_ids", "exactly one call id"),
        ({"input": [{"type": "web_search_call", "id": "w"}]}, "input[0].type", "accepted: message, function_call, function_call_output, reasoning"),
        ({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}]}, "input[0].arguments", "expected a string"),
        ({"input": [{"role": "user", "content": "u"}, {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}]}, "input[1]", "never gets its tool result"),
        ({"system": "s", "messages": [{"role": "user", "content": [{"type": "document", "source": {}}]}]}, "messages[0].content[0].type", "accepted: text, image, tool_result"),
        ({"system": "s", "messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": [1]}]}]}, "messages[0].content[0].input", "expected an object of arguments"),
        ({"system": "s", "messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "nope", "content": "r"}]}]}, "messages[0]", "no matching call"),
        ({"system": 5, "messages": [{"role": "user", "content": "u"}]}, "system", "a string or a list of text blocks"),
    ],
)
def test_each_format_names_the_place_of_a_problem_in_its_own_terms(raw, where, what):
    with pytest.raises(ScenarioError) as caught:
        parse_transcript(json.dumps(raw), "paste")
    assert any(p_where == where and what in p_what for p_where, p_what in caught.value.problems), caught.value.problems


# --- Exactly what the transcript holds --------------------------------------------------------

USER = {"role": "user", "content": "hello"}


def test_no_system_message_is_invented():
    # API-checked figure (hmarr/openai-chat-tokens, tests/token-counts.test.ts): 8 prompt
    # tokens for this one message on gpt-3.5/gpt-4; an added empty system message made it 12.
    scenario = parse_transcript(transcript([USER]), "paste")
    call = replay(scenario, Settings(counter="cl100k_base")).calls[0]
    assert call.request(scenario.prefix) == [USER]
    assert call.tokens == 8


def test_a_developer_message_stays_first_with_nothing_before_it():
    messages = [{"role": "developer", "content": "Answer in French."}, USER, {"role": "assistant", "content": "Bonjour"}]
    assert requests(transcript(messages)) == [messages[:2]]


def test_a_system_message_in_the_middle_stays_where_it_is():
    messages = [
        {"role": "system", "content": "s"}, USER, {"role": "assistant", "content": "hi"},
        {"role": "system", "content": "The user is now on the paid plan."}, {"role": "user", "content": "and now?"},
        {"role": "assistant", "content": "sure"},
    ]
    assert requests(transcript(messages))[-1] == messages[:5]


def test_a_system_only_transcript_is_one_request():
    # The cookbook's system message alone: 25 prompt tokens on gpt-3.5/gpt-4 (hmarr/openai-chat-tokens).
    system = {"role": "system", "content": "You are a helpful, pattern-following assistant that translates corporate jargon into plain English."}
    scenario = parse_transcript(transcript([system]), "paste")
    result = replay(scenario, Settings(counter="cl100k_base"))
    assert [call.request(scenario.prefix) for call in result.calls] == [[system]]
    assert result.calls[0].tokens == 25
    assert result.calls[0].request_number == result.request_count == 1


def test_an_assistant_first_transcript_gets_no_empty_first_call():
    messages = [{"role": "assistant", "content": "Hi! What can I do for you?"}, USER, {"role": "assistant", "content": "Hello!"}]
    assert requests(transcript(messages)) == [messages[:2]]


def test_legacy_function_calling_is_accepted_and_sent_with_its_functions(client):
    recorded = json.loads(sample("chat-legacy-functions.json"))
    scenario = parse_transcript(sample("chat-legacy-functions.json"), "legacy")
    assert scenario.tools_field == "functions" and scenario.tools == recorded["functions"]
    assert replay(scenario).calls[-1].request(scenario.prefix) == recorded["messages"]
    call = [USER, {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}}, {"role": "function", "name": "f", "content": "{}"}]
    assert requests(transcript(call, functions=[{"name": "f", "parameters": {"type": "object", "properties": {}}}]))[-1] == call
    link = client.post("/transcripts", data={"transcript": sample("chat-legacy-functions.json")}).headers["Location"]
    body = client.get(link.split("?")[0] + "/request.json").get_json()
    assert body == {"messages": recorded["messages"], "functions": recorded["functions"]}


# --- Few-shot and assistant-first histories ---------------------------------------------------


def few_shot_chat(exchanges: int) -> list[dict]:
    messages = json.loads(sample("chat-few-shot-cookbook.json"))[:-1]
    for number in range(exchanges):
        messages += [{"role": "user", "content": f"Jargon number {number}: " + "leverage synergies " * 40}, {"role": "assistant", "content": "Plain words. " * 30}]
    return messages


@pytest.mark.parametrize("strategy", ["drop", "summarize", "truncate-drop"])
def test_few_shot_examples_are_never_dropped_or_summarized(strategy):
    messages = few_shot_chat(6)
    scenario = parse_transcript(transcript(messages), "few-shot")
    assert len(scenario.prefix) == 5 and scenario.script[0].message == messages[5]
    result = replay(scenario, Settings(strategy=strategy, window=1200, keep=1, counter="o200k_base"))
    assert any(call.compaction and call.compaction.changed for call in result.calls)
    for call in result.calls:
        request = call.request(scenario.prefix)
        assert request[:5] == messages[:5], "the examples are sent first, untouched"
        assert request[5] == messages[5], "the first real request stays right after them"
        assert "(an exchange with no text)" not in json.dumps(request)


@settings(max_examples=60, deadline=None)
@given(
    scenario=scenarios(min_requests=2),
    examples=st.lists(st.sampled_from(["example_user", "example_assistant"]), max_size=4),
    opening=st.booleans(),
    strategy=st.sampled_from(STRATEGIES),
    window=st.integers(300, 4000),
)
def test_the_prefix_is_sent_whole_and_first_whatever_the_strategy(scenario, examples, opening, strategy, window):
    prefix = (
        *scenario.prefix,
        *({"role": "system", "name": name, "content": f"{name} text"} for name in examples),
        *([{"role": "assistant", "content": "Hi, how can I help?"}] if opening else []),
    )
    scenario = replace(scenario, prefix=prefix)
    result = replay(scenario, Settings(strategy=strategy, window=window, keep=1, counter="o200k_base"))
    script_ids = {item.id for item in scenario.script}
    for call in result.calls:
        assert tuple(call.request(prefix)[: len(prefix)]) == prefix
        if call.compaction:
            assert set(call.compaction.dropped + call.compaction.summarized) <= script_ids
        if call.blocks:
            assert call.blocks[0].id == "m1", "the first real request is kept"


# --- The CLI and the web, for every format ----------------------------------------------------


@pytest.mark.parametrize("name", SAMPLES)
def test_the_cli_says_which_format_it_read(name, capsys):
    path = str(FIXTURES / name)
    assert main(["replay", path]) == 0
    assert f"read as: {LABELS[SAMPLES[name][0]]}" in capsys.readouterr().out.splitlines()[0]
    assert main(["replay", path, "--json", "--counter", "o200k_base"]) == 0
    read_as = json.loads(capsys.readouterr().out)["read_as"]
    assert read_as["format"] == SAMPLES[name][0]
    if read_as["format"] == "anthropic-messages":
        assert any("not with Claude's tokenizer" in note and "o200k_base" in note for note in read_as["notes"])


@pytest.mark.parametrize("name", SAMPLES)
def test_every_format_pasted_or_uploaded_says_what_was_read(client, name):
    text = sample(name)
    links = set()
    for data in ({"transcript": text}, {"file": (io.BytesIO(text.encode()), name)}):
        response = client.post("/transcripts", data=data, content_type="multipart/form-data")
        assert response.status_code == 303, response.get_data(as_text=True)[:500]
        links.add(response.headers["Location"])
    assert len(links) == 1, "paste and upload of the same bytes are the same link"
    page = client.get(links.pop()).get_data(as_text=True)
    assert "Read as:" in page and LABELS[SAMPLES[name][0]] in page
    scenario_id = parse_transcript(text, name).id
    data = client.get(f"/play/{scenario_id}.json").get_json()
    assert data["read_as"]["format"] == SAMPLES[name][0]
    request = client.get(f"/play/{scenario_id}/request.json?call={data['calls']}").get_json()
    scenario = parse_transcript(text, name)
    assert request["messages"] == replay(scenario).calls[-1].request(scenario.prefix)


def test_the_anthropic_tokenizer_sentence_is_in_the_readers_language(client):
    link = client.post("/transcripts", data={"transcript": sample("anthropic-parallel-tools.json")}).headers["Location"]
    scenario_id = link.split("/play/")[1].split("?")[0]
    english = client.get(f"/play/{scenario_id}?counter=cl100k_base").get_data(as_text=True)
    assert "not with Claude&#39;s tokenizer" in english and "cl100k_base" in english
    for lang in ("fr", "zh"):
        page = client.get(f"/play/{scenario_id}?lang={lang}").get_data(as_text=True)
        assert "Claude" in page and "not with Claude" not in page


def test_a_swe_agent_traj_file_replays_from_the_command_line(tmp_path, capsys):
    path = tmp_path / "function_calling_simple.traj"
    path.write_text(sample("swe-agent-function-calling-simple.traj.json"), encoding="utf-8")
    assert main(["compare", str(path)]) == 0
    assert capsys.readouterr().out.startswith("read as: SWE-agent trajectory")


def test_the_message_cap_counts_the_prefix_too(client, app):
    cap = app.config["TRANSCRIPT_MAX_MESSAGES"]
    examples = [{"role": "system", "name": "example_user", "content": str(i)} for i in range(cap)]
    response = client.post("/transcripts", data={"transcript": json.dumps([*examples, USER])})
    assert response.status_code == 400
    assert f"{cap + 1:,} messages; at most {cap:,}" in response.get_data(as_text=True)


def test_a_pasted_transcript_is_titled_in_the_readers_language(client):
    link = client.post("/transcripts", data={"transcript": transcript([USER])}).headers["Location"]
    scenario_id = link.split("/play/")[1].split("?")[0]
    for lang, title in (("en", "Transcript: “hello”"), ("fr", "Transcription\u00a0: «\u00a0hello\u00a0»"), ("zh", "对话记录：“hello”")):
        page = client.get(f"/play/{scenario_id}?lang={lang}").get_data(as_text=True)
        assert title in page
