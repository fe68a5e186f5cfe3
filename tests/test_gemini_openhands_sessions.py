"""Real Gemini CLI sessions and OpenHands runs (tests/fixtures/sessions/, SOURCES.md), replayed
at strategy none: one call per model request the file records (a `gemini` message, an
OpenHands `model_response`), each with the usage recorded for it, the window the file
records, and counts close to the provider's. The expected calls and usage come from the few
lines below that walk each raw file the way the harness wrote it, not from the app's reader."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from webapp.core.engine.replay import replay
from webapp.core.inputs.library import load_file

SESSIONS = Path(__file__).parent / "fixtures" / "sessions"
GEMINI = ["gemini-cli/vibecodingtracker-session.json", "gemini-cli/vibecodingtracker-session.jsonl", "gemini-cli/aim-session-2026-03-17T22-24-a41f5459.json"]
OPENHANDS = [
    ("openhands/trajectory-basic_gui_mode.json", 1),
    ("openhands/trajectory-wrong_initial_state.json", 1),
    ("openhands/multi_swe_bench-output-lines-1-2.jsonl", 1),
    ("openhands/multi_swe_bench-output-lines-1-2.jsonl", 2),
]


def replayed(path: Path, run: int = 1, counter: str = "estimate"):
    scenario = load_file(path, run)
    return scenario, replay(scenario, scenario.settings.model_copy(update={"strategy": "none", "counter": counter}))


# --- Independent readers -------------------------------------------------------------------


def gemini_messages(path: Path) -> list[dict]:
    """The session's messages in order; of JSON Lines, the last version written under each id."""
    if path.suffix == ".json":
        return json.loads(path.read_text(encoding="utf-8"))["messages"]
    by_id: dict = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        record = json.loads(line)
        if "type" in record:
            by_id[record.get("id", number)] = record
    return list(by_id.values())


def gemini_usage(path: Path) -> list[tuple[int, int, int]]:
    """Each gemini message is one model call: its (input, output, cached) tokens."""
    return [(m["tokens"]["input"], m["tokens"]["output"], m["tokens"]["cached"]) for m in gemini_messages(path) if m["type"] == "gemini"]


def openhands_run(path: Path, run: int) -> dict:
    if path.suffix == ".jsonl":
        return json.loads(path.read_text(encoding="utf-8").splitlines()[run - 1])
    return {"history": json.loads(path.read_text(encoding="utf-8"))}


def openhands_calls(run: dict) -> list[int | None]:
    """Each distinct model_response is one call (however many actions it holds), each agent
    message without one a text reply: the prompt tokens recorded for each, in order."""
    calls, seen = [], set()
    for event in run["history"]:
        response = (event.get("tool_call_metadata") or {}).get("model_response")
        if "action" in event and response:
            if response["id"] not in seen:
                seen.add(response["id"])
                calls.append(response["usage"]["prompt_tokens"])
        elif event.get("action") == "message" and event.get("source") == "agent":
            calls.append(None)
    return calls


# --- Gemini CLI --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", GEMINI)
def test_a_gemini_cli_replay_has_one_call_per_gemini_message_with_its_recorded_tokens(name):
    expected = gemini_usage(SESSIONS / name)
    scenario, result = replayed(SESSIONS / name)
    assert [(c.recorded.input_tokens, c.recorded.output_tokens, c.recorded.cached_tokens) for c in result.calls] == expected
    assert scenario.origin.model == [m for m in gemini_messages(SESSIONS / name) if m["type"] == "gemini"][-1]["model"]
    assert scenario.origin.window is None  # a Gemini CLI session records no window


def test_a_request_cancelled_after_the_last_gemini_message_is_no_call():
    name = "gemini-cli/vibecodingtracker-session.jsonl"
    messages = gemini_messages(SESSIONS / name)
    last_reply = max(i for i, m in enumerate(messages) if m["type"] == "gemini")
    assert messages[last_reply]["toolCalls"] and [m["content"] for m in messages[last_reply + 1:]] == ["Request cancelled."]
    scenario, result = replayed(SESSIONS / name)
    assert len(result.calls) == len(gemini_usage(SESSIONS / name))
    assert scenario.script[-1].role == "assistant"


@pytest.mark.parametrize("name", GEMINI[1:])
def test_gemini_cli_counts_stay_close_to_what_gemini_counted(name):
    # The tool results are counted as the response objects the API receives. The first file
    # is left aside: at its third call Gemini counted the previous reply's 10,849 thought
    # tokens, which the file does not hold.
    _scenario, result = replayed(SESSIONS / name, counter="o200k_base")
    errors = [abs(c.tokens - c.recorded.input_tokens) / c.recorded.input_tokens for c in result.calls]
    assert statistics.median(errors) <= 0.05 and max(errors) <= 0.10


# --- OpenHands ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "run"), OPENHANDS)
def test_an_openhands_replay_has_one_call_per_model_response_with_its_recorded_usage(name, run):
    expected = openhands_calls(openhands_run(SESSIONS / name, run))
    _scenario, result = replayed(SESSIONS / name, run)
    assert [c.recorded.input_tokens if c.recorded else None for c in result.calls] == expected


