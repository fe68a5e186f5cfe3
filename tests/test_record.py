"""`compaction-playground record`: the recording endpoint, against a fake upstream started on
loopback by each test, driven by raw HTTP and by the official `openai` client."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from webapp.cli import main
from webapp.recorder import start
from webapp.web import create_app

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-test-0123456789-do-not-keep"
TOOLS = [{"type": "function", "function": {"name": "read_file", "description": "Read a file.", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]
SYSTEM = {"role": "system", "content": "You are a coding agent."}
WAIT = 10  # seconds: the longest any step of these tests waits


def chat_body(model: str, content: str, usage: dict) -> dict:
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": None}, "finish_reason": "stop"}],
        "usage": usage,
    }


def chat_usage(prompt: int, cached: int, completion: int) -> dict:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion, "prompt_tokens_details": {"cached_tokens": cached}}


def sse(payloads: list) -> list[bytes]:
    return [b"data: " + (p if isinstance(p, bytes) else json.dumps(p).encode()) + b"\n\n" for p in payloads]


def chat_chunks(model: str, words: list[str], usage: dict | None) -> list[bytes]:
    base = {"id": "chatcmpl-2", "object": "chat.completion.chunk", "created": 1700000000, "model": model}
    chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}]
    chunks += [{**base, "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]} for word in words]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    if usage:
        chunks.append({**base, "choices": [], "usage": usage})
    return sse(chunks) + [b"data: [DONE]\n\n"]


def responses_body(text: str, stream: bool) -> list[bytes] | dict:
    response = {
        "id": "resp_1", "object": "response", "created_at": 1700000000, "status": "completed", "model": "gpt-test",
        "output": [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant", "content": [{"type": "output_text", "text": text, "annotations": []}]}],
        "usage": {"input_tokens": 321, "input_tokens_details": {"cached_tokens": 256}, "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 328},
    }
    if not stream:
        return response
    events = [
        ("response.created", {"type": "response.created", "sequence_number": 0, "response": {**response, "status": "in_progress", "output": [], "usage": None}}),
        ("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": 1, "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": text}),
        ("response.completed", {"type": "response.completed", "sequence_number": 2, "response": response}),
    ]
    return [f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events]


def anthropic_stream() -> list[bytes]:
    """An Anthropic Messages stream: a text block, a tool_use block whose input comes in two
    JSON deltas, the usage split between message_start and message_delta."""
    events = [
        {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-test", "usage": {"input_tokens": 12, "cache_creation_input_tokens": 30, "cache_read_input_tokens": 400, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me look."}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"path": "ma'}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": 'in.py"}'}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 25}},
        {"type": "message_stop"},
    ]
    return [f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events]


class Upstream(BaseHTTPRequestHandler):
    """The fake provider. The model named in the request says what it does: "error" answers
    429, "slow" waits for the test's `release`, "long" streams slowly for ever (almost)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.seen.append((self.path, dict(self.headers), body))
        model, stream = body.get("model"), body.get("stream")
        if model == "error":
            return self.send(429, {"error": {"message": "Rate limit reached", "type": "rate_limit"}})
        if model == "slow":
            self.server.release.wait(WAIT)
            return self.send(200, chat_body(model, "late", chat_usage(1, 0, 1)))
        if self.path == "/v1/messages":
            return self.stream(anthropic_stream())
        if self.path == "/v1/responses":
            return self.stream(responses_body("Done.", stream)) if stream else self.send(200, responses_body("Done.", False))
        if model == "long":
            return self.stream(chat_chunks(model, ["first"], None)[:2] + [b"data: " + b"x" * 4096 + b"\n\n"] * 400, hold_after=2)
        calls = sum(1 for path, _, _ in self.server.seen if path == self.path)
        usage = chat_usage(100 * calls, 64 * (calls - 1), 5)
        if stream:
            include = (body.get("stream_options") or {}).get("include_usage")
            return self.stream(chat_chunks(model, ["Reading ", "the ", "file."], usage if include else None), hold_after=1 if model == "held" else None)
        self.send(200, chat_body(model, f"Answer {calls}.", usage))

    def send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def stream(self, pieces: list[bytes], hold_after: int | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for number, piece in enumerate(pieces):
                if number == hold_after:
                    self.server.release.wait(WAIT)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass  # the recorder hung up


def serve(server) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def upstream():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    server.daemon_threads = True
    server.seen, server.release = [], threading.Event()
    thread = serve(server)
    yield server
    server.release.set()
    server.shutdown()
    server.server_close()
    thread.join(WAIT)


@pytest.fixture
def recorder(upstream, tmp_path):
    server = start(f"http://127.0.0.1:{upstream.server_address[1]}/v1", tmp_path / "run.json", port=0, timeout=2.0)
    thread = serve(server)
    yield server
    upstream.release.set()
    server.shutdown()
    server.server_close()
    thread.join(WAIT)


def post(port: int, path: str, body: dict, headers: dict | None = None) -> tuple[int, dict, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
    try:
        connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json", "Authorization": f"Bearer {KEY}", **(headers or {})})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def port(server) -> int:
    return server.server_address[1]


def recorded(server) -> dict:
    return json.loads(server.recording.path.read_text())


def answered(server, count: int) -> dict:
    """The file once `count` calls are finished (the recorder finishes a call after its last byte)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if server.recording.path.exists():
            data = recorded(server)
            if len(data["calls"]) >= count and all("status" in call for call in data["calls"]):
                return data
        time.sleep(0.02)
    raise AssertionError(f"{count} calls were not recorded within {WAIT} s")


def read_until(connection: socket.socket, ending: bytes, seen: bytes = b"") -> bytes:
    """What the socket gives until `ending` is in it; the connection closing first fails."""
    while ending not in seen:
        piece = connection.recv(65536)
        assert piece, f"the connection closed before {ending!r}: {seen[-200:]!r}"
        seen += piece
    return seen


def no_key_written(*paths: Path) -> None:
    for path in paths:
        assert KEY not in path.read_text(), path


# --- Raw HTTP ----------------------------------------------------------------------------


def test_the_client_sees_the_same_bytes_as_from_the_upstream(upstream, recorder):
    """Streamed and not: the recorder's answer is the upstream's, byte for byte."""
    for body in (
        {"model": "gpt-test", "messages": [SYSTEM, {"role": "user", "content": "hi"}]},
        {"model": "gpt-test", "messages": [SYSTEM, {"role": "user", "content": "hi"}], "stream": True, "stream_options": {"include_usage": True}},
    ):
        upstream.seen.clear()  # the fake's answers depend on how many calls it saw
        direct = post(port(upstream), "/v1/chat/completions", body)
        upstream.seen.clear()
        through = post(port(recorder), "/v1/chat/completions", body)
        assert through[0] == direct[0] == 200
        assert through[2] == direct[2]
        assert through[1]["Content-Type"] == direct[1]["Content-Type"]
    # The key went to the upstream, unchanged, and nowhere else.
    assert upstream.seen[-1][1]["Authorization"] == f"Bearer {KEY}"
    assert upstream.seen[-1][1]["Host"] == f"127.0.0.1:{port(upstream)}"
    answered(recorder, 2)
    no_key_written(recorder.recording.path)


def test_a_stream_is_passed_on_as_it_arrives(upstream, recorder):
    """The first chunk reaches the client while the upstream still holds the rest."""
    connection = socket.create_connection(("127.0.0.1", port(recorder)), timeout=WAIT)
    body = json.dumps({"model": "held", "messages": [{"role": "user", "content": "hi"}], "stream": True}).encode()
    connection.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    seen = read_until(connection, b"chat.completion.chunk")
    assert b"file." not in seen  # the upstream has not sent it yet
    upstream.release.set()
    seen = read_until(connection, b"0\r\n\r\n", seen)
    connection.close()
    assert b"file." in seen


def test_chat_calls_are_recorded_with_usage_and_new_messages(upstream, recorder):
    first = [SYSTEM, {"role": "user", "content": "Read main.py"}]
    post(port(recorder), "/v1/chat/completions", {"model": "gpt-test", "messages": first, "tools": TOOLS})
    second = first + [{"role": "assistant", "content": "Answer 1."}, {"role": "user", "content": "And now?"}]
    post(port(recorder), "/v1/chat/completions", {"model": "gpt-test", "messages": second, "tools": TOOLS, "stream": True, "stream_options": {"include_usage": True}})
    data = answered(recorder, 2)
    one, two = data["calls"]
    assert data["recorded_by"] == "compaction-playground record"
    assert one["new"] == first and one["tools"] == TOOLS
    assert two["new"] == second[2:] and "tools" not in two and "compaction" not in two
    assert one["usage"] == {"prompt": 100, "cached": 0, "completion": 5}
    assert two["usage"] == {"prompt": 200, "cached": 64, "completion": 5}
    assert two["stream"] and two["response"] == [{"role": "assistant", "content": "Reading the file."}]
    assert one["headers"]["authorization"] == "[redacted]"
    no_key_written(recorder.recording.path)


def test_a_responses_call_is_recorded_streamed_and_not(upstream, recorder):
    post(port(recorder), "/v1/responses", {"model": "gpt-test", "instructions": "Be brief.", "input": "hello"})
    post(port(recorder), "/v1/responses", {"model": "gpt-test", "previous_response_id": "resp_1", "input": [{"role": "user", "content": "again"}], "stream": True})
    one, two = answered(recorder, 2)["calls"]
    assert one["system"] == "Be brief." and one["new"] == [{"role": "user", "content": "hello"}]
    assert one["usage"] == two["usage"] == {"prompt": 321, "cached": 256, "completion": 7}
    assert two["response"][0]["content"][0]["text"] == "Done." and "compaction" not in two


def test_an_anthropic_stream_is_recorded_with_its_cache_counted(upstream, recorder, capsys):
    body = {"model": "claude-test", "system": "You are a coding agent.", "max_tokens": 100, "stream": True, "messages": [{"role": "user", "content": "Read main.py"}]}
    status, _, _ = post(port(recorder), "/v1/messages", body, {"x-api-key": KEY, "anthropic-version": "2023-06-01"})
    assert status == 200
    call = answered(recorder, 1)["calls"][0]
    assert call["headers"]["x-api-key"] == "[redacted]" and call["headers"]["anthropic-version"] == "2023-06-01"
    assert call["usage"] == {"prompt": 442, "cached": 400, "completion": 25}
    assert call["response"][0]["content"][1] == {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "main.py"}}
    assert upstream.seen[-1][1]["x-api-key"] == KEY
    # The run stopped before the tool's result was sent: the call is left out, and said so.
    assert main(["replay", str(recorder.recording.path), "--json"]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert replayed["calls"][0]["request"][0] == {"role": "system", "content": "You are a coding agent."}
    assert replayed["read_as"]["recorded_usage"][0]["input_tokens"] == 442
    assert any(note.startswith("Calls without an output in the file: 1") for note in replayed["read_as"]["notes"])
    no_key_written(recorder.recording.path)


def test_an_upstream_error_is_passed_through_and_kept(upstream, recorder):
    status, _, body = post(port(recorder), "/v1/chat/completions", {"model": "error", "messages": [{"role": "user", "content": "hi"}]})
    assert status == 429 and json.loads(body)["error"]["message"] == "Rate limit reached"
    call = answered(recorder, 1)["calls"][0]
    assert call["status"] == 429 and "Rate limit reached" in call["error_body"] and "response" not in call


def test_an_upstream_timeout_is_a_clear_504(upstream, recorder):
    started = time.monotonic()
    status, _, body = post(port(recorder), "/v1/chat/completions", {"model": "slow", "messages": [{"role": "user", "content": "hi"}]})
    assert status == 504 and time.monotonic() - started < WAIT
    message = json.loads(body)["error"]["message"]
    assert "did not answer within 2 s" in message and f"127.0.0.1:{port(upstream)}" in message
    assert answered(recorder, 1)["calls"][0]["status"] == 504


def test_a_client_that_leaves_mid_stream_leaves_what_arrived(upstream, recorder):
    connection = socket.create_connection(("127.0.0.1", port(recorder)), timeout=WAIT)
    body = json.dumps({"model": "long", "messages": [{"role": "user", "content": "hi"}], "stream": True}).encode()
    connection.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    read_until(connection, b"first")
    connection.close()
    upstream.release.set()
    call = answered(recorder, 1)["calls"][0]
    assert call["cut_short"] and "disconnected" in call["error"]
    assert call["response"][0]["content"] == "first"
    # The recorder still serves.
    assert post(port(recorder), "/v1/chat/completions", {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]})[0] == 200


def test_other_routes_are_a_clear_404(recorder):
    status, _, body = post(port(recorder), "/v1/embeddings", {"model": "x", "input": "hi"})
    assert status == 404 and "forwards only POST /v1/chat/completions" in json.loads(body)["error"]["message"]
    connection = http.client.HTTPConnection("127.0.0.1", port(recorder), timeout=WAIT)
    connection.request("GET", "/v1/models")
    assert connection.getresponse().status == 404
    connection.close()


def test_a_compaction_by_the_client_is_recorded_as_one(upstream, recorder, capsys):
    history = [SYSTEM, {"role": "user", "content": "Fix the bug in parser.py"}]
    for turn in range(3):
        status, _, body = post(port(recorder), "/v1/chat/completions", {"model": "gpt-test", "messages": history, "tools": TOOLS})
        history += [json.loads(body)["choices"][0]["message"], {"role": "user", "content": f"Go on ({turn})"}]
    summary = {"role": "user", "content": "Summary so far: the parser fails on empty lines."}
    compacted = [SYSTEM, summary, {"role": "user", "content": "Now write the test."}]
    post(port(recorder), "/v1/chat/completions", {"model": "gpt-test", "messages": compacted, "tools": TOOLS})
    data = answered(recorder, 4)
    fourth = data["calls"][3]
    assert fourth["compaction"] == {"kept": 1, "removed": 5, "replaced_by": [summary], "summary": summary["content"]}
    assert fourth["new"] == [compacted[-1]]
    assert [("compaction" in call) for call in data["calls"][:3]] == [False, False, False]

    # The replay keeps the whole history, the compaction and the recorded usage beside it.
    assert main(["replay", str(recorder.recording.path), "--json"]) == 0
    replayed = json.loads(capsys.readouterr().out)
    read_as = replayed["read_as"]
    assert read_as["format"] == "recorded"
    assert [(u["call"], u["input_tokens"], u["cached_tokens"], u["output_tokens"]) for u in read_as["recorded_usage"]] == [
        (1, 100, 0, 5), (2, 200, 64, 5), (3, 300, 128, 5), (4, 400, 192, 5)
    ]
    assert read_as["recorded_compactions"] == [{"before_call": 4, "summary": summary["content"], "trigger": None, "tokens_before": None, "source": "calls[3].compaction"}]
    assert len(replayed["calls"]) == 4
    last = replayed["calls"][-1]["request"]
    assert last[:2] == history[:2] and last[-1] == compacted[-1] and summary not in last
    assert replayed["tools"] == TOOLS
    no_key_written(recorder.recording.path)


# --- The official openai client as the agent --------------------------------------------


def test_the_openai_client_records_a_run_that_replays(upstream, recorder, capsys, tmp_path):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=recorder.url, api_key=KEY, max_retries=0, timeout=WAIT)
    messages = [SYSTEM, {"role": "user", "content": "Read main.py"}]
    reply = client.chat.completions.create(model="gpt-test", messages=messages, tools=TOOLS)
    assert reply.choices[0].message.content == "Answer 1." and reply.usage.prompt_tokens == 100
    messages += [reply.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "Go on"}]
    stream = client.chat.completions.create(model="gpt-test", messages=messages, tools=TOOLS, stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Reading the file."
    assert chunks[-1].usage.prompt_tokens == 200
    with pytest.raises(openai.RateLimitError):
        client.chat.completions.create(model="error", messages=messages)
    assert [call.get("compaction") for call in answered(recorder, 3)["calls"]] == [None, None, None]

    # The transcript as the playground reads it: the paste page takes it too.
    assert main(["replay", str(recorder.recording.path), "--json"]) == 0
    read_as = json.loads(capsys.readouterr().out)["read_as"]
    assert [(u["call"], u["input_tokens"]) for u in read_as["recorded_usage"]] == [(1, 100), (2, 200)]
    assert read_as["notes"][0].startswith("Recorded by compaction-playground record: 2 calls answered")
    assert any(note.startswith("Calls answered with an error or not at all: 1.") for note in read_as["notes"])
    app = create_app({"TESTING": True, "TRANSCRIPT_DIR": str(tmp_path / "store")})
    page = app.test_client().post("/transcripts", data={"transcript": recorder.recording.path.read_text()})
    assert page.status_code == 303 and "/play/t-" in page.headers["Location"]
    no_key_written(recorder.recording.path)


def test_the_openai_client_through_the_responses_api(upstream, recorder):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=recorder.url, api_key=KEY, max_retries=0, timeout=WAIT)
    assert client.responses.create(model="gpt-test", instructions="Be brief.", input="hello").output_text == "Done."
    events = list(client.responses.create(model="gpt-test", input="hello", stream=True))
    assert events[-1].type == "response.completed"
    assert [call["usage"]["prompt"] for call in answered(recorder, 2)["calls"]] == [321, 321]


# --- The command ------------------------------------------------------------------------


def test_record_stops_on_sigterm_and_prints_the_link(upstream, tmp_path):
    out = tmp_path / "run.json"
    command = [sys.executable, "-m", "webapp", "record", "--upstream", f"http://127.0.0.1:{port(upstream)}/v1", "--port", "0", "--out", str(out)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        first = process.stdout.readline()
        assert "Recording to" in first and "http://127.0.0.1:" in first
        url = first.split("OPENAI_BASE_URL=")[1].split(")")[0]
        recorder_port = int(url.rsplit(":", 1)[1].split("/")[0])
        post(recorder_port, "/v1/chat/completions", {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]})
        process.send_signal(signal.SIGTERM)
        out_text, err = process.communicate(timeout=WAIT)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert "call 1 · /v1/chat/completions · 200 · prompt 100, completion 5" in out_text, out_text
    assert f"compaction-playground replay {out}" in out_text and "/play/t-" in out_text
    assert KEY not in out_text + err
    no_key_written(out)


def test_a_bad_upstream_is_refused_in_one_line(capsys):
    assert main(["record", "--upstream", "ftp://example.com"]) == 2
    assert "expected an http:// or https:// address" in capsys.readouterr().err
