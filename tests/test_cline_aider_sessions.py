"""Cline histories and aider chat histories replay one call per request the harness sent,
each with the usage it recorded: the expected calls and figures come from readers written
here, walking the raw files as Cline (v3.53.0) and aider (0.86.2) write them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from webapp.core.engine.replay import replay
from webapp.core.inputs.library import load_file

SESSIONS = Path(__file__).parent / "fixtures" / "sessions"
CLINE = SESSIONS / "cline" / "generated-native-tools-api_conversation_history.json"
AIDER = [SESSIONS / "aider" / "mozgoslav.aider.chat.history.md", SESSIONS / "aider" / "monochromatic.aider.chat.history.md"]
RESULT_TEXT = re.compile(r"^\[[^\]]+\] Result:")


def replayed(path: Path, run: int = 1):
    scenario = load_file(path, run)
    return scenario, replay(scenario, scenario.settings.model_copy(update={"strategy": "none"}))


# --- Cline --------------------------------------------------------------------------------------


def cline_calls(history: list) -> list[dict]:
    """Each assistant message is a request Cline sent: its tool_use ids, the text results of
    the next user message, and its metrics.tokens (prompt without the cache for anthropic)."""
    calls = []
    for index, message in enumerate(history):
        if message["role"] != "assistant":
            continue
        uses = [block["id"] for block in message["content"] if block["type"] == "tool_use"]
        following = history[index + 1]["content"] if index + 1 < len(history) else []
        texts = [block["text"] for block in following if block["type"] == "text" and RESULT_TEXT.match(block["text"])]
        tokens = message["metrics"]["tokens"]
        calls.append({"uses": uses, "texts": texts, "input": tokens["prompt"] + tokens["cached"], "output": tokens["completion"]})
    return calls


def test_a_cline_history_of_native_tool_calls_replays_each_request_with_its_recorded_usage():
    history = json.loads(CLINE.read_text(encoding="utf-8"))
    expected = cline_calls(history)
    assert sum(len(call["uses"]) for call in expected) == 5 and sum(len(call["texts"]) for call in expected) == 4
    scenario, result = replayed(CLINE)
    assert len(result.calls) == len(expected)
    assert [(call.recorded.input_tokens, call.recorded.output_tokens) for call in result.calls] == [(call["input"], call["output"]) for call in expected]
    assert all(call.valid for call in result.calls)
    # Every call the requests hold is answered, "result missing" as Cline sends it, and the
    # text results reach the model as the user's text.
    request = result.calls[-1].request(scenario.prefix)
    answered = [message["tool_call_id"] for message in request if message["role"] == "tool"]
    asked = [call["id"] for message in request if message["role"] == "assistant" for call in message.get("tool_calls", [])]
    assert asked == answered == [use for call in expected[:-1] for use in call["uses"]]
    assert {message["content"] for message in request if message["role"] == "tool"} == {"result missing"}
    sent_text = json.dumps(request, ensure_ascii=False)
    assert all(json.dumps(text, ensure_ascii=False)[1:-1] in sent_text for call in expected for text in call["texts"])


def test_a_cline_history_gives_its_model_and_the_window_its_environment_details_state():
    scenario, _ = replayed(CLINE)
    assert scenario.origin.model == "claude-sonnet-4-5-20250929"
    assert (scenario.origin.window, scenario.origin.window_source) == (200_000, "messages[6].content[1]")


def test_cline_counts_the_cache_in_the_prompt_for_providers_that_report_it_so():
    """An OpenAI-compatible provider's prompt_tokens holds the cached part (openai.ts)."""
    history = [
        {"role": "user", "content": [{"type": "text", "text": "<task>\nhi\n</task>"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}}],
         "modelInfo": {"modelId": "gpt-4.1", "providerId": "openai", "mode": "act"}, "metrics": {"tokens": {"prompt": 5000, "completion": 20, "cached": 4096}}},
        {"role": "user", "content": [{"type": "text", "text": "[read_file for 'a'] Result:\nA"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}],
         "modelInfo": {"modelId": "gpt-4.1", "providerId": "anthropic", "mode": "act"}, "metrics": {"tokens": {"prompt": 3, "completion": 9, "cached": 5100}}},
    ]
    from webapp.core.inputs.formats import import_transcript

    imported = import_transcript(history)
    assert [(usage.call, usage.input_tokens) for usage in imported.usage] == [(1, 5000), (2, 5103)]
    assert [message["role"] for message in imported.messages] == ["user", "assistant", "tool", "user", "assistant"]


def test_a_pasted_cline_history_shows_each_call_with_its_recorded_usage(client):
    response = client.post("/transcripts", data={"transcript": CLINE.read_text(encoding="utf-8")})
    assert response.status_code == 303, response.get_data(as_text=True)[:1000]
    scenario_id = response.headers["Location"].split("/play/")[1].split("?")[0]
    expected = cline_calls(json.loads(CLINE.read_text(encoding="utf-8")))
    assert client.get(f"/play/{scenario_id}.json?strategy=none").get_json()["calls"] == len(expected)
    for number, call in enumerate(expected, 1):
        current = client.get(f"/play/{scenario_id}.json?strategy=none&call={number}").get_json()["current"]
        assert current["valid"] and current["recorded"]["input_tokens"] == call["input"]


