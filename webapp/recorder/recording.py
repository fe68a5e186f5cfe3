"""The transcript `record` writes: the run as the provider saw it, call by call.

Each request is compared with the one before it. When it is the previous request plus new
messages, only the new ones are kept; when it is not, the agent compacted its history, and
the call keeps where the two part, how many messages went and what replaced them. Each call
also keeps the reply and the provider's usage. Keys are never kept: headers, query
parameters and body fields whose names say they hold a secret are written as "[redacted]".
The file is rewritten (under a temporary name, then renamed) after every call, so a recorder
stopped by force still leaves the calls it finished. docs/transcripts.md describes the file.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

from ..core.inputs.formats.recorded import HISTORY_FIELD, RECORDED_BY, SYSTEM_FIELD, history_role
from .streams import Answer, usage_figures

# The route of each API the recorder forwards.
APIS = {"/v1/chat/completions": "chat", "/v1/responses": "responses", "/v1/messages": "messages"}
# A header, query parameter or body field whose name holds one of these is a credential.
SECRET_WORDS = ("auth", "key", "token", "secret", "cookie", "password", "signature", "credential")
REDACTED = "[redacted]"
# The roles whose messages a request adds after the reply (the user's turn, tool results).
TURN_ROLES = ("user", "tool")


def secret(name: str) -> bool:
    return any(word in name.lower() for word in SECRET_WORDS)


def redacted_headers(headers: list[tuple[str, str]]) -> dict[str, str]:
    return {name.lower(): REDACTED if secret(name) else value for name, value in headers}


def redacted_query(query: str) -> str:
    return urlencode([(name, REDACTED if secret(name) else value) for name, value in parse_qsl(query, keep_blank_values=True)])


def _plain(value: Any) -> Any:
    """A message without its null fields: two clients may send the same message with or
    without them."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items() if item is not None}
    return [_plain(item) for item in value] if isinstance(value, list) else value


