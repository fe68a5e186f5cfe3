"""Token counters.

A counter measures each message once, in its own *units*, and turns a sum of units into the
request's token count. Keeping units additive is what lets the replay count every message
once and then only add integers, however many calls resend it.

- `estimate`: the seed's `estimate_tokens` (000_fd8adbc93eaf3a52.txt, Python): units are
  characters of `json.dumps(message)` (plus the system prompt's characters) and a request
  costs ceil(units / 4). Like the seed, it does not see the tool definitions.
- `cl100k_base`, `o200k_base`: real tiktoken counts, with the chat format's overhead as given
  by OpenAI's cookbook "How to count tokens with tiktoken": 3 tokens per message, 1 more when
  the message has a `name`, and 3 per request for the reply's priming. Tool definitions use
  the cookbook's figures for gpt-4o / gpt-4 functions (7 per function, 3 to open the
  properties, 3 per property, 12 at the end; enums -3 then 3 per item). Assistant tool calls
  count the tokens of each function's name and arguments; OpenAI publishes no exact figure
  for them, so this part is an approximation of a few tokens per call.
"""

from __future__ import annotations

import json
import math
import sys
from functools import lru_cache
from typing import Any, Protocol

from . import vocab
from .i18n import N_
from .lru import Memoized

Message = dict[str, Any]


def content_text(content: Any) -> str:
    """The text a model reads in a message's content: a string, or the text parts of a list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def tool_call_texts(message: Message) -> list[tuple[str, str]]:
    """(function name, arguments) of each tool call of an assistant message."""
    calls = message.get("tool_calls") or []
    out = []
    for call in calls:
        function = call.get("function") or {}
        out.append((str(function.get("name", "")), str(function.get("arguments", ""))))
    return out


class Counter(Protocol):
    name: str
    label: str

    def measure(self, message: Message) -> int:
        """Units of one message as sent."""

    def measure_floor(self, system: str, tools: list[dict]) -> int:
        """Units of what every request carries: the system prompt and the tool definitions."""

    def request_tokens(self, units: int) -> int:
        """Tokens of a request whose parts add up to `units`."""

    def block_tokens(self, units: int) -> float:
        """One part's share of the request, in tokens, for drawing it."""


class EstimateCounter:
    name = "estimate"
    label = N_("chars / 4 (the seed's estimate)")

    def measure(self, message: Message) -> int:
        return len(json.dumps(message))

    def measure_floor(self, system: str, tools: list[dict]) -> int:
        return len(system)

    def request_tokens(self, units: int) -> int:
        return math.ceil(units / 4)

    def block_tokens(self, units: int) -> float:
        return units / 4


TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING = 3
FUNCTION_INIT, PROPERTIES_INIT, PROPERTY_KEY, FUNCTIONS_END = 7, 3, 3, 12
ENUM_INIT, ENUM_ITEM = -3, 3


# Token counts are remembered per text, within bounds on both count and size: a short text in
# functools' cache (fast; at most 16,384 x 512 characters), a long one in a cache bounded by bytes
# (16,384 texts of a megabyte each would be 16 GB).
SHORT_TEXT = 512
SHORT_CACHE_ENTRIES = 16384
LONG_CACHE_ENTRIES = 4096
LONG_CACHE_BYTES = 32 * 1024 * 1024


def _text_bytes(text: str, count: int) -> int:
    return sys.getsizeof(text) + 100  # the string, its int and the cache's own entry


class TiktokenCounter:
    def __init__(self, encoding_name: str, label: str, long_cache_bytes: int = LONG_CACHE_BYTES):
        self.name = encoding_name
        self.label = label
        self._encoding = None
        self._short_tokens = lru_cache(maxsize=SHORT_CACHE_ENTRIES)(self._count_text)
        self.long_tokens = Memoized(self._count_text, LONG_CACHE_ENTRIES, long_cache_bytes, _text_bytes)

    def text_tokens(self, text: str) -> int:
        return self._short_tokens(text) if len(text) <= SHORT_TEXT else self.long_tokens(text)

    def cache_hits(self) -> int:
        return self._short_tokens.cache_info().hits + self.long_tokens.cache_info().hits

    def cache_clear(self) -> None:
        self._short_tokens.cache_clear()
        self.long_tokens.cache_clear()

    def _count_text(self, text: str) -> int:
        if self._encoding is None:
            self._encoding = vocab.get_encoding(self.name)
        # encode_ordinary reads "<|endoftext|>" in user text as plain text, as an API does.
        return len(self._encoding.encode_ordinary(text))

    def measure(self, message: Message) -> int:
        units = TOKENS_PER_MESSAGE + self.text_tokens(str(message.get("role", "")))
        units += self.text_tokens(content_text(message.get("content")))
        if message.get("name"):
            units += TOKENS_PER_NAME + self.text_tokens(str(message["name"]))
        for name, arguments in tool_call_texts(message):
            units += self.text_tokens(name) + self.text_tokens(arguments)
        return units

    def measure_floor(self, system: str, tools: list[dict]) -> int:
        return self.measure({"role": "system", "content": system}) + self.tools_tokens(tools)

    def tools_tokens(self, tools: list[dict]) -> int:
        if not tools:
            return 0
        total = FUNCTIONS_END
        for tool in tools:
            function = tool.get("function", tool)
            description = str(function.get("description", "")).removesuffix(".")
            total += FUNCTION_INIT + self.text_tokens(f"{function.get('name', '')}:{description}")
            properties = (function.get("parameters") or {}).get("properties") or {}
            if properties:
                total += PROPERTIES_INIT
            for key, spec in properties.items():
                spec = spec if isinstance(spec, dict) else {}
                total += PROPERTY_KEY
                if "enum" in spec:
                    total += ENUM_INIT
                    for item in spec["enum"]:
                        total += ENUM_ITEM + self.text_tokens(str(item))
                prop_description = str(spec.get("description", "")).removesuffix(".")
                total += self.text_tokens(f"{key}:{spec.get('type', '')}:{prop_description}")
        return total

    def request_tokens(self, units: int) -> int:
        return units + REPLY_PRIMING

    def block_tokens(self, units: int) -> float:
        return float(units)


COUNTERS: dict[str, Counter] = {
    "estimate": EstimateCounter(),
    "cl100k_base": TiktokenCounter("cl100k_base", "cl100k_base (GPT-4, GPT-3.5)"),
    "o200k_base": TiktokenCounter("o200k_base", "o200k_base (GPT-4o, o1, o3)"),
}


def get_counter(name: str) -> Counter:
    try:
        return COUNTERS[name]
    except KeyError:
        raise ValueError(f"unknown counter {name!r}; accepted: {', '.join(COUNTERS)}") from None
