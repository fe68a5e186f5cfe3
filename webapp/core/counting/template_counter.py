"""A counter for an open model: its tokenizer, and its chat template around every message.

`count_request` renders the whole request through the model's template and counts its tokens:
what the model reads. The replay needs more: a count per message, in units that add up, so that
each message is measured once however many calls resend it (tokens.py). A template is not a sum
of parts, but close to one: around each message it writes a header and a closing made of the
model's special tokens, which the tokenizer never merges with the text beside them. So a
message's units are what it adds to a small chat of the right shape, rendered whole:

- a user (or later system) message: what it adds after a user request and its answer;
- an assistant message: what it adds after a user request;
- a tool result: what it adds after another result of the same turn (the templates that
  gather a turn's results in one block, Qwen's, open and close that block once);
- an assistant message with calls: what it adds with one result per call, less what those
  results add as results (so the opening and closing of the results' block are its own);
- the floor (system prompt, tools, what the template writes once): the request with one user
  request, less what that request adds. It also holds the prompt of the reply.

These units add up to the template's own count on every request whose results follow their
calls (tests/test_open_models.py checks it on generated chats, message by message and after
compaction); where a template depends on more than the message before (docs/counting.md names
them), the count can differ by a few tokens. Images are counted as the other counters count them
in the well (gpt-4o's figures): these counters read a model's text only.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Callable, Protocol

from ..counter_catalog import VocabularyError
from .chat_render import TemplateRefused, template_message, template_tools
from .images import DEFAULT_RATE as GPT_4O_IMAGES, image_parts, image_tokens
from .messages import Message, call_names

SHORT_USER = {"role": "user", "content": "Hi"}
SHORT_REPLY = {"role": "assistant", "content": "Hello"}
OTHER_CALL = "c00000000"  # the id of the other call of a result's turn (9 letters and digits: Mistral's rule)
REMEMBERED_TEXT = 2048  # characters of a message whose units are remembered by its content
REMEMBERED_MESSAGES = 8192  # short messages whose units are remembered, at most


class Chat(Protocol):
    # Messages every small chat of a measure ends with, for a template that writes a message
    # differently when it is the last one (Qwen 3 gives a last assistant message an empty
    # <think> block): a request never ends with an assistant message, so neither do they.
    closing: tuple[dict, ...]

    def count(self, messages: list[dict], tools: list[dict] | None = None) -> int:
        """Tokens of a request of template messages (chat_render.template_message) and tools."""

    def count_text(self, text: str) -> int:
        """Tokens of a text alone, its special tokens (<|im_end|>) one each."""


def _result(call_id: str) -> dict:
    return {"role": "tool", "content": "ok", "tool_call_id": call_id, "name": "f"}


def _call(call_id: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": {}}}


def _image_units(message: Message) -> int:
    return sum(image_tokens(url, detail, GPT_4O_IMAGES).tokens for url, detail in image_parts(message))


class TemplateCounter:
    """A counter whose units are tokens of a model's own rendering (see the module's doc)."""

    def __init__(self, name: str, label: str, load: Callable[[], Chat]):
        self.name = name
        self.label = label
        self.call_names: dict[str, str] = {}
        # Shared with every twin (with_call_names): the model's chat, loaded on first use, and
        # the counts of the small chats every measure starts from.
        self._shared: dict = {"load": load, "chat": None, "bases": {}, "known": {}}

    @property
    def chat(self) -> Chat:
        """The model's chat, loaded on first use; a vocabulary that is missing or not the pinned
        file raises VocabularyError naming this counter (and is looked for again next time)."""
        if self._shared["chat"] is None:
            try:
                self._shared["chat"] = self._shared["load"]()
            except VocabularyError as error:
                error.counter = self.name
                raise
        return self._shared["chat"]

    def _count(self, messages: list[dict]) -> int:
        """A small chat's count, closed as the template needs (Chat.closing)."""
        return self.chat.count([*messages, *self.chat.closing])

    def _base(self, key: str, messages: list[dict]) -> int:
        bases = self._shared["bases"]
        if key not in bases:
            bases[key] = self._count(messages)
        return bases[key]

    def _adds(self, before: list[dict], message: dict) -> int:
        return self._count([*before, message]) - self._count(before)

    def _result_units(self, result: dict) -> int:
        """What a result adds after another result of its turn."""
        turn = {"role": "assistant", "content": "", "tool_calls": [_call(OTHER_CALL), _call(result.get("tool_call_id", ""))]}
        return self._adds([SHORT_USER, turn, _result(OTHER_CALL)], result)

    def template_units(self, message: dict) -> int:
        """Units of one template message (see the module's doc for the small chats)."""
        role, calls = message["role"], message.get("tool_calls")
        if role == "tool":
            return self._result_units(message)
        if role == "assistant" and calls:
            results = [_result(call["id"]) for call in calls]
            whole = self._count([SHORT_USER, message, *results]) - self._base("user", [SHORT_USER])
            return whole - sum(self._result_units(result) for result in results)
        if role == "assistant":
            return self._count([SHORT_USER, message]) - self._base("user", [SHORT_USER])
        return self._count([SHORT_USER, SHORT_REPLY, message]) - self._base("exchange", [SHORT_USER, SHORT_REPLY])

    def measure(self, message: Message) -> int:
        converted = template_message(message, self.call_names)
        # A short message a strategy writes (a cut result, a summary) is written again, the
        # same, by every replay of a sweep: its units are remembered (a long one is measured
        # once per chat by MeasuredOnce already).
        key = json.dumps(converted, ensure_ascii=False) if len(converted["content"]) <= REMEMBERED_TEXT else None
        known = self._shared["known"]
        units = known.get(key) if key is not None else None
        if units is None:
            try:
                units = self.template_units(converted)
            except TemplateRefused:  # its text as it is, the least the model would read
                units = self.text_tokens(converted, trimmed=False)
            if key is not None:
                if len(known) >= REMEMBERED_MESSAGES:
                    known.clear()
                known[key] = units
        return units + _image_units(message)

    def text_tokens(self, message: dict, trimmed: bool = True) -> int:
        """The tokens of a message's own words, without the template: its content and each call's
        name and arguments, as the template messages hold them, without the whitespace at their
        ends (which Llama's and Gemma's templates trim away) unless `trimmed` is false."""
        parts = [message["content"]]
        for call in message.get("tool_calls") or ():
            arguments = call["function"]["arguments"]
            parts += [call["function"]["name"], arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)]
        parts = [part.strip() for part in parts] if trimmed else parts
        return sum(self.chat.count_text(part) for part in parts if part)

    def measure_floor(self, prefix: Sequence[Message], tools: list[dict], system_later: bool = False) -> int:
        messages = [template_message(message, self.call_names) for message in prefix]
        definitions = template_tools(tools)
        images = sum(_image_units(message) for message in prefix)
        try:
            with_request = self.chat.count([*messages, SHORT_USER], definitions)
        except TemplateRefused:  # as `measure` counts a refused message: the least the model would read
            return sum(self.text_tokens(message, trimmed=False) for message in messages) + self.definitions_tokens(definitions) + images
        return with_request - self.template_units(SHORT_USER) + images

    def definitions_tokens(self, definitions: list[dict]) -> int:
        """The tokens of the tool definitions' JSON alone (template_tools), without the template."""
        return sum(self.chat.count_text(json.dumps(tool, ensure_ascii=False)) for tool in definitions)

    def template_tokens(self, prefix: Sequence[Message], tools: list[dict]) -> int:
        """Of the floor's tokens, those of the template's own text: what it writes around the
        system prompt and the tools (turn headers, Qwen's tools preamble, Llama's date lines,
        the reply's prompt), beyond the prompt's words and the definitions' JSON."""
        floor = self.with_call_names(call_names(prefix)).measure_floor(prefix, tools)
        words = sum(self.text_tokens(template_message(message, self.call_names)) for message in prefix)
        return max(0, floor - words - self.definitions_tokens(template_tools(tools)))

    def request_tokens(self, units: int) -> int:
        return units

    def block_tokens(self, units: int) -> float:
        return float(units)

    def count_request(self, messages: list[Message], tools: list[dict] = (), model: str | None = None) -> int:
        """The template's own count of the whole request; a request the template refuses (Gemma's
        turns that do not alternate, say) is counted as the replay counts it, message by message."""
        counter = self.with_call_names(call_names(messages))
        converted = [template_message(message, counter.call_names) for message in messages]
        images = sum(_image_units(message) for message in messages)
        try:
            return self.chat.count(converted, template_tools(list(tools))) + images
        except TemplateRefused:
            first = next((i for i, m in enumerate(messages) if m.get("role") == "user"), len(messages))
            return counter.measure_floor(messages[:first], list(tools)) + sum(counter.measure(m) for m in messages[first:])

    def with_call_names(self, names: dict[str, str]) -> TemplateCounter:
        if not names:
            return self
        twin = copy.copy(self)  # shares the loaded chat
        twin.call_names = {**self.call_names, **names}
        return twin

