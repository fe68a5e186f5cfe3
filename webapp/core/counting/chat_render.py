"""A chat as an open model reads it: the model's own chat template, rendered.

An open model does not bill a request by a published formula: its server renders the messages
(and the tool definitions, where the template takes them) through the model's chat template, a
Jinja template shipped with its tokenizer, and the model reads the tokens of that text. The
environment below is the one Hugging Face `transformers` renders templates in (its
`apply_chat_template`: a sandbox, `trim_blocks` and `lstrip_blocks`, a `tojson` that keeps
non-ASCII text, `raise_exception`, and the loop controls); the tests render the same chats with
`transformers` itself and compare (tests/test_open_models.py).

`template_messages` turns the playground's messages (OpenAI chat-completions JSON) into what
the templates read, the way OpenAI-compatible servers do it before they render.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any, Protocol

from .messages import Message, content_text, nests_deeper

# The date a template prints when it asks for today's (Llama 3.1's "Today Date"): the
# template's own fallback, so that a count does not change from one day to the next.
TEMPLATE_DATE = datetime(2024, 7, 26)


class TemplateRefused(ValueError):
    """The model's template refuses this chat (its own `raise_exception`)."""


def _raise(message: str):
    raise TemplateRefused(message)


def _tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None, separators=None, sort_keys: bool = False) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def environment():
    """A sandboxed Jinja environment set up as transformers sets up its own for chat templates."""
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise
    env.globals["strftime_now"] = TEMPLATE_DATE.strftime
    return env


@dataclass(frozen=True)
class Shape:
    """What a model's template needs done to a chat before it can read it (each field says which
    template and why)."""

    # Llama 3.1's template refuses an assistant message with several calls: one message per call.
    one_call_per_message: bool = False
    # A template that writes no tool definitions (Gemma 3's, DeepSeek V3.1's), though a server
    # must tell the model its tools somehow: the definitions, one JSON line each, close the
    # system prompt, so that they are counted (the playground's convention).
    tools_as_text: bool = False
    # Gemma 3's template takes no tool role either, and wants user and model turns to alternate:
    # calls are written as their JSON in the model's turn, results as user turns, and
    # consecutive turns of one role are joined.
    calls_as_text: bool = False


def _arguments(text: str) -> Any:
    """A call's arguments as the templates expect them: the JSON object a server parses them
    into before rendering (vLLM's _postprocess_messages, vllm/entrypoints/chat_utils.py @
    001eadcf); text that is not JSON stays text (vLLM would send {}), and so does JSON nested
    deeper than a transcript may be (messages.MAX_NESTING), which a template would write from
    deep in a request's stack (a 5,000-deep array overflowed it)."""
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return text
    return text if nests_deeper(parsed) else parsed


def _calls(message: Message) -> list[dict]:
    calls = [call for call in message.get("tool_calls") or [] if isinstance(call, dict)]
    legacy = message.get("function_call")
    if isinstance(legacy, dict):
        calls.append({"id": "", "function": legacy})
    out = []
    for call in calls:
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        out.append({
            "id": str(call.get("id") or ""),
            "type": "function",
            "function": {"name": str(function.get("name", "")), "arguments": _arguments(str(function.get("arguments", "")))},
        })
    return out


def template_message(message: Message, call_names: dict[str, str]) -> dict:
    """One message as a chat template reads it: a role the templates know (a developer message
    is a system message, a legacy function result a tool result), its text (text and refusal
    parts, "" for none: templates add strings to it), its calls with parsed arguments, and a tool
    result's call id and the name of the function it answers."""
    role = str(message.get("role", ""))
    role = {"developer": "system", "function": "tool"}.get(role, role)
    out: dict[str, Any] = {"role": role, "content": content_text(message.get("content"))}
    if message.get("refusal"):
        out["content"] += str(message["refusal"])
    calls = _calls(message)
    if calls:
        out["tool_calls"] = calls
    if role == "tool":
        call_id = str(message.get("tool_call_id") or "")
        out["tool_call_id"] = call_id
        out["name"] = str(message.get("name") or call_names.get(call_id, ""))
    return out


