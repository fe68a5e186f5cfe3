"""Agents' own session files, as they come off disk (tests/fixtures/sessions/, SOURCES.md):
each is recognised as its own format and no other, read through the command line, the upload
and the paste alike, with the usage and compactions it recorded; a refusal names the format
and groups its repeated problems."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webapp.cli import main
from webapp.core.inputs import formats
from webapp.core.inputs.formats import FORMATS, FormatError, detect, import_transcript, parse
from webapp.core.inputs.formats.common import Format, parse_text
from webapp.core.inputs.scenarios import ScenarioError, problem_groups
from webapp.core.inputs.transcripts import parse_transcript

SESSIONS = Path(__file__).parent / "fixtures" / "sessions"
# file → (format, assistant calls, recorded usages, recorded compactions, model)
READ = {
    "claude-code/vibecodingtracker-claude-code-v1.0.95.jsonl": ("claude-code", 31, 31, 0, "claude-sonnet-4-20250514"),
    "claude-code/spotter-ae4a77f8-lines-1300-1700-compaction.jsonl": ("claude-code", 40, 40, 1, "claude-opus-4-6"),
    "claude-code/spotter-ae4a77f8-agent-acompact-946d2b.jsonl": ("claude-code", 1, 1, 0, "claude-opus-4-6"),
    "codex/empire-of-bits-codex-session-a.jsonl": ("codex", 7, 7, 0, "gpt-5.4"),
    "codex/vibecodingtracker-codex-rollout.jsonl": ("codex", 19, 19, 0, "aide-gpt-5"),  # cli 0.39 writes each token_count ahead of its reply
    "gemini-cli/vibecodingtracker-session.json": ("gemini-cli", 3, 3, 0, "gemini-3.1-pro-preview-customtools"),
    "gemini-cli/vibecodingtracker-session.jsonl": ("gemini-cli", 6, 6, 0, "gemini-3.1-pro-preview"),
    "gemini-cli/aim-session-2026-03-17T22-24-a41f5459.json": ("gemini-cli", 37, 37, 0, "gemini-3-flash-preview"),
    "gemini-api/generated-generatecontent-request.json": ("gemini-api", 2, 0, 0, None),
    "openhands/trajectory-basic_gui_mode.json": ("openhands", 5, 4, 0, "claude-3-5-sonnet-20241022"),
    "openhands/multi_swe_bench-output-lines-1-2.jsonl": ("openhands", 23, 23, 0, "meta-llama/llama-4-maverick"),
    "openhands/trajectory-wrong_initial_state.json": ("openhands", 4, 4, 0, "claude-3-5-sonnet-20241022"),
    "cline/generated-api_conversation_history.json": ("cline", 3, 0, 0, None),
    "cline/generated-native-tools-api_conversation_history.json": ("cline", 4, 4, 0, "claude-sonnet-4-5-20250929"),
    "ollama/generated-chat-request-with-tools.json": ("ollama", 2, 0, 0, "llama3.2"),
    "ollama/ollama-bash-lib-qwen2.5vl-3b-chat.jsonl": ("ollama-exchanges", 2, 2, 0, "qwen2.5vl:3b"),
    "ollama/ollama-bash-lib-mistral-7b-instruct-chat.jsonl": ("ollama-exchanges", 2, 2, 0, "mistral:7b-instruct"),
    "ollama/ollama-bash-lib-granite3.3-8b-chat.jsonl": ("ollama-exchanges", 2, 2, 0, "granite3.3:8b"),
    "ollama/generated-exchanges-streamed-tools.jsonl": ("ollama-exchanges", 2, 2, 0, "qwen3:8b"),
    "ollama/generated-exchanges-new-tokens-only.json": ("ollama-exchanges", 2, 0, 0, "llama3.1:8b"),
    "aider/mozgoslav.aider.chat.history.md": ("aider", 9, 7, 0, "lm_studio/qwen3.6-35b-a3b-uncensored-hauhaucs-aggressive"),
    "aider/monochromatic.aider.chat.history.md": ("aider", 1, 0, 0, "openrouter/qwen/qwen3-235b-a22b"),
    "langchain/generated-messages_to_dict.json": ("langchain", 4, 4, 0, "gpt-4o-2024-08-06"),
    "langchain/generated-dumpd-state.json": ("langchain", 4, 4, 0, "gpt-4o-2024-08-06"),
    "vercel-ai/generated-model-messages-v5.json": ("vercel-ai", 5, 0, 0, None),
}
RESPONSES = ["ollama/semantic-kernel-chat_completion_function_call_response.json", "ollama/semantic-kernel-chat_completion_multiple_function_calls_test_response.json"]


def text(name: str) -> str:
    return (SESSIONS / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("name", READ)
def test_each_session_is_detected_as_its_own_format_and_no_other(name):
    expected = READ[name][0]
    found = detect(parse(text(name)))
    assert found.name == expected
    others = {other: READ[other][0] for other in READ if READ[other][0] != expected}
    for other, its_format in others.items():
        assert detect(parse(text(other))).name == its_format  # and so never this one


FIXTURES = Path(__file__).parent / "fixtures"
EVERY_FIXTURE = sorted(str(path.relative_to(FIXTURES)) for path in FIXTURES.glob("[st]*/**/*.*") if path.name != "SOURCES.md")


@pytest.mark.parametrize("name", EVERY_FIXTURE)
def test_each_fixture_reads_the_same_whether_the_keys_no_format_reads_are_parsed_or_not(name):
    """The keys a format declares it reads are all its test and its reader look at: leaving
    the others unparsed (a request's model and temperature, a trajectory's info) reads every
    session, transcript and trajectory to the same messages, tools, notes and usage."""
    def outcome(raw):
        try:
            return import_transcript(raw)
        except ValueError as error:
            return type(error).__name__, str(error)
    content = (FIXTURES / name).read_text(encoding="utf-8")
    assert outcome(parse(content)) == outcome(parse_text(content))


@pytest.mark.parametrize("name", READ)
def test_each_session_keeps_its_calls_recorded_usage_compactions_and_model(name):
    expected_format, calls, usages, compactions, model = READ[name]
    imported = import_transcript(parse(text(name)))
    assert imported.format == expected_format
    assert sum(message["role"] == "assistant" for message in imported.messages) == calls
    assert len(imported.usage) == usages
    assert [usage.call for usage in imported.usage] == sorted({usage.call for usage in imported.usage})
    assert all(1 <= usage.call <= calls and usage.input_tokens > 0 for usage in imported.usage)
    assert len(imported.compactions) == compactions
    assert imported.model == model


def test_claude_code_compaction_is_kept_with_its_summary_and_the_call_it_came_before():
    imported = import_transcript(parse(text("claude-code/spotter-ae4a77f8-lines-1300-1700-compaction.jsonl")))
    (compaction,) = imported.compactions
    assert (compaction.trigger, compaction.tokens_before) == ("manual", 142431)
    assert compaction.summary.startswith("This session is being continued from a previous conversation")
    # The boundary is file line 1481 (line 182 of the cut): the calls before it are the ones recorded before it.
    assert compaction.source == "line 182"
    assert [usage.source for usage in imported.usage if usage.call < compaction.before_call][-1] < "line 182"
    # The summary is not a message: the replay keeps the whole history.
    assert not any("continued from a previous conversation" in str(message.get("content")) for message in imported.messages)


def test_claude_code_parallel_results_hanging_off_the_chain_are_put_back_after_their_reply():
    lines = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s", "message": {"role": "user", "content": "go"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s", "message": {"id": "m1", "role": "assistant", "content": [{"type": "tool_use", "id": "A", "name": "Read", "input": {}}]}},
        {"type": "assistant", "uuid": "a2", "parentUuid": "a1", "sessionId": "s", "message": {"id": "m1", "role": "assistant", "content": [{"type": "tool_use", "id": "B", "name": "Read", "input": {}}]}},
        {"type": "user", "uuid": "r1", "parentUuid": "a1", "sessionId": "s", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "A", "content": "a"}]}},
        {"type": "progress", "uuid": "p1", "parentUuid": "a2", "sessionId": "s"},
        {"type": "user", "uuid": "r2", "parentUuid": "p1", "sessionId": "s", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "B", "content": "b"}]}},
        {"type": "user", "uuid": "x", "parentUuid": "u1", "sessionId": "s", "isSidechain": True, "message": {"role": "user", "content": "sub"}},
    ]
    imported = import_transcript(parse("\n".join(json.dumps(line) for line in lines)))
    assert [(m["role"], m.get("tool_call_id")) for m in imported.messages] == [("user", None), ("assistant", None), ("tool", "A"), ("tool", "B")]
    assert [call["id"] for call in imported.messages[1]["tool_calls"]] == ["A", "B"]
    notes = dict(imported.notes)
    assert any("Sub-agent lines left out" in note and values == {"count": 1} for note, values in notes.items())


@given(st.lists(st.sampled_from(["read", "write", "list"]), min_size=1, max_size=6))
def test_ollama_calls_without_ids_are_paired_with_their_results_in_order(names):
    body = {
        "model": "llama3.2",
        "messages": [
            {"role": "user", "content": "do it"},
            {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": name, "arguments": {"n": i}}} for i, name in enumerate(names)]},
            *({"role": "tool", "content": f"result {i}"} for i in range(len(names))),
        ],
        "options": {"temperature": 0},
    }
    imported = import_transcript(body)
    calls = imported.messages[1]["tool_calls"]
    results = imported.messages[2:]
    assert [result["tool_call_id"] for result in results] == [call["id"] for call in calls]
    assert [json.loads(call["function"]["arguments"]) for call in calls] == [{"n": i} for i in range(len(names))]
    assert len({call["id"] for call in calls}) == len(names)


def test_ollama_accepts_a_null_where_a_field_is_optional():
    imported = import_transcript(parse(text("ollama/generated-chat-request-with-tools.json")))
    assert "description" not in imported.tools[0]["function"]


@pytest.mark.parametrize("name", RESPONSES)
def test_an_ollama_response_is_refused_naming_what_to_paste_instead(name):
    with pytest.raises(ScenarioError) as refused:
        parse_transcript(text(name), name)
    assert refused.value.looks_like == "Ollama /api/chat body"
    assert "paste the request body" in str(refused.value)


@pytest.mark.parametrize("name", READ)
def test_each_session_replays_through_the_command_line(name, capsys):
    assert main(["replay", str(SESSIONS / name), "--json"]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert replayed["calls"]


def test_the_command_line_chooses_a_run_with_a_suffix_and_refuses_one_the_file_lacks(capsys):
    path = SESSIONS / "openhands/multi_swe_bench-output-lines-1-2.jsonl"
    assert main(["replay", f"{path}#2", "--json"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert main(["replay", str(path), "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert second["calls"][0]["request"] != first["calls"][0]["request"]
    assert main(["replay", f"{path}#3"]) == 2
    assert "this file holds 2 run(s)" in capsys.readouterr().err


def test_scenarios_dir_loads_jsonl_and_md_sessions(tmp_path, monkeypatch):
    from webapp.core.inputs.library import scenario_library

    for name in ("codex/vibecodingtracker-codex-rollout.jsonl", "aider/mozgoslav.aider.chat.history.md"):
        (tmp_path / Path(name).name).write_bytes((SESSIONS / name).read_bytes())
    monkeypatch.setenv("SCENARIOS_DIR", str(tmp_path))
    library = scenario_library()
    assert library.get("vibecodingtracker-codex-rollout").origin.format == "codex"
    assert library.get("mozgoslav.aider.chat.history").origin.format == "aider"


@pytest.mark.parametrize("name", READ)
def test_each_session_is_read_from_an_upload_and_a_paste_alike(client, name):
    data = (SESSIONS / name).read_bytes()
    uploaded = client.post("/transcripts", data={"file": (io.BytesIO(data), Path(name).name)}, content_type="multipart/form-data")
    assert uploaded.status_code == 303, uploaded.get_data(as_text=True)[:2000]
    pasted = client.post("/transcripts", data={"transcript": data.decode("utf-8")})
    assert pasted.status_code == 303
    assert uploaded.headers["Location"] == pasted.headers["Location"]
    page = client.get(uploaded.headers["Location"])
    assert page.status_code == 200


def test_the_run_field_gives_the_link_of_another_run(client):
    data = (SESSIONS / "openhands/multi_swe_bench-output-lines-1-2.jsonl").read_bytes()
    response = client.post("/transcripts", data={"transcript": data.decode("utf-8"), "run": "2"})
    assert response.status_code == 303 and response.headers["Location"].split("?")[0].endswith("-r2")
    page = client.get(response.headers["Location"])
    assert page.status_code == 200 and "run 2 is replayed" in page.get_data(as_text=True)
    refused = client.post("/transcripts", data={"transcript": data.decode("utf-8"), "run": "5"})
    assert refused.status_code == 400 and "this file holds 2 run(s)" in refused.get_data(as_text=True)


def _cline_with_nameless_calls(calls: int) -> str:
    """A Cline history whose tool_use blocks have no name: no harness writes that."""
    messages = [{"role": "user", "content": [{"type": "text", "text": "<environment_details>\nx\n</environment_details>"}]}]
    for index in range(calls):
        messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{index}", "input": {}}]})
        messages.append({"role": "user", "content": [{"type": "text", "text": f"[read_file for 'f{index}'] Result:"}]})
    return json.dumps(messages)


def test_a_refusal_names_the_format_and_groups_repeated_problems_in_at_most_ten_lines(client):
    response = client.post("/transcripts", data={"transcript": _cline_with_nameless_calls(231)})
    page = response.get_data(as_text=True)
    assert response.status_code == 400
    assert "Format recognised: Cline / Roo Code task history." in page
    assert "231 places" in page
    assert page.count("<li") <= 11


def test_a_refusal_is_said_in_the_page_language(client):
    response = client.post("/transcripts?lang=fr", data={"transcript": _cline_with_nameless_calls(3)})
    page = response.get_data(as_text=True)
    assert response.status_code == 400
    assert "3 endroits" in page and "Format reconnu\u00a0: Historique de tâche Cline / Roo Code." in page


@pytest.mark.parametrize("raw", [5, None, {}, "text"], ids=["number", "null", "empty object", "a string"])
def test_a_file_no_format_reads_is_told_every_format_of_the_registry(raw):
    with pytest.raises(FormatError) as refused:
        detect(raw)
    said = str(refused.value)
    assert all(known.shape for known in FORMATS)
    assert [known.label for known in FORMATS if f"{known.label}: {known.shape}" in said] == [known.label for known in FORMATS]


def test_the_formats_a_refusal_names_are_written_from_the_registry(monkeypatch):
    """No hand-written list to forget: a format added to FORMATS is named at once."""
    added = Format("yaml-chat", "YAML chat", lambda raw: False, lambda raw: None, shape='a YAML list of "turns"')
    monkeypatch.setattr(formats, "FORMATS", (*FORMATS, added))
    with pytest.raises(FormatError) as refused:
        detect({})
    assert 'YAML chat: a YAML list of "turns"' in str(refused.value)


@pytest.mark.parametrize("label", [known.label for known in FORMATS])
def test_a_refusal_names_every_format_in_a_sentence_that_needs_no_article(label):
    """An article must fit the label ("an Ollama /api/chat body", "OpenAI chat completions"
    with none): the sentence puts the label after a colon, where none is needed."""
    said = str(ScenarioError("transcript", [("messages", "expected a list, got null")], looks_like=label))
    assert f"format recognised: {label}; it cannot be read: messages: expected a list" in said
    assert not re.search(rf"\b(a|an|the) {re.escape(label)}", said, re.IGNORECASE)


@pytest.mark.parametrize(
    ("lang", "sentence"),
    [
        ("en", "Format recognised: Ollama /api/chat body. It cannot be replayed as it is:"),
        ("fr", "Format reconnu\u00a0: Corps /api/chat d&#39;Ollama. Il ne peut pas être rejoué tel quel\u00a0:"),
        ("zh", "识别出的格式：Ollama /api/chat 请求体。无法按原样重放："),
    ],
)
def test_the_paste_page_names_an_ollama_response_it_refuses_in_the_page_language(client, lang, sentence):
    response = client.post(f"/transcripts?lang={lang}", data={"transcript": text(RESPONSES[0])})
    page = response.get_data(as_text=True)
    assert response.status_code == 400
    assert sentence in page
    assert "a Ollama" not in page


def test_problem_groups_keep_order_cap_and_count_the_rest():
    problems = [(f"line {i}", f"call 'c{i}' never gets its tool result") for i in range(231)]
    problems += [(f"x{i}", f"other problem {chr(97 + i)}") for i in range(15)]
    groups, rest = problem_groups(problems)
    assert len(groups) == 10 and len(groups[0][1]) == 231 and rest == 6
    assert sum(len(places) for _what, places in groups) + rest == len(problems)


def test_a_log_whose_last_line_was_cut_while_being_written_is_still_read():
    whole = text("codex/vibecodingtracker-codex-rollout.jsonl")
    cut = whole[: whole.rstrip("\n").rfind("\n") + 40]
    assert import_transcript(parse(cut)).format == "codex"


def test_langchains_three_ways_of_saving_messages_read_alike():
    """messages_to_dict, a LangGraph state of message dumps and LangChain's own serialization
    are the same conversation: the same chat-completions messages, calls paired by their ids."""
    saved = json.loads(text("langchain/generated-messages_to_dict.json"))
    dumps = [{**entry["data"], "type": entry["type"]} for entry in saved]
    forms = [saved, {"messages": dumps}, json.loads(text("langchain/generated-dumpd-state.json"))]
    read = [import_transcript(form).messages for form in forms]
    assert read[0] == read[1] == read[2]
    assert [message["role"] for message in read[0]][:4] == ["system", "user", "assistant", "tool"]
    assert read[0][2]["tool_calls"][0]["function"] == {"name": "lookup_order", "arguments": '{"order_id": "4471"}'}
    assert read[0][3]["tool_call_id"] == "call_a1"


def test_vercel_tool_messages_become_one_result_each_in_v5_and_v4_spelling():
    imported = import_transcript(json.loads(text("vercel-ai/generated-model-messages-v5.json")))
    results = [message for message in imported.messages if message["role"] == "tool"]
    assert [result["tool_call_id"] for result in results] == ["call_w1", "call_w2", "call_r1", "call_w3"]
    assert json.loads(results[0]["content"])["sky"] == "clear"  # v5 output {type: json, value}
    assert results[3]["content"].startswith('{"town": "Annecy"')  # v4 result
    calls = [call for message in imported.messages for call in message.get("tool_calls") or []]
    assert json.loads(calls[-1]["function"]["arguments"]) == {"town": "Annecy", "day": "2026-12-06"}  # v4 args
    assert imported.origins[3] == imported.origins[4] == "messages[3]"  # two results of one tool message
