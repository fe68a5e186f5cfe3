"""Token counters.

A counter measures each message once, in its own *units*, and turns a sum of units into the
request's token count. Keeping units additive is what lets the replay count every message
once and then only add integers, however many calls resend it. `count_request` counts one
whole request (messages + tool definitions) the way the API bills it.

- `estimate`: the seed's `estimate_tokens` (000_fd8adbc93eaf3a52.txt, Python): units are
  characters of `json.dumps(message)` (plus the system prompt's characters) and a request
  costs ceil(units / 4). Like the seed, it does not see the tool definitions. One departure:
  an image counts as its image tokens (x 4 characters), not as the characters of its base64.
- `cl100k_base`, `o200k_base`: real tiktoken counts inside the chat format's overhead, with
  the figures of each model family measured against the API (`ChatFormat` below). The
  calibration fixture tests/fixtures/calibration/requests.json and docs/counting.md say where
  each figure comes from and how far from the API the counts still are.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from . import vocab
from ..counter_catalog import COUNTER_NAMES, OPEN, missing
from ..i18n import N_
from .images import DEFAULT_RATE, ImageRate, image_parts, image_rate, image_tokens
from ..lru import Memoized
from .tooldefs import namespace_text
from .guarded import GuardedCount
from .messages import Message, call_names, content_text, tool_call_texts


class Counter(Protocol):
    name: str
    label: str

    def measure(self, message: Message) -> int:
        """Units of one message as sent."""

    def measure_floor(self, prefix: Sequence[Message], tools: list[dict], system_later: bool = False) -> int:
        """Units of what every request carries ahead of the script: the prefix's messages
        (system prompt, examples) and the tool definitions, which join the leading system
        message, or a system message further down (`system_later`: one in the script), or
        else sit in a system message of their own."""

    def request_tokens(self, units: int) -> int:
        """Tokens of a request whose parts add up to `units`."""

    def block_tokens(self, units: int) -> float:
        """One part's share of the request, in tokens, for drawing it."""

    def count_request(self, messages: list[Message], tools: list[dict] = (), model: str | None = None) -> int:
        """Tokens of one chat request: its messages as given and its tool definitions. A
        model name, when known, picks its family's image figures."""

    def with_call_names(self, names: dict[str, str]) -> Counter:
        """This counter, reading each tool result under the name of the function its
        `tool_call_id` calls (`call_names`), for a replay that measures messages one by one."""


def estimated(message: Message) -> bool:
    """Whether a message's count rests on an assumption: an image whose size cannot be read."""
    return any(image_tokens(url, detail, GPT_4O_IMAGES).estimated for url, detail in image_parts(message))


def _split_system(messages: list[Message]) -> tuple[str | None, list[Message]]:
    """The leading system message's text (None if the request does not start with one) and the rest."""
    if messages and messages[0].get("role") == "system" and not messages[0].get("name"):
        return content_text(messages[0].get("content")), list(messages[1:])
    return None, list(messages)


GPT_4O_IMAGES = DEFAULT_RATE


class EstimateCounter:
    name = "estimate"
    label = N_("estimate (characters / 4)")

    def measure(self, message: Message) -> int:
        images = image_parts(message)
        if not images:
            return len(json.dumps(message))
        # The seed would count the base64 text of an inline image, a thousand times its real
        # cost: count the image by its tokens instead, in characters (4 per token).
        text_only = {**message, "content": [p for p in message["content"] if not (isinstance(p, dict) and p.get("type") == "image_url")]}
        return len(json.dumps(text_only)) + 4 * sum(image_tokens(url, detail, GPT_4O_IMAGES).tokens for url, detail in images)

    def measure_floor(self, prefix: Sequence[Message], tools: list[dict], system_later: bool = False) -> int:
        # The seed counts its system prompt's characters, and not the tools; any other
        # message of the prefix counts as the seed counts a message.
        system, rest = _split_system(list(prefix))
        return len(system or "") + sum(self.measure(message) for message in rest)

    def request_tokens(self, units: int) -> int:
        return math.ceil(units / 4)

    def block_tokens(self, units: int) -> float:
        return units / 4

    def count_request(self, messages: list[Message], tools: list[dict] = (), model: str | None = None) -> int:
        return self.request_tokens(self.measure_floor(messages, list(tools)))

    def with_call_names(self, names: dict[str, str]) -> EstimateCounter:
        return self  # chars of the message as sent: a name it does not hold is not counted


TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING = 3


@dataclass(frozen=True)
class ChatFormat:
    """What a model family adds around the texts, in tokens, beyond 3 per message, 1 per name
    and 3 to prime the reply (the cookbook's figures, exact for plain text on both families)."""

    tools_alone: int  # tool definitions in a system message of their own
    tools_with_system: int  # tool definitions added to the request's system message
    pad_system: bool  # with tools, the system prompt gains a newline
    nested_descriptions: bool  # descriptions of nested properties are shown
    tool_call: int  # per call of an assistant message, besides its name and arguments
    parallel_calls: int  # once per assistant message with more than one call
    tool_result: int  # per tool message, besides its text
    function_call: int  # legacy `function_call` of an assistant message
    function_result: int  # legacy role "function" message
    images: ImageRate