def _calls_text(message: dict) -> str:
    calls = [json.dumps({"name": c["function"]["name"], "arguments": c["function"]["arguments"]}, ensure_ascii=False) for c in message.get("tool_calls", ())]
    return "\n".join(part for part in (message["content"], *calls) if part)


def shaped(messages: list[dict], shape: Shape) -> list[dict]:
    """`messages` (already template messages) as `shape` says the template needs them."""
    if shape.one_call_per_message:
        split = []
        for message in messages:
            calls = message.get("tool_calls") or []
            split += [{**message, "tool_calls": [call]} for call in calls] if len(calls) > 1 else [message]
        messages = split
    if not shape.calls_as_text:
        return messages
    joined: list[dict] = []
    for message in messages:
        role = {"tool": "user"}.get(message["role"], message["role"])
        text = _calls_text(message) if role == "assistant" else message["content"]
        # Trimmed, as Gemma's template trims a turn, so that a joined turn reads as its parts
        # would; not the system prompt, which it writes as it is.
        text = text if role == "system" else text.strip()
        # Consecutive messages of one role are one turn, joined by a blank line: the system
        # prompts too (a lesson's prompt and memory), which Gemma's template takes only one of.
        # Ollama does the same for every model (template/template.go, collate, v0.33.0-rc2);
        # transformers and vLLM refuse such a chat for Gemma.
        if joined and joined[-1]["role"] == role:
            joined[-1] = {"role": role, "content": "\n\n".join(part for part in (joined[-1]["content"], text) if part)}
        else:
            joined.append({"role": role, "content": text})
    return joined


def template_tools(tools: list[dict]) -> list[dict]:
    """Tool definitions as chat templates read them: OpenAI's {"type": "function", "function":
    {...}} (a bare function, the legacy `functions` form, is wrapped)."""
    out = []
    for tool in tools:
        if isinstance(tool, dict) and isinstance(tool.get("function"), dict):
            out.append(tool)
        elif isinstance(tool, dict):
            out.append({"type": "function", "function": tool})
    return out


def _with_tools_text(messages: list[dict], tools: list[dict]) -> list[dict]:
    """For a template that takes no tools (`tools_as_text`): the definitions, one JSON line
    each, at the end of the system prompt (a system message of their own when there is none)."""
    text = "\n".join(json.dumps(tool, ensure_ascii=False) for tool in tools)
    if messages and messages[0]["role"] == "system":
        return [{**messages[0], "content": messages[0]["content"] + "\n\n" + text}, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]


class Vocabulary(Protocol):
    def encode(self, text: str) -> list[int]:
        """The token ids of a text, each special token (<|im_end|>) one token wherever it stands."""

    def count(self, text: str) -> int:
        """len(encode(text)), as fast as the tokenizer allows."""


@dataclass
class JinjaChat:
    """A model's chat template and tokenizer: the tokens of a whole request, as the model reads it."""

    source: str  # the template
    vocabulary: Vocabulary
    shape: Shape = Shape()
    bos_token: str = ""
    eos_token: str = ""
    closing: tuple[dict, ...] = ()  # template_counter.Chat.closing

    @cached_property
    def template(self):
        return environment().from_string(self.source)

    def count_text(self, text: str) -> int:
        return self.vocabulary.count(text)

    def prepared(self, messages: list[dict], tools: list[dict] | None) -> tuple[list[dict], list[dict] | None]:
        """`messages` (template messages) and `tools` as the template is given them (`shape`)."""
        messages = shaped(messages, self.shape)
        if self.shape.tools_as_text and tools:
            return _with_tools_text(messages, tools), None
        return messages, tools or None

    def render(self, messages: list[dict], tools: list[dict] | None) -> str:
        """The text the model reads: `messages` (template messages) and `tools` through the
        template, with the prompt of the reply that follows."""
        from jinja2 import TemplateError

        try:
            messages, tools = self.prepared(messages, tools)
            return self.template.render(
                messages=messages, tools=tools, add_generation_prompt=True, bos_token=self.bos_token, eos_token=self.eos_token
            )
        except (TemplateError, TypeError, RecursionError) as refused:  # a template that cannot read this chat
            raise TemplateRefused(str(refused)) from None

    def count(self, messages: list[dict], tools: list[dict] | None = None) -> int:
        return self.vocabulary.count(self.render(messages, tools))
