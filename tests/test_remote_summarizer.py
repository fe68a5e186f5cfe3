"""The real summarizer against a small fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from webapp.core.analysis.compare import compare
from webapp.core.inputs.library import open_scenario
from webapp.core.engine.remote_summarizer import (
    DEFAULT_TIMEOUT,
    FAILURE_MEMORY,
    OpenAICompatibleSummarizer,
    SummarizerConfig,
    SummarizerError,
    summarizer_config,
    time_budget,
)
from webapp.core.engine.replay import replay
from webapp.core.settings import parse_settings
from webapp.core.engine.summarizer import INSTRUCTIONS


class FakeEndpoint:
    """Answers /v1/chat/completions like a local model server; records what it was sent."""

    def __init__(self):
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.mode = "ok"  # ok, no-usage, error, slow, not-json, empty, redirect
        self.redirect_to = ""  # where mode "redirect" sends the request (302)
        self.gets: list[dict] = []  # headers of GET requests (where a followed 302 arrives)
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
                if outer.mode == "redirect":
                    self.send_response(302)
                    self.send_header("Location", outer.redirect_to)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
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

            def do_GET(self):
                outer.gets.append(dict(self.headers))
                self._send(405, {"error": {"message": "POST only"}})

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


def serve_fake():
    fake = FakeEndpoint()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


@pytest.fixture
def endpoint():
    yield from serve_fake()


@pytest.fixture
def other_origin():
    """Another origin: the same address on another port."""
    yield from serve_fake()


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
    assert config == SummarizerConfig("http://127.0.0.1:11434/v1", "llama3.1", "", DEFAULT_TIMEOUT)
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


def test_a_failing_endpoint_gives_a_502_page_that_keeps_the_address_for_the_log(caplog):
    from webapp import create_app

    client = create_app({"TESTING": True, "SUMMARIZER_URL": "http://127.0.0.1:9/v1", "SUMMARIZER_MODEL": "m", "SUMMARIZER_TIMEOUT": "2"}).test_client()
    response = client.get("/play/summary-forgets?call=7")
    assert response.status_code == 502
    page = response.get_data(as_text=True)
    assert "The summarizer is unavailable right now" in page
    assert "127.0.0.1:9" not in page and "cannot be reached" not in page  # the visitor sees no internal address
    assert any("http://127.0.0.1:9/v1/chat/completions cannot be reached" in record.getMessage() for record in caplog.records)
    assert client.get("/play/summary-forgets?call=7&strategy=truncate").status_code == 200


def test_the_timeouts_end_before_gunicorn_kills_the_worker():
    from webapp import gunicorn_config

    assert DEFAULT_TIMEOUT < gunicorn_config.timeout
    config = {"SUMMARIZER_URL": "http://127.0.0.1:1/v1", "SUMMARIZER_MODEL": "m"}
    with pytest.raises(SummarizerError, match="gunicorn stops a worker"):
        summarizer_config({**config, "SUMMARIZER_TIMEOUT": str(gunicorn_config.timeout)}, {})


def test_every_call_of_a_page_shares_one_time_budget(endpoint):
    endpoint.mode = "slow"  # 1.5 s per answer
    summarizer = OpenAICompatibleSummarizer(SummarizerConfig(endpoint.url, "m", timeout=10))
    # However many summaries the page needs, they end within the page's budget.
    with time_budget(0.5), pytest.raises(SummarizerError, match=r"did not answer within 0\.[0-5] s|this page's 0\.5 s for summaries ran out"):
        play(summarizer)


def test_a_failure_is_remembered_instead_of_retried_on_every_page(endpoint, monkeypatch):
    from webapp.core.engine import remote_summarizer

    endpoint.mode = "error"
    summarizer = OpenAICompatibleSummarizer(SummarizerConfig(endpoint.url, "m"))
    for _ in range(3):
        with pytest.raises(SummarizerError):
            play(summarizer)
    assert len(endpoint.requests) == 1
    later = remote_summarizer.time.monotonic() + FAILURE_MEMORY + 1
    monkeypatch.setattr(remote_summarizer.time, "monotonic", lambda: later)
    endpoint.mode = "ok"
    play(summarizer)  # tried again once the failure is old, and it works
    assert len(endpoint.requests) == 2


def test_the_api_key_never_follows_a_redirect_to_another_origin(endpoint, other_origin):
    endpoint.mode = "redirect"
    endpoint.redirect_to = other_origin.url + "/chat/completions"
    summarizer = OpenAICompatibleSummarizer(SummarizerConfig(endpoint.url, "m", api_key="sk-secret"))
    with pytest.raises(SummarizerError, match="redirects are not followed"):
        play(summarizer)
    assert other_origin.requests == [] and other_origin.gets == []
    # Told to follow redirects, it goes there, without the key.
    following = OpenAICompatibleSummarizer(SummarizerConfig(endpoint.url, "m", api_key="sk-secret", follow_redirects=True))
    with pytest.raises(SummarizerError):
        play(following)  # the other origin refuses the GET a 302 turns the POST into
    assert len(other_origin.gets) == 1 and "Authorization" not in other_origin.gets[0]


def test_a_failing_summarizer_leaves_out_only_the_summarize_columns(endpoint, caplog):
    from webapp import create_app

    endpoint.mode = "error"
    client = create_app({"TESTING": True, "SUMMARIZER_URL": endpoint.url, "SUMMARIZER_MODEL": "m"}).test_client()
    page = client.get("/compare/summary-forgets?call=7")
    assert page.status_code == 200
    assert "The summarize columns are left out: the summarizer is unavailable right now." in page.get_data(as_text=True)
    data = client.get("/compare/summary-forgets.json?call=7").get_json()
    # Left out: exactly the columns that call a summarizer on this chat (summarize, and the
    # harnesses that summarize), as the offline summarizer's comparison shows them.
    offline = compare(open_scenario("summary-forgets"))
    summarizing = {column.key for column in offline.columns if any(call.compaction and call.compaction.summarizer_input for call in column.calls)}
    assert {"summarize", "summarize+facts"} <= summarizing
    assert set(data["unavailable"]) == summarizing
    assert "truncate-drop" in [row["key"] for row in data["strategies"]]
    csv = client.get("/compare/summary-forgets.csv?call=7").get_data(as_text=True)
    assert "\ntruncate," in csv and "\nsummarize," not in csv
    assert endpoint.url not in page.get_data(as_text=True)
    assert any(endpoint.url in record.getMessage() for record in caplog.records)


# --- Every way to a replay summarizes with the endpoint (issue 36) ---------------------------


SWEPT_LINES = "line_from=70&line_to=80&line_step=10&keeps=2"


def remote_comparison(endpoint, line: float):
    """The comparison at `line`, every replay made from scratch through the endpoint."""
    from webapp.core.analysis.sweep import SWEPT, point_settings

    remote = OpenAICompatibleSummarizer(SummarizerConfig(endpoint.url, "m"))
    return compare(SCENARIO, point_settings(SCENARIO.settings, line, 2), run=lambda scenario, settings: replay(scenario, settings, remote), fixed=SWEPT)


def summarizing(points) -> dict:
    return {(row["key"], row["line"]): (row["sent_total"], row["bill_usd"]) for row in points if row["key"].startswith("summarize")}


def test_the_sweep_summarizes_with_the_configured_endpoint(endpoint):
    """The sweep's summarize points are the endpoint's summaries (billed at its usage), as a
    comparison made with it from scratch gives them, not the offline summarizer's."""
    from webapp import create_app
    from webapp.core.analysis.comparison_data import summary_row

    client = create_app({"TESTING": True, "SUMMARIZER_URL": endpoint.url, "SUMMARIZER_MODEL": "m"}).test_client()
    data = client.get(f"/sweep/summary-forgets.json?{SWEPT_LINES}").get_json()
    assert endpoint.requests and data["unavailable"] == []
    expected = {}
    for line in (0.7, 0.8):
        for column in remote_comparison(endpoint, line).columns:
            row = summary_row(column, column.calls[-1].number)
            expected[(column.key, round(column.settings.effective_threshold, 4))] = (row["sent_total"], row["bill_usd"])
    got = summarizing(data["points"])
    assert got and got == {where: figures for where, figures in expected.items() if where in got}
    offline = create_app({"TESTING": True}).test_client().get(f"/sweep/summary-forgets.json?{SWEPT_LINES}").get_json()
    assert summarizing(offline["points"]) != got