def _text(item: dict) -> str:
    """The words of a history item, for a compaction's summary."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "\n".join(part["text"] for part in parts if isinstance(part, dict) and isinstance(part.get("text"), str))


def compared(previous: list, current: list) -> dict[str, Any]:
    """How `current` follows `previous`: {"new": [...]} when it starts with all of it, else
    {"new": [...], "compaction": {...}}. Of a compacted request, the new messages are its last
    user and tool messages that are not copies of removed ones; what comes before them, after
    the part both share, replaced the history (when the request has only one message there,
    it is the replacement)."""
    old, now = [_plain(item) for item in previous], [_plain(item) for item in current]
    shared = 0
    while shared < min(len(old), len(now)) and old[shared] == now[shared]:
        shared += 1
    if shared == len(old):
        return {"new": current[shared:]}
    removed = old[shared:]
    added = list(range(shared, len(now)))
    start = len(added)
    while start > 0 and history_role(now[added[start - 1]]) in TURN_ROLES and now[added[start - 1]] not in removed:
        start -= 1
    start = max(start, min(1, len(added)))
    replaced_by = [current[index] for index in added[:start]]
    summary = "\n\n".join(_text(item) for item in replaced_by if _plain(item) not in removed and isinstance(item, dict))
    return {
        "new": [current[index] for index in added[start:]],
        "compaction": {"kept": shared, "removed": len(removed), "replaced_by": replaced_by, "summary": summary},
    }


class Recording:
    """The calls of one run, written to `path` after each. Thread-safe: the proxy serves
    several requests at once, and each is compared with the one that arrived before it."""

    def __init__(self, path: Path, upstream: str, log=None):
        self.path = path
        self.upstream = upstream
        self.log = log or (lambda line: None)  # told one line per finished call
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._finished = threading.Condition(self._lock)
        self._history: dict[str, list] = {}  # per API, the last request's whole history
        self._replies: dict[str, list] = {}  # per API, the last reply's output items
        self._seen: dict[str, Any] = {}  # the system prompt and tools last recorded

    def begin(self, route: str, query: str, headers: list[tuple[str, str]], body: bytes) -> dict[str, Any]:
        """The record of a request as it arrives: its new messages (or its compaction)."""
        api = APIS[route]
        with self._lock:
            call: dict[str, Any] = {"call": len(self.calls) + 1, "route": route, "api": api, "started": round(time.time(), 3)}
            if query:
                call["query"] = redacted_query(query)
            call["headers"] = redacted_headers(headers)
            self.calls.append(call)
            try:
                request = json.loads(body)
            except ValueError:
                request = None
            if not isinstance(request, dict):
                call["unreadable"] = "the request body is not a JSON object; it was forwarded as it was"
                return call
            self._read_request(call, api, request)
            return call

    def _read_request(self, call: dict[str, Any], api: str, request: dict[str, Any]) -> None:
        history_field, system_field = HISTORY_FIELD[api], SYSTEM_FIELD[api]
        history = request.get(history_field)
        if isinstance(history, str):  # the Responses shorthand for one user message
            history = [{"role": "user", "content": history}]
        history = history if isinstance(history, list) else []
        if api == "responses" and request.get("previous_response_id"):
            # The provider holds the earlier turns: the request sends only what is new.
            history = self._history.get(api, []) + self._replies.get(api, []) + history
        call["model"] = request.get("model")
        call["stream"] = bool(request.get("stream"))
        for key, value in (("system", request.get(system_field) if system_field else None), ("tools", request.get("tools"))):
            if value is not None and self._seen.get((api, key)) != value:
                call[key] = value
                self._seen[(api, key)] = value
        call.update(compared(self._history[api], history) if api in self._history else {"new": history})
        self._history[api] = history
        params = {key: value for key, value in request.items() if key not in (history_field, system_field, "tools")}
        call["params"] = {key: REDACTED if secret(key) else value for key, value in params.items()}

    def finish(self, call: dict[str, Any], status: int, headers: list[tuple[str, str]], reply: Answer | None, error: str | None = None, body: bytes = b"") -> None:
        """The answer to `call`: its status, the reply and usage, or the error; then the file
        is written."""
        with self._lock:
            call["status"] = status
            call["response_headers"] = redacted_headers(headers)
            call["seconds"] = round(time.time() - call["started"], 3)
            if error:
                call["error"] = error
            if status >= 400 and body:
                call["error_body"] = body.decode("utf-8", "replace")[:10_000]
            if reply is not None and status < 400:
                call["response"] = reply.output
                call["usage"] = usage_figures(call["api"], reply.usage)
                call["provider_usage"] = reply.usage
                if not reply.complete:
                    call["cut_short"] = True
                self._replies[call["api"]] = reply.output
            self._write()
            self.log(log_line(call))
            self._finished.notify_all()

    def settle(self, seconds: float) -> None:
        """Wait at most `seconds` for the calls still being answered, then write the file; one
        still unfinished is marked so."""
        with self._finished:
            self._finished.wait_for(lambda: all("status" in call for call in self.calls), seconds)
            for call in self.calls:
                if "status" not in call:
                    call["error"] = "the recorder stopped before the answer ended"
            self._write()

    def document(self) -> dict[str, Any]:
        return {"recorded_by": RECORDED_BY, "version": 1, "upstream": self.upstream, "calls": self.calls}

    def _write(self) -> None:
        partial = self.path.with_name(f".{self.path.name}.{os.getpid()}.partial")
        partial.write_text(json.dumps(self.document(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        partial.replace(self.path)

    def write(self) -> None:
        with self._lock:
            self._write()


def log_line(call: dict) -> str:
    """One line of the log per call: never a header, a key or a message."""
    words = [f"call {call['call']}", call["route"], str(call.get("status"))]
    if call.get("stream"):
        words.append("streamed")
    if usage := call.get("usage"):
        words.append(f"prompt {usage['prompt']:,}" + (f" (cached {usage['cached']:,})" if usage.get("cached") else "") + (f", completion {usage['completion']:,}" if usage.get("completion") is not None else ""))
    if compaction := call.get("compaction"):
        words.append(f"the agent compacted: {compaction['removed']} messages removed, {len(compaction['replaced_by'])} in their place")
    if call.get("error"):
        words.append(call["error"])
    return " · ".join(words)