# Measured against the API on the calibration fixture (docs/counting.md): gpt-3.5-turbo and
# gpt-4 for cl100k_base, gpt-4o, gpt-4o-mini and gpt-4.1 for o200k_base.
CL100K_FORMAT = ChatFormat(
    tools_alone=9, tools_with_system=5, pad_system=True, nested_descriptions=False,
    tool_call=3, parallel_calls=0, tool_result=2, function_call=3, function_result=-2,
    images=GPT_4O_IMAGES,
)
O200K_FORMAT = ChatFormat(
    tools_alone=8, tools_with_system=5, pad_system=False, nested_descriptions=True,
    tool_call=3, parallel_calls=13, tool_result=2, function_call=3, function_result=-2,
    images=GPT_4O_IMAGES,
)


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
    def __init__(self, encoding_name: str, label: str, chat_format: ChatFormat, long_cache_bytes: int = LONG_CACHE_BYTES):
        self.name = encoding_name
        self.label = label
        self.format = chat_format
        self.call_names: dict[str, str] = {}
        self._count: GuardedCount | None = None
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
        if self._count is None:
            self._count = GuardedCount(vocab.get_encoding(self.name))
        return self._count.ordinary(text)

    def measure(self, message: Message) -> int:
        fmt = self.format
        role = str(message.get("role", ""))
        units = TOKENS_PER_MESSAGE + self.text_tokens(role) + self.text_tokens(content_text(message.get("content")))
        units += sum(image_tokens(url, detail, fmt.images).tokens for url, detail in image_parts(message))
        if message.get("name") and role != "tool":  # the API ignores a tool message's name
            units += TOKENS_PER_NAME + self.text_tokens(str(message["name"]))
        if message.get("refusal"):
            units += self.text_tokens(str(message["refusal"]))
        calls = tool_call_texts(message)
        for name, arguments in calls:
            units += fmt.tool_call + self.text_tokens(name) + self.text_tokens(arguments)
        if len(calls) > 1:
            units += fmt.parallel_calls
        function_call = message.get("function_call")
        if isinstance(function_call, dict):
            units += fmt.function_call + self.text_tokens(str(function_call.get("name", "")))
            units += self.text_tokens(str(function_call.get("arguments", "")))
        if role == "tool":
            # The model reads a result under the name of the function that was called.
            name = message.get("name") or self.call_names.get(str(message.get("tool_call_id")), "")
            units += fmt.tool_result + self.text_tokens(str(name))
        elif role == "function":
            units += fmt.function_result
        return units

    def measure_floor(self, prefix: Sequence[Message], tools: list[dict], system_later: bool = False) -> int:
        system, rest = _split_system(list(prefix))
        units = sum(self.measure(message) for message in rest)
        if system is None:
            with_system = system_later or any(message.get("role") == "system" for message in rest)
            return units + self.tools_tokens(tools, with_system=with_system)
        if tools and self.format.pad_system:
            system += "\n"
        return units + self.measure({"role": "system", "content": system}) + self.tools_tokens(tools, with_system=True)

    def tools_tokens(self, tools: list[dict], with_system: bool = True) -> int:
        if not tools:
            return 0
        text = namespace_text(tools, self.format.nested_descriptions)
        extra = self.format.tools_with_system if with_system else self.format.tools_alone
        return self.text_tokens(text) + extra

    def request_tokens(self, units: int) -> int:
        return units + REPLY_PRIMING

    def block_tokens(self, units: int) -> float:
        return float(units)

    def count_request(self, messages: list[Message], tools: list[dict] = (), model: str | None = None) -> int:
        counter = self.with_call_names(call_names(messages))
        if model is not None:
            counter = counter.for_images(image_rate(model))
        return counter.request_tokens(counter.measure_floor(messages, list(tools)))

    def for_images(self, rate: ImageRate) -> TiktokenCounter:
        """This counter with another model family's image figures (sharing the text cache)."""
        if rate == self.format.images:
            return self
        return self._twin(format=dataclasses.replace(self.format, images=rate))

    def with_call_names(self, names: dict[str, str]) -> TiktokenCounter:
        return self._twin(call_names={**self.call_names, **names}) if names else self

    def _twin(self, **changes) -> TiktokenCounter:
        twin = copy.copy(self)  # shares the text caches
        vars(twin).update(changes)
        return twin


class MeasuredOnce:
    """A counter that measures each of a fixed set of messages once (a chat's script, which
    every replay of it measures again: a sweep replays it a hundred times); any other message,
    a summary or a cut result, is measured each time, so what it keeps is bounded by the chat."""

    def __init__(self, counter: Counter, messages: Iterable[Message]):
        self.counter = counter
        self._known = {id(message): message for message in messages}  # kept alive: ids stay theirs
        self._units: dict[int, int] = {}
        # Asked at every call of every replay: bound here rather than looked up through
        # __getattr__ each time.
        self.name, self.request_tokens, self.block_tokens = counter.name, counter.request_tokens, counter.block_tokens

    def measure(self, message: Message) -> int:
        units = self._units.get(id(message))
        if units is None:
            units = self.counter.measure(message)
            if id(message) in self._known:
                self._units[id(message)] = units
        return units

    def __getattr__(self, name: str):
        return getattr(self.counter, name)


COUNTERS: dict[str, Counter] = {
    "estimate": EstimateCounter(),
    "cl100k_base": TiktokenCounter("cl100k_base", "cl100k_base (GPT-4, GPT-3.5)", CL100K_FORMAT),
    "o200k_base": TiktokenCounter("o200k_base", "o200k_base (GPT-4o, o1, o3)", O200K_FORMAT),
}


def get_counter(name: str) -> Counter:
    """The counter `name`: one of COUNTERS, or an open model's when the open-models extra is
    installed (open_models.py, loaded on first use)."""
    found = COUNTERS.get(name)
    if found is not None:
        return found
    if name not in OPEN:
        raise ValueError(f"unknown counter {name!r}; accepted: {', '.join(COUNTER_NAMES)}")
    needs = missing(name)
    if needs:
        raise ValueError(f"counter {name!r} needs the open-models extra: {needs}")
    from .open_models import open_counter

    return open_counter(name)
