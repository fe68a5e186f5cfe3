"""A real summarizer: any OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, vLLM,
LM Studio, a proxy), called with the standard library only.

It is used only when configured (see `summarizer_config`); the offline summarizer stays the
default. The prompt is the seed's advice (`summarizer.instructions`): keep decisions, facts and
constraints, and with keep facts, the critical facts word for word. The bill uses the usage the
endpoint reports, when it reports it. Results are cached by a hash of everything sent, in a
bounded least-recently-used cache, so replaying a scenario again (every call of a play page
replays it) costs no new model call.

A slow or failing endpoint must not take the site down with it. Each call has a timeout, and
all the calls of one page share a budget (`time_budget`), both below the 30 s after which
gunicorn kills a worker. A failure is remembered for `FAILURE_MEMORY` seconds: in that time
the pages that need the endpoint say it is unavailable at once instead of waiting on it again.
Redirects are not followed unless configured, and the API key never goes to another origin.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import os
import threading
import time
import urllib.error
import urllib.parse
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from .summarizer import SUMMARY_HEADER, TEXTBOOK, SummaryResult, instructions, summary_cost
from ..counting.tokens import content_text, tool_call_texts

ENV_PREFIX = "PLAYGROUND_SUMMARIZER_"
# gunicorn kills a worker whose request runs 30 s (webapp/gunicorn_config.py): one call, and
# all the calls of one page, must end well before.
DEFAULT_TIMEOUT = 10.0
MAX_TIMEOUT = 20.0
PAGE_BUDGET = 20.0
FAILURE_MEMORY = 30.0
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
    follow_redirects: bool = False  # when on, only within the endpoint's own origin keeps the key


def summarizer_config(config: Mapping[str, object] | None = None, environ: Mapping[str, str] | None = None) -> SummarizerConfig | None:
    """The endpoint to use, from the app's config (SUMMARIZER_URL, SUMMARIZER_MODEL,
    SUMMARIZER_API_KEY, SUMMARIZER_TIMEOUT, SUMMARIZER_FOLLOW_REDIRECTS) or else the
    environment (the same names prefixed with PLAYGROUND_); None when no URL is set, which
    keeps the offline summarizer."""
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
    if not 0 < timeout <= MAX_TIMEOUT:
        raise SummarizerError(
            f"summarizer timeout {timeout:g} must be above 0 and at most {MAX_TIMEOUT:g} seconds: "
            "gunicorn stops a worker whose request runs 30 s"
        )
    follow = value("FOLLOW_REDIRECTS").lower() in {"1", "true", "yes", "on"}
    return SummarizerConfig(base_url.rstrip("/"), model, value("API_KEY"), timeout, follow_redirects=follow)


# (when the current page must be done by, in time.monotonic(); its budget in seconds), set by
# the web layer for each request.
_deadline: contextvars.ContextVar[tuple[float, float] | None] = contextvars.ContextVar("summarizer_deadline", default=None)


def start_time_budget(seconds: float = PAGE_BUDGET) -> contextvars.Token:
    """From now on, the summarizer calls of this context share `seconds` in all, until
    `end_time_budget(token)`."""
    return _deadline.set((time.monotonic() + seconds, seconds))


def end_time_budget(token: contextvars.Token) -> None:
    _deadline.reset(token)


@contextlib.contextmanager
def time_budget(seconds: float = PAGE_BUDGET) -> Iterator[None]:
    """Every summarizer call made inside shares `seconds` in all."""
    token = start_time_budget(seconds)
    try:
        yield
    finally:
        end_time_budget(token)


def origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or {"http": 80, "https": 443}.get(parts.scheme)


def _opener(follow: bool):
    """urllib's `open`, refusing every redirect, or with `follow`, following them but never
    carrying the API key to another origin (urllib copies every header of the request to the
    next one)."""
    import urllib.request  # here: it imports http.client and ssl, which only a remote summary needs

    class Redirects(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req, fp, code, msg, headers, newurl):
            if not follow:
                raise urllib.error.HTTPError(req.full_url, code, f"redirected to {newurl}; redirects are not followed", headers, fp)
            new = super().redirect_request(req, fp, code, msg, headers, newurl)
            if new is not None and origin(newurl) != origin(req.full_url):
                new.remove_header("Authorization")
            return new

    return urllib.request.build_opener(Redirects()).open


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

    def __init__(self, config: SummarizerConfig, opener=None):
        self.config = config
        self._open = opener or _opener(config.follow_redirects)
        self._cache: OrderedDict[str, SummaryResult] = OrderedDict()
        self._lock = threading.Lock()
        self.calls_made = 0  # endpoint calls, cache misses only
        self._failure: tuple[float, str] | None = None  # (until, why), per worker

    @property
    def name(self) -> str:
        """The model and the endpoint: what its summaries depend on (not the key, a secret)."""
        return f"{self.config.model} at {self.config.base_url}"

    def request_body(self, *, previous, blocks, facts, style=TEXTBOOK) -> dict:
        prompt = instructions(facts, style)
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

    def summarize(self, *, previous, blocks, digests, facts, counter, style=TEXTBOOK) -> SummaryResult:
        body = self.request_body(previous=previous, blocks=blocks, facts=facts, style=style)
        key = hashlib.sha256(
            json.dumps([self.config.base_url, body, counter.name], sort_keys=True, ensure_ascii=False).encode()
        ).hexdigest()
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached
        with self._lock:
            failure = self._failure
        if failure is not None and time.monotonic() < failure[0]:
            raise SummarizerError(f"{failure[1]} (less than {FAILURE_MEMORY:g} s ago; not retried yet)")
        try:
            result = self._call(body, previous, blocks, facts, counter)
        except SummarizerError as error:
            with self._lock:
                self._failure = (time.monotonic() + FAILURE_MEMORY, str(error))
            raise
        with self._lock:
            self._failure = None
            self._cache[key] = result
            while len(self._cache) > self.config.cache_size:
                self._cache.popitem(last=False)
        return result

    def _call(self, body, previous, blocks, facts, counter) -> SummaryResult:
        import urllib.request  # here, as in _opener

        url = f"{self.config.base_url}/chat/completions"
        headers = {"Content-Type": "application/json"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
        timeout = self.config.timeout
        budget = _deadline.get()
        if budget is not None:
            timeout = min(timeout, budget[0] - time.monotonic())
            if timeout <= 0:
                raise SummarizerError(f"summarizer at {url}: this page's {budget[1]:g} s for summaries ran out")
        try:
            with self._open(request, timeout=timeout) as response:
                payload = json.loads(response.read(4_000_000))
        except urllib.error.HTTPError as error:
            if 300 <= error.code < 400:
                raise SummarizerError(
                    f"summarizer at {url} answered HTTP {error.code}, a redirect to {error.headers.get('Location')}; "
                    f"redirects are not followed unless {ENV_PREFIX}FOLLOW_REDIRECTS is set"
                ) from None
            detail = error.read(500).decode("utf-8", "replace").strip()
            raise SummarizerError(f"summarizer at {url} answered HTTP {error.code}: {detail or error.reason}") from None
        except TimeoutError:  # socket.timeout is TimeoutError since Python 3.10
            raise SummarizerError(f"summarizer at {url} did not answer within {timeout:.1f} s") from None
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
