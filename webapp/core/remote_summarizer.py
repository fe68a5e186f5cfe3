"""A real summarizer: any OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, vLLM,
LM Studio, a proxy), called with the standard library only.

It is used only when configured (see `summarizer_config`); the offline summarizer stays the
default. The prompt is the seed's advice (`summarizer.instructions`): keep decisions, facts and
constraints, and with keep facts, the critical facts word for word. The bill uses the usage the
endpoint reports, when it reports it. Results are cached by a hash of everything sent, in a
bounded least-recently-used cache, so replaying a scenario again (every call of a play page
replays it) costs no new model call.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import urllib.error
import urllib.request
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass

from .summarizer import SUMMARY_HEADER, SummaryResult, instructions, summary_cost
from .tokens import content_text, tool_call_texts

ENV_PREFIX = "PLAYGROUND_SUMMARIZER_"
DEFAULT_TIMEOUT = 60.0
DEFAULT_CACHE_SIZE = 256
# A summary longer than this many characters is cut: a misbehaving model cannot flood the well.
MAX_SUMMARY_CHARS = 8000


class SummarizerError(RuntimeError):
    """The endpoint could not give a summary; the message says which endpoint and why."""


@dataclass(frozen=True)
class SummarizerConfig:
    base_url: str  # e.g. http://localhost:11434/v1 (Ollama), http://localhost:1234/v1 (LM Studio)
    model: str
    api_key: str = ""
    timeout: float = DEFAULT_TIMEOUT
    cache_size: int = DEFAULT_CACHE_SIZE


def summarizer_config(config: Mapping[str, object] | None = None, environ: Mapping[str, str] | None = None) -> SummarizerConfig | None:
    """The endpoint to use, from the app's config (SUMMARIZER_URL, SUMMARIZER_MODEL,
    SUMMARIZER_API_KEY, SUMMARIZER_TIMEOUT) or else the environment (the same names prefixed
    with PLAYGROUND_); None when no URL is set, which keeps the offline summarizer."""
    config = config or {}
    environ = os.environ if environ is None else environ

    def value(name: str) -> str:
        found = config.get(f"SUMMARIZER_{name}")
        if found is None:
            found = environ.get(f"{ENV_PREFIX}{name}", "")
        return str(found).strip()

    base_url = value("URL")
    if not base_url:
        return None
    if not base_url.startswith(("http://", "https://")):
        raise SummarizerError(f"summarizer URL {base_url!r} must start with http:// or https://")
    model = value("MODEL")
    if not model:
        raise SummarizerError(f"a summarizer URL is set ({base_url}) but no model: set {ENV_PREFIX}MODEL")
    timeout_text = value("TIMEOUT")
    try:
        timeout = float(timeout_text) if timeout_text else DEFAULT_TIMEOUT
    except ValueError:
        raise SummarizerError(f"summarizer timeout {timeout_text!r} is not a number of seconds") from None
    if not 0 < timeout <= 600:
        raise SummarizerError(f"summarizer timeout {timeout} must be above 0 and at most 600 seconds")
    return SummarizerConfig(base_url.rstrip("/"), model, value("API_KEY"), timeout)


def transcript_text(blocks) -> str:
    """The folded messages as plain text for the summarizer: role, then content and tool calls."""
    lines = []
    for block in blocks:
        message = block.message
        role = message.get("role", "")
        text = content_text(message.get("content"))
        if role == "tool":
            role = f"tool result ({message.get('tool_call_id', '')})"
        if text:
            lines.append(f"{role}: {text}")
        for name, arguments in tool_call_texts(message):
            lines.append(f"{role} calls {name}({arguments})")
    return "\n".join(lines)


class OpenAICompatibleSummarizer:
    """Summarizes with one chat-completions call per compaction; implements `Summarizer`."""

    def __init__(self, config: SummarizerConfig, opener=urllib.request.urlopen):
        self.config = config
        self._open = opener
        self._cache: OrderedDict[str, SummaryResult] = OrderedDict()
        self._lock = threading.Lock()
        self.calls_made = 0  # endpoint calls, cache misses only

    def request_body(self, *, previous, blocks, facts) -> dict:
        prompt = instructions(facts)
        parts = []
        if previous:
            parts.append("Earlier summary:\n" + previous)
        parts.append("Messages to summarize:\n" + transcript_text(blocks))
        return {
            "model": self.config.model,
            "messages": [{"role": "system", "content": prompt}, {"role": "user", "content": "\n\n".join(parts)}],
            "temperature": 0,
            "stream": False,
        }

    def summarize(self, *, previous, blocks, digests, facts, counter) -> SummaryResult:
        body = self.request_body(previous=previous, blocks=blocks, facts=facts)
        key = hashlib.sha256(
            json.dumps([self.config.base_url, body, counter.name], sort_keys=True, ensure_ascii=False).encode()
        ).hexdigest()
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached
        result = self._call(body, previous, blocks, facts, counter)
        with self._lock:
            self._cache[key] = result
            while len(self._cache) > self.config.cache_size:
                self._cache.popitem(last=False)
        return result

    def _call(self, body, previous, blocks, facts, counter) -> SummaryResult:
        url = f"{self.config.base_url}/chat/completions"
        headers = {"Content-Type": "application/json"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
        try:
            with self._open(request, timeout=self.config.timeout) as response:
                payload = json.loads(response.read(4_000_000))
        except urllib.error.HTTPError as error:
            detail = error.read(500).decode("utf-8", "replace").strip()
            raise SummarizerError(f"summarizer at {url} answered HTTP {error.code}: {detail or error.reason}") from None
        except TimeoutError:  # socket.timeout is TimeoutError since Python 3.10
            raise SummarizerError(f"summarizer at {url} did not answer within {self.config.timeout:g} s") from None
        except urllib.error.URLError as error:
            raise SummarizerError(f"summarizer at {url} cannot be reached: {error.reason}") from None
        except ValueError:
            raise SummarizerError(f"summarizer at {url} did not answer with JSON") from None
        self.calls_made += 1
        try:
            text = payload["choices"][0]["message"]["content"]
            if not isinstance(text, str) or not text.strip():
                raise TypeError
        except (KeyError, IndexError, TypeError):
            raise SummarizerError(f"summarizer at {url} answered without choices[0].message.content") from None
        text = f"{SUMMARY_HEADER}\n{text.strip()[:MAX_SUMMARY_CHARS]}"
        input_tokens, output_tokens = summary_cost(counter, body["messages"][0]["content"], previous, blocks, text)
        usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
        if isinstance(usage.get("prompt_tokens"), int):
            input_tokens = usage["prompt_tokens"]
        if isinstance(usage.get("completion_tokens"), int):
            output_tokens = usage["completion_tokens"]
        return SummaryResult(text, input_tokens, output_tokens)