def test_a_failing_endpoint_leaves_only_the_summarize_columns_out_of_the_sweep(endpoint, caplog):
    from webapp import create_app

    endpoint.mode = "error"
    client = create_app({"TESTING": True, "SUMMARIZER_URL": endpoint.url, "SUMMARIZER_MODEL": "m"}).test_client()
    page = client.get(f"/sweep/summary-forgets?{SWEPT_LINES}")
    assert page.status_code == 200
    assert "The summarize columns are left out: the summarizer is unavailable right now." in page.get_data(as_text=True)
    data = client.get(f"/sweep/summary-forgets.json?{SWEPT_LINES}").get_json()
    assert {"summarize", "summarize+facts"} <= set(data["unavailable"])
    assert not {row["key"] for row in data["points"]} & set(data["unavailable"])
    assert "truncate-drop" in {row["key"] for row in data["points"]}
    assert endpoint.url not in page.get_data(as_text=True)
    assert any(endpoint.url in record.getMessage() for record in caplog.records)


def test_the_command_lines_compare_and_sweep_summarize_with_the_endpoint(endpoint, monkeypatch, capsys):
    from webapp.cli import main

    monkeypatch.setenv("PLAYGROUND_SUMMARIZER_URL", endpoint.url)
    monkeypatch.setenv("PLAYGROUND_SUMMARIZER_MODEL", "m")
    assert main(["compare", "summary-forgets", "--threshold", "0.7", "--keep", "2", "--json"]) == 0
    rows = {row["key"]: row["sent_total"] for row in json.loads(capsys.readouterr().out)["strategies"]}
    assert endpoint.requests
    expected = {column.key: column.sent_total for column in remote_comparison(endpoint, 0.7).columns}
    assert rows["summarize"] == expected["summarize"] and rows["summarize+facts"] == expected["summarize+facts"]
    asked = len(endpoint.requests)
    assert main(["sweep", "summary-forgets", "--line-from", "70", "--line-to", "80", "--line-step", "10", "--keeps", "2", "--json"]) == 0
    swept = json.loads(capsys.readouterr().out)
    assert swept["unavailable"] == [] and len(endpoint.requests) > asked  # a new process's summaries
    at_line = {row["key"]: row["sent_total"] for row in swept["points"] if row["line"] == 0.7 and row["key"].startswith("summarize")}
    assert at_line == {key: sent for key, sent in expected.items() if key in at_line} and at_line


def test_the_command_line_says_which_columns_a_failing_endpoint_left_out(endpoint, monkeypatch, capsys):
    from webapp.cli import main

    endpoint.mode = "error"
    monkeypatch.setenv("PLAYGROUND_SUMMARIZER_URL", endpoint.url)
    monkeypatch.setenv("PLAYGROUND_SUMMARIZER_MODEL", "m")
    assert main(["compare", "summary-forgets"]) == 0
    err = capsys.readouterr().err
    assert "the summarizer failed, so these columns are left out: " in err and "summarize+facts" in err
