"""Real Codex rollouts replayed at strategy none: one call per model request the file
records, each with the usage Codex recorded for it, and the window Codex recorded.

The expected figures come from a reader written here, walking the raw lines the way Codex
writes them: a `token_count` event whose `info.last_token_usage` is new (an event repeating
the last `total_token_usage` is the same request, its rate limits sent again) is one model
request; its `input_tokens` and `cached_input_tokens` are that request's; the first
`model_context_window` is the window. It shares nothing with the app's reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from webapp.core.engine.replay import replay
from webapp.core.inputs.formats.common import parse_text
from webapp.core.inputs.library import load_file
from webapp.core.inputs.transcripts import import_transcript
from webapp.core.settings import parse_settings

CODEX = Path(__file__).parent / "fixtures" / "sessions" / "codex"
ROLLOUTS = sorted(CODEX.glob("*.jsonl"))


def recorded_requests(path: Path) -> tuple[list[tuple[int, int | None]], int | None, int]:
    """(input, cached) of each model request, in order; the first model_context_window; the
    number of model responses written after the last request's token_count (the file stops
    before Codex wrote it)."""
    requests, window, last_total, replies_after = [], None, object(), 0
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        payload = record["payload"]
        if record["type"] == "event_msg" and payload.get("type") == "token_count" and payload.get("info"):
            info = payload["info"]
            window = window or info.get("model_context_window")
            if info.get("last_token_usage") and info.get("total_token_usage") != last_total:
                requests.append((info["last_token_usage"]["input_tokens"], info["last_token_usage"].get("cached_input_tokens")))
                replies_after = 0
            last_total = info.get("total_token_usage")
        elif record["type"] == "response_item" and payload.get("role") == "assistant" and not replies_after:
            replies_after = 1
    return requests, window, replies_after


def replayed_calls(path: Path):
    scenario = load_file(path)
    return replay(scenario, parse_settings({"strategy": "none"}, scenario.settings)).calls


def events_ahead(path: Path) -> bool:
    """cli 0.39 and 0.40 write a request's token_count before its reply."""
    version = json.loads(path.read_text(encoding="utf-8").splitlines()[0])["payload"]["cli_version"]
    return version.startswith(("0.39.", "0.40."))


@pytest.mark.parametrize("path", ROLLOUTS, ids=lambda path: path.name)
def test_each_model_request_is_one_call_with_its_recorded_usage(path):
    requests, window, _ = recorded_requests(path)
    calls = replayed_calls(path)
    recorded = [(call.recorded.input_tokens, call.recorded.cached_tokens) for call in calls if call.recorded]
    assert recorded == requests
    # A reply whose request's token_count the file does not hold is the last call, without usage.
    unrecorded = [call.number for call in calls if call.recorded is None]
    assert unrecorded in ([], [len(calls)])
    assert len(calls) == len(requests) + len(unrecorded)


@pytest.mark.parametrize("path", ROLLOUTS, ids=lambda path: path.name)
def test_the_usage_is_on_the_call_its_request_made(path):
    """The first request's usage is on call 1, the first reply's (cli 0.39/0.40 write it ahead
    of that reply: it was dropped, and every later one put a call late)."""
    requests, _, _ = recorded_requests(path)
    calls = replayed_calls(path)
    first = next(call for call in calls if call.recorded)
    assert first.number == 1 and first.recorded.input_tokens == requests[0][0]


@pytest.mark.parametrize("path", [path for path in ROLLOUTS if recorded_requests(path)[1]], ids=lambda path: path.name)
def test_the_window_is_the_one_codex_recorded(path):
    _, window, _ = recorded_requests(path)
    scenario = load_file(path)
    # Recorded as it is, or as the model's whole window when the record is Codex's 95% of it.
    assert scenario.origin.window in (window, round(window / 0.95))
    number = next(index for index, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if f'"model_context_window":{window}' in line)
    assert scenario.origin.window_source.startswith(f"model_context_window (line {number})")


def test_a_recorded_95_percent_of_a_known_models_window_is_read_as_that_window():
    """cli 0.114 and later record 258,400 for gpt-5.x's 272,000: the share a request may use.
    Codex compacts at 90% of the whole window, so the whole window is the model's."""
    imported = read({"type": "turn_context", "payload": {"model": "gpt-5.2"}}, user("go"), usage(1, 900), item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}))
    assert imported.window == 272_000
    assert "258,400" in imported.window_source and "95%" in imported.window_source
    # Of a model the table gives another window (gpt-5.4's API takes 1,050,000), Codex's own.
    assert read({"type": "turn_context", "payload": {"model": "gpt-5.4"}}, user("go"), usage(1, 900)).window == 272_000
    odd = dict(usage(1, 900))
    odd["payload"] = {**odd["payload"], "info": {**odd["payload"]["info"], "model_context_window": 131_072}}
    assert read({"type": "turn_context", "payload": {"model": "house-model"}}, user("go"), odd).window == 131_072


