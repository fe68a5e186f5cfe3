"""The real summarizer against a small fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from webapp.core.library import open_scenario
from webapp.core.remote_summarizer import (
    OpenAICompatibleSummarizer,
    SummarizerConfig,
    SummarizerError,
    summarizer_config,
)
from webapp.core.replay import replay
from webapp.core.settings import parse_settings
from webapp.core.summarizer import INSTRUCTIONS


class FakeEndpoint:
    """Answers /v1/chat/completions like a local model server; records what it was sent."""

    def __init__(self):
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.mode = "ok"  # ok, no-usage, error, slow, not-json, empty
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                outer.headers.append(dict(self.headers))
                if self.path != "/v1/chat/completions":
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                if outer.mode == "error":
                    return self._send(503, {"error": {"message": "model is loading"}})
                if outer.mode == "slow":
                    time.sleep(1.5)
                if outer.mode == "not-json":
                    return self._send(200, "<html>proxy login</html>", raw=True)
                prompt = body["messages"][0]["content"]
                # Like a careful model: it keeps what the prompt says must survive.
                kept = prompt.split("must survive word for word: ")[1].rstrip(".") if "word for word" in prompt else ""
                text = "The family wants a bag and seats." + (f" Keep: {kept}" if kept else "")
                answer = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "" if outer.mode == "empty" else text}}]}
                if outer.mode != "no-usage":
                    answer["usage"] = {"prompt_tokens": 1234, "completion_tokens": 56, "total_tokens": 1290}
                self._send(200, answer)

            def _send(self, status, payload, raw=False):
                data = payload.encode() if raw else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/html" if raw else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def endpoint():
    fake = FakeEndpoint()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


SCENARIO = open_scenario("summary-forgets")


def play(summarizer, **changes):
    return replay(SCENARIO, parse_settings(changes, SCENARIO.settings), summarizer)


def test_summarize_calls_the_endpoint_with_the_seeds_advice_and_bills_its_usage(endpoint):
    summarizer = OpenAICompatibleSummarizer(SummarizerConfig(endpoint.url, "llama3.1", api_key="sk-test"))
    result = play(summarizer)
    call = result.calls[5]
    assert call.compaction.summarized
    assert len(endpoint.requests) == 1
    sent = endpoint.requests[0]
    assert sent["model"] == "llama3.1"
    assert sent["messages"][0]["content"] == INSTRUCTIONS
    assert "QX7P2M" in sent["messages"][1]["content"]  # the folded booking lookup is sent to it
    assert endpoint.headers[0]["Authorization"] == "Bearer sk-test"
    summary = next(block for block in call.blocks if block.state == "summary")
    assert summary.text.startswith("[Summary of earlier exchanges]\nThe family wants a bag and seats.")
    # The bill uses the usage the endpoint reported.
    assert call.compaction.summarizer_input == 1234 and call.compaction.summarizer_output == 56
    assert call.sent_total == result.calls[4].sent_total + 1234 + call.tokens


def test_with_keep_facts_the_prompt_names_what_must_survive(endpoint):
    summarizer = OpenAICompatibleSummarizer(SummarizerConfig(endpoint.url, "m"))
    result = play(summarizer, keep_facts=True)
    assert "booking reference: QX7P2M" in endpoint.requests[0]["messages"][0]["content"]
    assert [fact.present for fact in result.calls[6].facts] == [True]
    assert "Authorization" not in endpoint.headers[0]


def test_results_are_cached_by_what_is_sent(endpoint):
    summarizer = OpenAICompatibleSummarizer(SummarizerConfig(endpoint.url, "m", cache_size=1))
    first = play(summarizer)
    again = play(summarizer)
    assert len(endpoint.requests) == 1 and summarizer.calls_made == 1
    assert first.calls[6].tokens == again.calls[6].tokens
    play(summarizer, keep_facts=True)  # another prompt: another call, which evicts the first
    play(summarizer)
    assert len(endpoint.requests) == 3


def test_without_usage_the_cost_is_counted(endpoint):
    endpoint.mode = "no-usage"
    result = play(OpenAICompatibleSummarizer(SummarizerConfig(endpoint.url, "m")))
    compaction = result.calls[5].compaction
    assert compaction.summarizer_input > 2000  # the folded messages and the prompt, counted
    assert 0 < compaction.summarizer_output < 100


@pytest.mark.parametrize(
    "mode,message",
    [
        ("error", "answered HTTP 503: {\"error\": {\"message\": \"model is loading\"}}"),
        ("slow", "did not answer within 0.5 s"),
        ("not-json", "did not answer with JSON"),
        ("empty", "without choices[0].message.content"),
    ],
)
def test_failures_are_clear_errors(endpoint, mode, message):
    endpoint.mode = mode
    summarizer = OpenAICompatibleSummarizer(SummarizerConfig(endpoint.url, "m", timeout=0.5))
    with pytest.raises(SummarizerError) as caught:
        play(summarizer)
    assert message in str(caught.value)
    assert endpoint.url in str(caught.value)


def test_an_unreachable_endpoint_says_so():
    summarizer = OpenAICompatibleSummarizer(SummarizerConfig("http://127.0.0.1:9/v1", "m", timeout=2))
    with pytest.raises(SummarizerError, match="cannot be reached"):
        play(summarizer)


def test_configuration_from_app_config_or_environment():
    assert summarizer_config({}, {}) is None  # the offline summarizer stays the default
    config = summarizer_config({}, {"PLAYGROUND_SUMMARIZER_URL": "http://127.0.0.1:11434/v1/", "PLAYGROUND_SUMMARIZER_MODEL": "llama3.1"})
    assert config == SummarizerConfig("http://127.0.0.1:11434/v1", "llama3.1", "", 60.0)
    app_first = summarizer_config({"SUMMARIZER_URL": "http://127.0.0.1:1234/v1", "SUMMARIZER_MODEL": "qwen", "SUMMARIZER_TIMEOUT": "5"},
                                  {"PLAYGROUND_SUMMARIZER_URL": "http://elsewhere/v1"})
    assert (app_first.base_url, app_first.model, app_first.timeout) == ("http://127.0.0.1:1234/v1", "qwen", 5.0)
    with pytest.raises(SummarizerError, match="no model"):
        summarizer_config({"SUMMARIZER_URL": "http://127.0.0.1:1234/v1"}, {})
    with pytest.raises(SummarizerError, match="must start with http"):
        summarizer_config({"SUMMARIZER_URL": "ftp://x", "SUMMARIZER_MODEL": "m"}, {})
    with pytest.raises(SummarizerError, match="not a number"):
        summarizer_config({"SUMMARIZER_URL": "http://x/v1", "SUMMARIZER_MODEL": "m", "SUMMARIZER_TIMEOUT": "soon"}, {})


def test_the_play_page_uses_the_configured_endpoint(endpoint):
    from webapp import create_app

    client = create_app({"TESTING": True, "SUMMARIZER_URL": endpoint.url, "SUMMARIZER_MODEL": "m"}).test_client()
    response = client.get("/play/summary-forgets?call=7")
    assert response.status_code == 200
    assert len(endpoint.requests) == 1
    sent = client.get("/play/summary-forgets/request.json?call=7").get_json()
    assert len(endpoint.requests) == 1  # the same replay, from the cache
    assert "The family wants a bag and seats." in json.dumps(sent)


def test_a_failing_endpoint_gives_a_502_page_that_says_why():
    from webapp import create_app

    client = create_app({"TESTING": True, "SUMMARIZER_URL": "http://127.0.0.1:9/v1", "SUMMARIZER_MODEL": "m", "SUMMARIZER_TIMEOUT": "2"}).test_client()
    response = client.get("/play/summary-forgets?call=7")
    assert response.status_code == 502
    assert "cannot be reached" in response.get_data(as_text=True)
    assert client.get("/play/summary-forgets?call=7&strategy=truncate").status_code == 200