# --- aider --------------------------------------------------------------------------------------


def rounded(number: str, thousands: str) -> int:
    return round(float(number) * (1000 if thousands else 1))


def aider_runs(text: str) -> list[dict]:
    """Each session with a prompt: its requests (a reply, or a Tokens line with none before
    it, opens one) and the "> Tokens: X sent, Y received" figures. A "#### " line asking
    "(Y)es/(N)o" is aider writing a group's answer, no prompt."""
    runs = []
    for session in re.split(r"^# aider chat started at.*$", text, flags=re.MULTILINE):
        requests, tokens, pending, in_reply, prompted = 0, [], False, False, False
        for line in session.splitlines():
            if line.startswith("> Tokens:"):
                figures = re.match(r"> Tokens: ([\d.]+)(k?) sent.*?([\d.]+)(k?) received", line).groups()
                tokens.append((rounded(*figures[:2]), rounded(*figures[2:])))
                requests += 0 if pending else 1
                pending = in_reply = False
            elif line.startswith("#### ") and "(Y)es/(N)o" not in line:
                prompted, pending, in_reply = True, False, False
            elif line.startswith((">", "####")):
                in_reply = False
            elif line.strip() and not in_reply:
                requests += 0 if pending else 1
                pending = in_reply = True
        if requests and prompted:
            runs.append({"requests": requests, "tokens": tokens})
    return runs


@pytest.mark.parametrize("path", AIDER, ids=lambda path: path.name)
def test_an_aider_history_replays_one_call_per_request_with_its_tokens_line(path):
    runs = aider_runs(path.read_text(encoding="utf-8"))
    assert sum(len(run["tokens"]) for run in runs) == path.read_text(encoding="utf-8").count("\n> Tokens:")
    for number, run in enumerate(runs, 1):
        _scenario, result = replayed(path, number)
        assert len(result.calls) == run["requests"], number
        recorded = [(call.recorded.input_tokens, call.recorded.output_tokens) for call in result.calls if call.recorded]
        assert recorded == run["tokens"], number
        assert all(call.valid for call in result.calls)


def test_the_request_aider_sends_after_add_file_to_the_chat_is_its_own_call():
    """mozgoslav, lines 386–454: a reply, its Tokens line, "Add file to the chat? y", then a
    second reply and Tokens line with no prompt between."""
    scenario, result = replayed(AIDER[0])
    followup = next(call for call in result.calls if call.recorded and call.recorded.source == "line 454")
    before = next(call for call in result.calls if call.recorded and call.recorded.source == "line 386")
    assert followup.number == before.number + 1
    sent = followup.request(scenario.prefix)
    assert sent[-1] == {"role": "user", "content": "I added these files to the chat: frontend/src/store/slices/jobs/index.ts\nLet me know if there are others we should add."}
    assert scenario.origin.model == "lm_studio/qwen3.6-35b-a3b-uncensored-hauhaucs-aggressive"


def test_aider_reads_the_cache_figures_of_its_tokens_line():
    text = "# aider chat started at 2026-01-01 10:00:00\n\n> Main model: anthropic/claude-sonnet-4-5 with diff edit format\n\n#### hi  \n\nHello.\n\n> Tokens: 12k sent, 2.5k cache write, 9.1k cache hit, 85 received. Cost: $0.01 message, $0.01 session.  \n"
    from webapp.core.inputs.formats import import_transcript, parse

    imported = import_transcript(parse(text))
    (usage,) = imported.usage
    assert (usage.call, usage.input_tokens, usage.cached_tokens, usage.output_tokens) == (1, 12000, 9100, 85)
    assert imported.model == "anthropic/claude-sonnet-4-5"


def test_a_pasted_aider_history_has_the_follow_up_calls(client):
    text = AIDER[0].read_text(encoding="utf-8")
    response = client.post("/transcripts", data={"transcript": text})
    assert response.status_code == 303, response.get_data(as_text=True)[:1000]
    scenario_id = response.headers["Location"].split("/play/")[1].split("?")[0]
    data = client.get(f"/play/{scenario_id}.json?strategy=none").get_json()
    assert data["calls"] == aider_runs(text)[0]["requests"]


def test_a_cline_request_smaller_than_the_one_before_is_where_cline_cut_its_history():
    """Cline's context truncation is kept apart from the history file: a recorded prompt that
    falls (same model) marks it, and the fit of the counts stops there."""
    info = {"modelId": "claude-sonnet-4-5-20250929", "providerId": "anthropic", "mode": "act"}
    history = [{"role": "user", "content": [{"type": "text", "text": "<task>\ngo\n</task>"}]}]
    for index, (prompt, cached) in enumerate([(5, 9000), (5, 97000), (5, 48000), (5, 49000)]):
        history.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{index}", "name": "read_file", "input": {"path": "a"}}],
                        "modelInfo": info, "metrics": {"tokens": {"prompt": prompt, "completion": 10, "cached": cached}}})
        history.append({"role": "user", "content": [{"type": "text", "text": "[read_file for 'a'] Result:\nA"}]})
    from webapp.core.inputs.formats import import_transcript

    imported = import_transcript(history)
    (compaction,) = imported.compactions
    assert (compaction.before_call, compaction.trigger, compaction.tokens_before) == (3, "auto", 97015)