def test_openhands_counts_are_what_codeact_sends_close_to_the_recorded_prompt_tokens():
    errors = []
    for run in (1, 2):
        _scenario, result = replayed(SESSIONS / "openhands/multi_swe_bench-output-lines-1-2.jsonl", run, "o200k_base")
        errors += [abs(c.tokens - c.recorded.input_tokens) / c.recorded.input_tokens for c in result.calls if c.recorded]
    assert max(errors) <= 0.03


def test_an_openhands_observation_is_the_text_codeact_sends_not_the_diff():
    path = SESSIONS / "openhands/trajectory-basic_gui_mode.json"
    sent = {}
    for event in json.loads(path.read_text(encoding="utf-8")):
        extras, call_id = event.get("extras") or {}, (event.get("tool_call_metadata") or {}).get("tool_call_id")
        if event.get("observation") == "edit":
            sent[call_id] = extras["formatted_output_and_error"]  # "File created successfully at: …"
        elif event.get("observation") == "run" and extras["metadata"]["exit_code"] != -1:
            sent[call_id] = f"[Command finished with exit code {extras['metadata']['exit_code']}]"
    scenario = load_file(path)
    tools = {item.message["tool_call_id"]: item.message["content"] for item in scenario.script if item.role == "tool"}
    for call_id, text in sent.items():
        assert tools[call_id] == text if text.startswith("File") else tools[call_id].endswith(text)


def test_the_window_and_model_of_an_openhands_run_come_from_its_llm_config(tmp_path):
    source = SESSIONS / "openhands/multi_swe_bench-output-lines-1-2.jsonl"
    run = openhands_run(source, 1)
    assert run["metadata"]["llm_config"]["max_input_tokens"] is None  # as this run recorded it
    assert load_file(source).origin.window is None
    run["metadata"]["llm_config"]["max_input_tokens"] = 131_072
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps(run) + "\n", encoding="utf-8")
    scenario = load_file(path)
    assert (scenario.origin.window, scenario.origin.window_source) == (131_072, "metadata.llm_config.max_input_tokens")
    responses = [e["tool_call_metadata"]["model_response"] for e in run["history"] if (e.get("tool_call_metadata") or {}).get("model_response")]
    assert scenario.origin.model == responses[-1]["model"]


def test_the_gemini_cli_policy_compresses_once_the_last_request_sent_reached_half_the_window():
    # chatCompressionService.ts (v0.39.0) measures the last prompt Gemini counted, before the
    # new messages join: with the line between the largest request so far and request n, it
    # compresses before call n + 1, not n.
    path = SESSIONS / "gemini-cli/aim-session-2026-03-17T22-24-a41f5459.json"
    _scenario, plain = replayed(path)
    tokens = [call.tokens for call in plain.calls]
    n = next(n for n in range(15, len(tokens)) if tokens[n] > max(tokens[:n]) + 2)  # 0-based: call n + 1
    scenario = load_file(path)
    settings = scenario.settings.model_copy(update={"strategy": "gemini-cli", "threshold": 0.5, "window": max(tokens[:n]) + tokens[n]})
    first = next(call.number for call in replay(scenario, settings).calls if call.compaction is not None)
    assert first == n + 2


def test_an_openhands_observation_is_cut_in_the_middle_to_max_message_chars_but_a_file_read(tmp_path):
    # conversation_memory.py truncate_content(text, llm_config.max_message_chars); a file read
    # is sent as the editor cut it.
    run = openhands_run(SESSIONS / "openhands/multi_swe_bench-output-lines-1-2.jsonl", 1)
    run["metadata"]["llm_config"]["max_message_chars"] = 200
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps(run) + "\n", encoding="utf-8")
    kinds = {e["tool_call_metadata"]["tool_call_id"]: e for e in run["history"] if "observation" in e and e.get("tool_call_metadata")}
    tools = {item.message["tool_call_id"]: item.message["content"] for item in load_file(path).script if item.role == "tool"}
    long_runs = [i for i, e in kinds.items() if e["observation"] == "run" and len(e["content"]) > 200]
    reads = [i for i, e in kinds.items() if e["observation"] == "read" and len(e["content"]) > 200]
    assert long_runs and reads
    for call_id in long_runs:
        head, _mark, tail = tools[call_id].partition("\n[... Observation truncated due to length ...]\n")
        assert (len(head), len(tail)) == (100, 100) and kinds[call_id]["content"].startswith(head)
    for call_id in reads:
        assert tools[call_id] == kinds[call_id]["content"]


def test_a_prompt_cancelled_after_the_last_reply_is_no_call_but_one_waiting_is(tmp_path):
    # useGeminiStream.ts (v0.39.0) writes "Request cancelled." when the user stops a request.
    session = json.loads((SESSIONS / GEMINI[0]).read_text(encoding="utf-8"))
    replies = len(gemini_usage(SESSIONS / GEMINI[0]))
    session["messages"].append({"id": "u-late", "type": "user", "content": [{"text": "And the docs?"}]})
    waiting = tmp_path / "waiting.json"
    waiting.write_text(json.dumps(session), encoding="utf-8")
    session["messages"].append({"id": "i-late", "type": "info", "content": "Request cancelled."})
    cancelled = tmp_path / "cancelled.json"
    cancelled.write_text(json.dumps(session), encoding="utf-8")
    assert len(replayed(waiting)[1].calls) == replies + 1  # the next request, not yet answered
    assert len(replayed(cancelled)[1].calls) == replies