def test_the_model_is_the_turn_context_s():
    assert load_file(CODEX / "battle-cities-codex-0.142.4.jsonl").origin.model == "gpt-5.5"
    assert load_file(CODEX / "agentcmd-rollout-2025-09-25T15-12-14.jsonl").origin.model == "gpt-5-codex"


def test_both_orders_of_event_and_reply_are_in_the_fixtures():
    assert {events_ahead(path) for path in ROLLOUTS} == {True, False}


# --- Shapes no openly licensed real file was found for, written here line by line ---------

META = {"type": "session_meta", "payload": {"id": "s", "cli_version": "0.128.0", "originator": "Codex Desktop"}}


def usage(number: int, input_tokens: int) -> dict:
    tokens = {"input_tokens": input_tokens, "cached_input_tokens": 0, "output_tokens": 10, "total_tokens": input_tokens + 10}
    total = {**tokens, "total_tokens": number}
    return {"type": "event_msg", "payload": {"type": "token_count", "info": {"total_token_usage": total, "last_token_usage": tokens, "model_context_window": 258400}}}


def item(payload: dict) -> dict:
    return {"type": "response_item", "payload": payload}


def call(call_id: str) -> dict:
    return item({"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": call_id})


def output(call_id: str) -> dict:
    return item({"type": "function_call_output", "call_id": call_id, "output": f"out {call_id}"})


def developer(text: str) -> dict:
    return item({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": text}]})


def user(text: str) -> dict:
    return item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})


def read(*records: dict):
    return import_transcript(parse_text("\n".join(json.dumps(record) for record in (META, *records))))


def test_a_developer_message_between_parallel_calls_and_their_outputs_goes_after_the_last_output():
    imported = read(
        user("go"), call("a"), call("b"), usage(1, 100), developer("Approved command prefix saved"),
        output("a"), output("b"), item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}), usage(2, 200),
    )
    roles = [(message["role"], message.get("tool_call_id")) for message in imported.messages]
    assert roles == [("user", None), ("assistant", None), ("tool", "a"), ("tool", "b"), ("developer", None), ("assistant", None)]
    assert [len(message.get("tool_calls") or []) for message in imported.messages if message["role"] == "assistant"] == [2, 0]
    assert [(recorded.call, recorded.input_tokens) for recorded in imported.usage] == [(1, 100), (2, 200)]


def test_an_interrupted_call_that_a_later_request_follows_is_answered_aborted_as_codex_does():
    imported = read(
        user("go"), call("a"), usage(1, 100), user("stop"),
        item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}), usage(2, 150),
    )
    assert [message["role"] for message in imported.messages] == ["user", "assistant", "tool", "user", "assistant"]
    assert imported.messages[2] == {"role": "tool", "tool_call_id": "a", "content": "aborted"}
    assert any(note.startswith("Calls without an output that a later request follows") for note, _ in imported.notes)


def test_codex_desktop_prompts_written_only_as_events_are_read():
    prompt = {"type": "event_msg", "payload": {"type": "user_message", "message": "fix the build"}}
    reply = item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "fixed"}]})
    imported = read(developer("<permissions instructions>"), prompt, reply, usage(1, 500))
    assert {"role": "user", "content": "fix the build"} in imported.messages
    assert any(note.startswith("Prompts read from the app's user_message events") for note, _ in imported.notes)
    # A prompt the history holds too is read once.
    twice = read(user("fix the build"), prompt, reply, usage(1, 500))
    assert sum(message["role"] == "user" for message in twice.messages) == 1


def test_an_image_a_tool_returns_is_sent_after_its_output_not_refused():
    """Codex's view_image tool answers with an input_image part (a real cli 0.125 rollout had
    one; its repository has no licence, so it is not kept)."""
    shot = item({"type": "function_call_output", "call_id": "a", "output": [{"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]})
    reply = item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "seen"}]})
    imported = read(user("look"), call("a"), usage(1, 100), shot, reply, usage(2, 900))
    assert [message["role"] for message in imported.messages] == ["user", "assistant", "tool", "user", "assistant"]
    assert imported.messages[3]["content"] == [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]
    assert any(note.startswith("Tool outputs holding images") for note, _ in imported.notes)


def test_a_token_count_repeating_the_last_total_is_the_same_request():
    """cli 0.114 sends the last token count again after the tools' outputs, with new rate
    limits: the same total_token_usage, no new request (a real rollout has 17 such events of
    35, uzaxirr/raze, a repository without a licence, so not kept)."""
    reply = item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]})
    imported = read(user("go"), call("a"), usage(1, 100), output("a"), usage(1, 100), reply, usage(2, 300), usage(2, 300))
    assert [(recorded.call, recorded.input_tokens, recorded.source) for recorded in imported.usage] == [(1, 100, "line 4"), (2, 300, "line 8")]
