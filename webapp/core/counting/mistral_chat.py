"""Mistral's chat format, written by Mistral's own encoder (`mistral-common`).

Mistral publishes no Jinja template as the reference of its format: `mistral-common` builds the
tokens of a request itself (`encode_chat_completion`).
So the playground asks it directly, with the messages a chat template would read
(chat_render.template_message) turned back into the OpenAI form it takes.
"""

from __future__ import annotations

import json
import re

from .chat_render import TemplateRefused
from .guarded import GuardedCount

NOT_ID = re.compile(r"[^a-zA-Z0-9]")
NOT_NAME = re.compile(r"[^a-zA-Z0-9_-]")
NAME_LENGTH = 64


def mistral_id(call_id: str) -> str:
    """A call id as Mistral's encoder accepts one: 9 letters and digits (its rule since v3): the
    last nine letters and digits of the id's own (vLLM's truncate_tool_call_ids keeps the last
    nine characters), padded with zeros when it has fewer."""
    return NOT_ID.sub("", call_id)[-9:].rjust(9, "0")


def mistral_name(name: str) -> str:
    """A function's name as Mistral's encoder accepts one (mistral-common 1.13.1's validator:
    letters, digits, _ and -, at most 64): each other character an underscore, cut at 64 (the
    playground's convention, so that an MCP tool's `web.search` is counted as `web_search`, not
    refused. mistral-common refuses such a request, and vLLM hands it the names as they are
    (vllm/tokenizers/mistral.py @ 0065ad5), so that a server answers 400 where an agent's client
    has not renamed its tools)."""
    return NOT_NAME.sub("_", name)[:NAME_LENGTH] or "_"


def _tool(tool: dict) -> dict:
    return {**tool, "function": {**tool["function"], "name": mistral_name(str(tool["function"].get("name", "")))}}


def _openai(message: dict) -> dict:
    out = {"role": message["role"], "content": message["content"]}
    if message.get("tool_calls"):
        out["content"] = message["content"] or None
        out["tool_calls"] = [
            {
                "id": mistral_id(call["id"]),
                "type": "function",
                "function": {
                    "name": mistral_name(call["function"]["name"]),
                    "arguments": call["function"]["arguments"] if isinstance(call["function"]["arguments"], str)
                    else json.dumps(call["function"]["arguments"], ensure_ascii=False),
                },
            }
            for call in message["tool_calls"]
        ]
    if message["role"] == "tool":
        out["tool_call_id"] = mistral_id(message.get("tool_call_id", ""))
        out["name"] = mistral_name(message["name"]) if message.get("name") else None
    return out


class MistralChat:
    """The tokens of a request as Mistral's encoder writes them, from one of its vocabularies."""

    closing: tuple[dict, ...] = ()

    def __init__(self, path: str):
        from mistral_common.protocol.instruct.validator import ValidationMode
        from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

        self.tokenizer = MistralTokenizer.from_file(path, mode=ValidationMode.agnostic)
        text = self.tokenizer.instruct_tokenizer.tokenizer
        # Tekken is tiktoken inside (its `_model`), whose regex overflows on a long run of
        # whitespace: a text alone is counted with the guard (guarded.py) there.
        model = getattr(text, "_model", None)
        self._guarded = GuardedCount(model) if model is not None and hasattr(model, "encode_ordinary") else None

    def request(self, messages: list[dict], tools: list[dict] | None = None):
        from mistral_common.protocol.instruct.request import ChatCompletionRequest

        return ChatCompletionRequest.from_openai([_openai(m) for m in messages], [_tool(tool) for tool in tools or ()] or None)

    def count(self, messages: list[dict], tools: list[dict] | None = None) -> int:
        from mistral_common.exceptions import MistralCommonException
        from pydantic import ValidationError

        try:
            return len(self.tokenizer.encode_chat_completion(self.request(messages, tools)).tokens)
        except (MistralCommonException, ValidationError, ValueError, RecursionError) as refused:
            # ValueError: tekken's regex overflowed (a long run of whitespace); the counter then
            # counts the message's text alone, with the guard. RecursionError: a tool's schema
            # nested too deep for the encoder's JSON writer.
            raise TemplateRefused(str(refused)) from None

    def count_text(self, text: str) -> int:
        if self._guarded is not None:
            return self._guarded.ordinary(text)
        return len(self.tokenizer.instruct_tokenizer.tokenizer.encode(text, bos=False, eos=False))
