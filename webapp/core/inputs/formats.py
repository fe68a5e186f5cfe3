"""Transcripts in the formats agents log, read into the chat-completions messages the
playground replays, with every problem named by its place in the input.

The format is detected from the JSON's shape (docs/transcripts.md has the rules and examples):
- `openai-chat`: OpenAI chat completions, a list of messages or an object with "messages" and
  "tools" (or the legacy "functions"). The messages are kept exactly as given.
- `openai-responses`: OpenAI Responses API input items, a list of items or an object with
  "input" (and "instructions", "tools").
- `anthropic-messages`: Anthropic Messages, an object with "messages" and "system", or
  messages whose content blocks are Anthropic's (tool_use, tool_result, image with a source).
- `swe-agent`: a SWE-agent trajectory (an object with "history") or its history list, whose
  tool results name their call in a one-item `tool_call_ids` list.

Every format but the first is rewritten as chat-completions messages: `Imported.notes` says
what was rewritten, in words a person reads, and `origins` keeps where each message came from.
"""

from __future__ import annotations

import json
import math
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from ..i18n import N_

Message = dict[str, Any]
Problems = list[tuple[str, str]]

FORMAT_LABELS = {
    "openai-chat": N_("OpenAI chat completions"),
    "openai-responses": N_("OpenAI Responses API input items"),
    "anthropic-messages": N_("Anthropic Messages"),
    "swe-agent": N_("SWE-agent trajectory"),
}
# Said on every page of an Anthropic transcript, next to the counter's name.
NO_CLAUDE_TOKENIZER = N_(
    "Counted with %(counter)s, not with Claude's tokenizer: Anthropic publishes none that runs "
    "offline, so Claude's own count (its token-counting endpoint) differs."
)

BUILTIN_TOOLS_LEFT_OUT = N_(
    "Built-in tools left out: %(count)s (web search, code execution…). Their definitions are the "
    "provider's and not in the request, so they are not counted."
)

CHAT_ROLES = ("system", "developer", "user", "assistant", "tool", "function")
# The content parts the chat-completions API accepts, by role.
PARTS_BY_ROLE = {
    "system": ("text",),
    "developer": ("text",),
    "tool": ("text",),
    "function": ("text",),
    "user": ("text", "image_url", "input_audio", "file"),
    "assistant": ("text", "refusal"),
}
IMAGE_DETAILS = ("low", "high", "auto")
SHOWN_CHARS = 60  # of a bad value quoted in a problem


class FormatError(ValueError):
    """The input cannot be read: each problem is (where in the input, what is wrong)."""

    def __init__(self, problems: Problems):
        self.problems = problems
        super().__init__("; ".join(f"{where}: {what}" if where else what for where, what in problems))


@dataclass
class Imported:
    """A transcript read into chat-completions form."""

    format: str
    messages: list[Message]
    tools: list[dict]
    # "tools", or "functions" for legacy function calling: the request keeps the field it had.
    tools_field: str = "tools"
    # Where each message came from in the input ("messages[3]", "input[5]", "system").
    origins: list[str] = field(default_factory=list)
    # What was rewritten, as (catalog message, numbers) for the web to say in the reader's language.
    notes: list[tuple[str, dict[str, int]]] = field(default_factory=list)
    # Indexes of user messages that only show the model an example (SWE-agent's demonstrations).
    examples: frozenset[int] = frozenset()


# --- Layers ------------------------------------------------------------------------------------

# The delimiters the manual advises for a request's parts (004_abe3947712a3ce73.txt, step 7:
# "<memory>, <context>, <history>"): a system or developer message whose text starts with one
# of these is long-term memory or retrieved documents. Any other message is history.
LAYER_TAGS = {"<memory>": "memory", "<context>": "retrieval"}


def message_layer(message: Message) -> str:
    """The layer of a transcript's message: memory or retrieval for a system or developer
    message that opens with <memory> or <context>, else history."""
    if message.get("role") not in ("system", "developer"):
        return "history"
    content = message.get("content")
    text = content if isinstance(content, str) else "".join(
        str(part.get("text", "")) for part in content or [] if isinstance(part, dict)
    )
    opening = text.lstrip()
    return next((layer for tag, layer in LAYER_TAGS.items() if opening.startswith(tag)), "history")


# --- Reading JSON strictly --------------------------------------------------------------------


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number (strict JSON has no NaN or Infinity)")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:SHOWN_CHARS]} is too large for JSON (it would be Infinity)")
    return value


def loads(text: str) -> Any:
    """json.loads, refusing NaN, Infinity and numbers too large to be finite: whatever is
    read is written back as strict JSON by every JSON page."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite)


# --- Detecting the format ---------------------------------------------------------------------

RESPONSES_ITEMS = ("message", "function_call", "function_call_output", "reasoning")
ANTHROPIC_BLOCKS = ("tool_use", "tool_result", "thinking", "redacted_thinking", "document")
SWE_AGENT_KEYS = ("tool_call_ids", "message_type", "agent", "is_demo")
ACCEPTED_SHAPES = (
    'expected a transcript: a JSON list of messages, or an object with "messages" '
    '(OpenAI chat completions, Anthropic Messages), "input" (OpenAI Responses API) or '
    '"history" (SWE-agent trajectory)'
)


def detect(raw: Any) -> str:
    if isinstance(raw, dict):
        if "history" in raw and "messages" not in raw:
            return "swe-agent"
        if "input" in raw and "messages" not in raw:
            return "openai-responses"
        if "messages" in raw:
            return "anthropic-messages" if _anthropic_like(raw.get("messages"), raw) else "openai-chat"
        raise FormatError([("", ACCEPTED_SHAPES)])
    if isinstance(raw, list):
        items = [item for item in raw if isinstance(item, dict)]
        if any(item.get("type") in RESPONSES_ITEMS or ("type" in item and "role" not in item) for item in items):
            return "openai-responses"
        if any(key in item for item in items for key in SWE_AGENT_KEYS):
            return "swe-agent"
        return "anthropic-messages" if _anthropic_like(raw, {}) else "openai-chat"
    raise FormatError([("", ACCEPTED_SHAPES)])


def _anthropic_like(messages: Any, top: dict) -> bool:
    if "system" in top:
        return True
    tools = top.get("tools")
    if isinstance(tools, list) and any(isinstance(t, dict) and "input_schema" in t for t in tools):
        return True
    for message in messages if isinstance(messages, list) else []:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and (
                block.get("type") in ANTHROPIC_BLOCKS or (block.get("type") == "image" and "source" in block)
            ):
                return True
    return False


def import_transcript(raw: Any) -> Imported:
    """The transcript in chat-completions form, or FormatError naming every problem."""
    reader = {
        "openai-chat": _read_chat,
        "openai-responses": _read_responses,
        "anthropic-messages": _read_anthropic,
        "swe-agent": _read_swe_agent,
    }[detect(raw)]
    imported = reader(raw)
    problems = chat_problems(imported)
    if problems:
        raise FormatError(problems)
    return imported


def said(counts: dict[str, int], notes: dict[str, str]) -> list[tuple[str, dict[str, int]]]:
    """The note of each rewriting that happened, with how many times (`%(count)s`)."""
    return [(note, {"count": counts[key]}) for key, note in notes.items() if counts.get(key)]


# --- Small checks shared by the readers -------------------------------------------------------


def kind(value: Any) -> str:
    """What a JSON value is, in the words of an error message."""
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return "null"


def show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


class Check:
    """Collects problems as (where, what)."""

    def __init__(self):
        self.problems: Problems = []

    def add(self, where: str, what: str) -> None:
        self.problems.append((where, what))

    def string(self, value: Any, where: str, *, required: bool = True, nonempty: bool = False) -> bool:
        if value is None and not required:
            return True
        if not isinstance(value, str):
            self.add(where, "required field is missing" if value is None else f"expected a string, got {kind(value)}")
            return False
        if nonempty and not value:
            self.add(where, "must not be empty")
            return False
        return True

    def object(self, value: Any, where: str, expected: str = "an object") -> bool:
        if not isinstance(value, dict):
            self.add(where, f"expected {expected}, got {kind(value)}")
            return False
        return True

    def array(self, value: Any, where: str, expected: str = "a list") -> bool:
        if not isinstance(value, list):
            self.add(where, f"expected {expected}, got {kind(value)}")
            return False
        return True

    def one_of(self, value: Any, accepted: tuple[str, ...], where: str) -> bool:
        if value not in accepted:
            got = "nothing" if value is None else show(value)
            self.add(where, f"got {got}; accepted: {', '.join(accepted)}")
            return False
        return True


# --- Chat completions: the form every transcript ends in --------------------------------------


def _read_chat(raw: Any) -> Imported:
    check = Check()
    top = raw if isinstance(raw, dict) else {"messages": raw}
    messages = top.get("messages")
    if messages is None:
        raise FormatError([("messages", "required field is missing")])
    if not check.array(messages, "messages", "a list of messages") or not messages:
        raise FormatError(check.problems or [("messages", "the transcript has no message: at least 1 is needed")])
    tools, tools_field = [], "tools"
    if "tools" in top and "functions" in top:
        check.add("functions", 'a request has either "tools" or the legacy "functions", not both')
    elif "functions" in top:
        tools, tools_field = top["functions"], "functions"
        _check_functions(check, tools, "functions")
    elif "tools" in top:
        tools = top["tools"]
        _check_tools(check, tools, "tools")
    if check.problems:
        raise FormatError(check.problems)
    notes = []
    if tools_field == "functions" or any(isinstance(m, dict) and ("function_call" in m or m.get("role") == "function") for m in messages):
        notes.append((N_("Legacy function calling (functions, function_call, role function) is kept as it is sent."), {}))
    return Imported("openai-chat", messages, tools, tools_field, [f"messages[{i}]" for i in range(len(messages))], notes)


def chat_problems(imported: Imported) -> Problems:
    """What the chat-completions API would refuse in the messages' shapes, and tool call ids a
    reader cannot tell apart. Places are the input's own (`origins`)."""
    check = Check()
    for index, message in enumerate(imported.messages):
        _check_message(check, message, f"messages[{index}]")
    if not check.problems:
        _check_invisible_ids(check, imported.messages)
    if imported.format == "openai-chat":
        return check.problems
    return [relocate(where, what, imported.origins) for where, what in check.problems]


def relocate(where: str, what: str, origins: list[str]) -> tuple[str, str]:
    """A problem found in the rewritten messages ("messages[4].tool_calls"), placed at the
    input's message it came from ("input[7]"), the rewritten field named in the text."""
    if not where.startswith("messages["):
        return where, what
    number, rest = where[len("messages["):].split("]", 1)
    index = int(number)
    origin = origins[index] if index < len(origins) else where
    return origin, f"{rest.lstrip('.')}: {what}" if rest else what


def _check_message(check: Check, message: Any, at: str) -> None:
    if not check.object(message, at, "a message object"):
        return
    role = message.get("role")
    if not check.one_of(role, CHAT_ROLES, f"{at}.role"):
        return
    content = message.get("content")
    if content is None:
        if role != "assistant" and "content" in message:
            check.add(f"{at}.content", f"a {role} message needs content, got null")
        elif role != "assistant":
            check.add(f"{at}.content", "required field is missing")
    elif isinstance(content, list):
        for position, part in enumerate(content):
            _check_part(check, part, PARTS_BY_ROLE[role], f"{at}.content[{position}]")
    elif not isinstance(content, str):
        check.add(f"{at}.content", f"expected a string or a list of content parts, got {kind(content)}")
    if "name" in message:
        check.string(message["name"], f"{at}.name")
    if message.get("refusal") is not None:
        check.string(message["refusal"], f"{at}.refusal")
    if role == "tool":
        check.string(message.get("tool_call_id"), f"{at}.tool_call_id", nonempty=True)
    if role == "function":
        check.string(message.get("name"), f"{at}.name", nonempty=True)
    if message.get("tool_calls") is not None:
        if role != "assistant":
            check.add(f"{at}.tool_calls", "only an assistant message calls tools")
        elif check.array(message["tool_calls"], f"{at}.tool_calls", "a list of tool calls"):
            for position, call in enumerate(message["tool_calls"]):
                _check_call(check, call, f"{at}.tool_calls[{position}]")
    if message.get("function_call") is not None:
        call = message["function_call"]
        where = f"{at}.function_call"
        if role != "assistant":
            check.add(where, "only an assistant message calls a function")
        elif check.object(call, where, "an object with name and arguments"):
            check.string(call.get("name"), f"{where}.name", nonempty=True)
            check.string(call.get("arguments"), f"{where}.arguments")


def _check_part(check: Check, part: Any, accepted: tuple[str, ...], at: str) -> None:
    if not check.object(part, at, "a content part object"):
        return
    part_type = part.get("type")
    if not check.one_of(part_type, accepted, f"{at}.type"):
        return
    if part_type == "text":
        check.string(part.get("text"), f"{at}.text")
    elif part_type == "refusal":
        check.string(part.get("refusal"), f"{at}.refusal")
    elif part_type == "image_url":
        image = part.get("image_url")
        if check.object(image, f"{at}.image_url", "an object with url"):
            check.string(image.get("url"), f"{at}.image_url.url", nonempty=True)
            if "detail" in image:
                check.one_of(image["detail"], IMAGE_DETAILS, f"{at}.image_url.detail")
    else:  # input_audio, file
        check.object(part.get(part_type), f"{at}.{part_type}")


def _check_call(check: Check, call: Any, at: str) -> None:
    if not check.object(call, at, "a tool call object"):
        return
    check.string(call.get("id"), f"{at}.id", nonempty=True)
    if "type" in call:
        check.one_of(call["type"], ("function",), f"{at}.type")
    function = call.get("function")
    if check.object(function, f"{at}.function", "an object with name and arguments"):
        check.string(function.get("name"), f"{at}.function.name", nonempty=True)
        if not isinstance(function.get("arguments", ""), str):
            check.add(f"{at}.function.arguments", f"the arguments must be a JSON string, as the API sends them, got {kind(function['arguments'])}")


def _visible(text: str) -> str:
    """The text as a reader sees it: without format characters (zero-width spaces and joiners,
    direction marks, the byte-order mark)."""
    return "".join(c for c in text if unicodedata.category(c) != "Cf")


def _check_invisible_ids(check: Check, messages: list[Message]) -> None:
    """Two tool call ids that differ only by invisible characters are different calls for an
    API but the same for anyone reading the replay: refused, naming both."""
    seen: dict[str, tuple[str, str]] = {}
    for index, message in enumerate(messages):
        for position, call in enumerate(message.get("tool_calls") or []):
            call_id = call["id"]
            visible = _visible(call_id)
            where = f"messages[{index}].tool_calls[{position}].id"
            if visible in seen and seen[visible][0] != call_id:
                first, first_at = seen[visible]
                hidden = sorted({f"U+{ord(c):04X} {unicodedata.name(c, '?')}" for c in call_id + first if unicodedata.category(c) == "Cf"})
                check.add(
                    where,
                    f"{show(call_id)} differs from {show(first)} ({first_at}) only by invisible characters "
                    f"({', '.join(hidden)}): give the calls ids a reader can tell apart",
                )
            seen.setdefault(visible, (call_id, where))


def _check_tools(check: Check, tools: Any, at: str) -> None:
    if not check.array(tools, at, "a list of tool definitions"):
        return
    for index, tool in enumerate(tools):
        where = f"{at}[{index}]"
        if not check.object(tool, where, 'a tool definition object ({"type": "function", "function": {...}})'):
            continue
        if "type" in tool and not check.one_of(tool["type"], ("function",), f"{where}.type"):
            continue
        function = tool.get("function")
        if function is None:
            check.add(f"{where}.function", "required field is missing")
        elif check.object(function, f"{where}.function", "an object with name, description and parameters"):
            _check_function(check, function, f"{where}.function")


def _check_functions(check: Check, functions: Any, at: str) -> None:
    if check.array(functions, at, "a list of function definitions"):
        for index, function in enumerate(functions):
            if check.object(function, f"{at}[{index}]", "a function definition object"):
                _check_function(check, function, f"{at}[{index}]")


def _check_function(check: Check, function: dict, at: str, schema_field: str = "parameters") -> None:
    check.string(function.get("name"), f"{at}.name", nonempty=True)
    if function.get("description") is not None:
        check.string(function["description"], f"{at}.description")
    if function.get(schema_field) is not None:
        check_schema(check, function[schema_field], f"{at}.{schema_field}")


SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")
SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


def check_schema(check: Check, schema: Any, at: str) -> None:
    """The parts of a JSON schema that a request's token count reads have the shape JSON
    Schema gives them: every schema an object, `properties` an object of schemas, `enum` a
    list, `type` a string or a list of strings, `description` a string. Walked without recursion."""
    stack = [(schema, at)]
    while stack:
        node, where = stack.pop()
        if not check.object(node, where, "a JSON schema object"):
            continue
        if "type" in node and not (
            isinstance(node["type"], str) or (isinstance(node["type"], list) and all(isinstance(t, str) for t in node["type"]))
        ):
            check.add(f"{where}.type", f"expected a type name or a list of them, got {kind(node['type'])}")
        if "description" in node:
            check.string(node["description"], f"{where}.description")
        if "enum" in node:
            check.array(node["enum"], f"{where}.enum", "a list of the accepted values")
        if "required" in node and check.array(node["required"], f"{where}.required", "a list of property names"):
            for position, name in enumerate(node["required"]):
                check.string(name, f"{where}.required[{position}]")
        for key in SCHEMA_MAPS:
            if key in node and check.object(node[key], f"{where}.{key}", "an object of schemas by name"):
                stack.extend((child, f"{where}.{key}.{name}") for name, child in node[key].items())
        for key in SCHEMA_LISTS:
            if key in node and check.array(node[key], f"{where}.{key}", "a list of schemas"):
                stack.extend((child, f"{where}.{key}[{i}]") for i, child in enumerate(node[key]))
        for key in ("items", "additionalProperties", "not"):
            child = node.get(key)
            if child is None or isinstance(child, bool):
                continue
            if isinstance(child, dict):
                stack.append((child, f"{where}.{key}"))
            elif key == "items" and isinstance(child, list):
                stack.extend((item, f"{where}.items[{i}]") for i, item in enumerate(child))
            else:
                check.add(f"{where}.{key}", f"expected a schema object or true/false, got {kind(child)}")


# --- OpenAI Responses API input items ---------------------------------------------------------

RESPONSES_ROLES = ("user", "assistant", "system", "developer")
RESPONSES_PARTS = ("input_text", "output_text", "refusal", "input_image")


def _read_responses(raw: Any) -> Imported:
    check = Check()
    top = raw if isinstance(raw, dict) else {"input": raw}
    items = top.get("input")
    if isinstance(items, str):  # the API's shorthand for one user message
        items = [{"role": "user", "content": items}]
    if not check.array(items, "input", "a list of input items") or not items:
        raise FormatError(check.problems or [("input", "the transcript has no item: at least 1 is needed")])
    messages: list[Message] = []
    origins: list[str] = []
    counts = {"reasoning": 0, "builtin": 0, "tools": 0}
    instructions = top.get("instructions")
    if instructions is not None and check.string(instructions, "instructions") and instructions:
        messages.append({"role": "system", "content": instructions})
        origins.append("instructions")
    for index, item in enumerate(items):
        at = f"input[{index}]"
        if not check.object(item, at, "an input item object"):
            continue
        item_type = item.get("type", "message" if "role" in item else None)
        if not check.one_of(item_type, RESPONSES_ITEMS, f"{at}.type"):
            continue
        if item_type == "reasoning":
            counts["reasoning"] += 1
        elif item_type == "message":
            message = _responses_message(check, item, at)
            if message is not None:
                messages.append(message)
                origins.append(at)
        elif item_type == "function_call":
            counts["tools"] += 1
            if not (
                check.string(item.get("call_id"), f"{at}.call_id", nonempty=True)
                & check.string(item.get("name"), f"{at}.name", nonempty=True)
                & check.string(item.get("arguments"), f"{at}.arguments")
            ):
                continue
            call = {"id": item["call_id"], "type": "function", "function": {"name": item["name"], "arguments": item["arguments"]}}
            # The calls of one model turn follow its text: together they are one assistant message.
            if messages and messages[-1]["role"] == "assistant" and origins[-1] != "instructions":
                messages[-1].setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
                origins.append(at)
        else:  # function_call_output
            if check.string(item.get("call_id"), f"{at}.call_id", nonempty=True):
                output = _responses_output(check, item.get("output"), f"{at}.output")
                if output is not None:
                    messages.append({"role": "tool", "tool_call_id": item["call_id"], "content": output})
                    origins.append(at)
    tools = function_tools(check, top.get("tools", []), counts, "function", "parameters")
    if check.problems:
        raise FormatError(check.problems)
    counts["instructions"] = int(bool(instructions))
    notes = said(counts, {
        "tools": N_("function_call items became the assistant's tool calls, function_call_output items tool messages."),
        "instructions": N_("The instructions are sent as a system message ahead of the first item."),
        "reasoning": N_("Reasoning items left out: %(count)s. Their content is hidden from the caller (encrypted or summarised), so their tokens cannot be counted here."),
        "builtin": BUILTIN_TOOLS_LEFT_OUT,
    })
    return Imported("openai-responses", messages, tools, "tools", origins, notes)


def _responses_message(check: Check, item: dict, at: str) -> Message | None:
    role = item.get("role")
    if not check.one_of(role, RESPONSES_ROLES, f"{at}.role"):
        return None
    content = item.get("content")
    if isinstance(content, str):
        return {"role": role, "content": content}
    if not check.array(content, f"{at}.content", "a string or a list of content parts"):
        return None
    parts = []
    for position, part in enumerate(content):
        where = f"{at}.content[{position}]"
        if not check.object(part, where, "a content part object") or not check.one_of(part.get("type"), RESPONSES_PARTS, f"{where}.type"):
            continue
        if part["type"] == "refusal":
            if check.string(part.get("refusal"), f"{where}.refusal"):
                parts.append({"type": "refusal", "refusal": part["refusal"]})
        elif part["type"] == "input_image":
            if check.string(part.get("image_url"), f"{where}.image_url", nonempty=True):
                image = {"url": part["image_url"]}
                if part.get("detail") is not None:
                    image["detail"] = part["detail"]
                parts.append({"type": "image_url", "image_url": image})
        elif check.string(part.get("text"), f"{where}.text"):
            parts.append({"type": "text", "text": part["text"]})
    return {"role": role, "content": parts}


def _responses_output(check: Check, output: Any, at: str) -> str | list | None:
    if isinstance(output, str):
        return output
    if not check.array(output, at, "a string or a list of input_text parts"):
        return None
    parts = []
    for position, part in enumerate(output):
        where = f"{at}[{position}]"
        if check.object(part, where, "a content part object") and check.one_of(part.get("type"), ("input_text",), f"{where}.type"):
            if check.string(part.get("text"), f"{where}.text"):
                parts.append({"type": "text", "text": part["text"]})
    return parts


def function_tools(check: Check, tools: Any, counts: dict[str, int], own_type: str, schema_field: str) -> list[dict]:
    """A provider's tool definitions as chat-completions function tools. Tools of another type
    than the provider's own function type are built-in tools: counted and left out."""
    if not check.array(tools, "tools", "a list of tool definitions"):
        return []
    out = []
    for index, tool in enumerate(tools):
        where = f"tools[{index}]"
        if not check.object(tool, where, "a tool definition object"):
            continue
        if tool.get("type", own_type) != own_type:
            counts["builtin"] += 1
            continue
        _check_function(check, tool, where, schema_field)
        fields = {"name": "name", "description": "description", "parameters": schema_field, "strict": "strict"}
        function = {ours: tool[theirs] for ours, theirs in fields.items() if tool.get(theirs) is not None}
        out.append({"type": "function", "function": function})
    return out


# --- Anthropic Messages -----------------------------------------------------------------------

ANTHROPIC_USER_BLOCKS = ("text", "image", "tool_result")
ANTHROPIC_ASSISTANT_BLOCKS = ("text", "tool_use", "thinking", "redacted_thinking")


def _read_anthropic(raw: Any) -> Imported:
    check = Check()
    top = raw if isinstance(raw, dict) else {"messages": raw}
    source = top.get("messages")
    if not check.array(source, "messages", "a list of messages") or not source:
        raise FormatError(check.problems or [("messages", "the transcript has no message: at least 1 is needed")])
    messages: list[Message] = []
    origins: list[str] = []
    counts = {"thinking": 0, "moved": 0, "builtin": 0, "split": 0, "tools": 0}
    system = top.get("system")
    if system is not None:
        text = _anthropic_system(check, system)
        if text:
            messages.append({"role": "system", "content": text})
            origins.append("system")
    for index, message in enumerate(source):
        at = f"messages[{index}]"
        if not check.object(message, at, "a message object") or not check.one_of(message.get("role"), ("user", "assistant"), f"{at}.role"):
            continue
        content = message.get("content")
        if isinstance(content, str):
            messages.append({"role": message["role"], "content": content})
            origins.append(at)
        elif check.array(content, f"{at}.content", "a string or a list of content blocks"):
            reader = _anthropic_user if message["role"] == "user" else _anthropic_assistant
            for rewritten in reader(check, content, at, counts):
                messages.append(rewritten)
                origins.append(at)
    tools = function_tools(check, top.get("tools", []), counts, "custom", "input_schema")
    if check.problems:
        raise FormatError(check.problems)
    counts["system"] = int(bool(system))
    notes = said(counts, {
        "tools": N_("tool_use blocks became the assistant's tool calls, tool_result blocks tool messages."),
        "system": N_("The system prompt is sent as the first message."),
        "split": N_("User turns holding tool results and text: %(count)s. The results are sent first, as tool messages, then the text as a user message."),
        "moved": N_("Images inside tool results: %(count)s. They are sent in the user message after the results, since a tool message carries only text."),
        "thinking": N_("Thinking blocks left out: %(count)s. Claude drops earlier turns' thinking from its context."),
        "builtin": BUILTIN_TOOLS_LEFT_OUT,
    })
    return Imported("anthropic-messages", messages, tools, "tools", origins, notes)


def _anthropic_system(check: Check, system: Any) -> str | list:
    if isinstance(system, str):
        return system
    parts = []
    if check.array(system, "system", "a string or a list of text blocks"):
        for index, block in enumerate(system):
            where = f"system[{index}]"
            if check.object(block, where, "a text block") and check.one_of(block.get("type"), ("text",), f"{where}.type"):
                if check.string(block.get("text"), f"{where}.text"):
                    parts.append({"type": "text", "text": block["text"]})
    return parts


def _anthropic_image(check: Check, block: dict, where: str) -> dict | None:
    source = block.get("source")
    if not check.object(source, f"{where}.source", "an object with type base64 or url"):
        return None
    if source.get("type") == "base64":
        if check.string(source.get("media_type"), f"{where}.source.media_type") & check.string(source.get("data"), f"{where}.source.data"):
            return {"type": "image_url", "image_url": {"url": f"data:{source['media_type']};base64,{source['data']}"}}
        return None
    if check.one_of(source.get("type"), ("base64", "url"), f"{where}.source.type") and check.string(source.get("url"), f"{where}.source.url", nonempty=True):
        return {"type": "image_url", "image_url": {"url": source["url"]}}
    return None


def _anthropic_user(check: Check, blocks: list, at: str, counts: dict[str, int]) -> list[Message]:
    results: list[Message] = []
    parts: list[dict] = []
    moved: list[dict] = []
    for position, block in enumerate(blocks):
        where = f"{at}.content[{position}]"
        if not check.object(block, where, "a content block object") or not check.one_of(block.get("type"), ANTHROPIC_USER_BLOCKS, f"{where}.type"):
            continue
        if block["type"] == "text":
            if check.string(block.get("text"), f"{where}.text"):
                parts.append({"type": "text", "text": block["text"]})
        elif block["type"] == "image":
            image = _anthropic_image(check, block, where)
            if image:
                parts.append(image)
        elif check.string(block.get("tool_use_id"), f"{where}.tool_use_id", nonempty=True):
            results.append({"role": "tool", "tool_call_id": block["tool_use_id"], "content": _tool_result_text(check, block.get("content"), where, moved)})
    counts["moved"] += len(moved)
    parts = moved + parts
    if results and parts:
        counts["split"] += 1
    return results + ([{"role": "user", "content": parts}] if parts or not results else [])


def _tool_result_text(check: Check, content: Any, where: str, moved: list[dict]) -> str | list:
    if content is None or isinstance(content, str):
        return content or ""
    parts = []
    if check.array(content, f"{where}.content", "a string or a list of text and image blocks"):
        for position, block in enumerate(content):
            at = f"{where}.content[{position}]"
            if not check.object(block, at, "a content block object") or not check.one_of(block.get("type"), ("text", "image"), f"{at}.type"):
                continue
            if block["type"] == "text":
                if check.string(block.get("text"), f"{at}.text"):
                    parts.append({"type": "text", "text": block["text"]})
            elif image := _anthropic_image(check, block, at):
                moved.append(image)
    return parts


def _anthropic_assistant(check: Check, blocks: list, at: str, counts: dict[str, int]) -> list[Message]:
    parts: list[dict] = []
    calls: list[dict] = []
    for position, block in enumerate(blocks):
        where = f"{at}.content[{position}]"
        if not check.object(block, where, "a content block object") or not check.one_of(block.get("type"), ANTHROPIC_ASSISTANT_BLOCKS, f"{where}.type"):
            continue
        if block["type"] == "text":
            if check.string(block.get("text"), f"{where}.text"):
                parts.append({"type": "text", "text": block["text"]})
        elif block["type"] in ("thinking", "redacted_thinking"):
            counts["thinking"] += 1
        elif (
            check.string(block.get("id"), f"{where}.id", nonempty=True)
            & check.string(block.get("name"), f"{where}.name", nonempty=True)
            & check.object(block.get("input", {}), f"{where}.input", "an object of arguments")
        ):
            counts["tools"] += 1
            arguments = json.dumps(block.get("input", {}), ensure_ascii=False)
            calls.append({"id": block["id"], "type": "function", "function": {"name": block["name"], "arguments": arguments}})
    message: Message = {"role": "assistant", "content": parts or None}
    if calls:
        message["tool_calls"] = calls
    return [message]


# --- SWE-agent trajectories -------------------------------------------------------------------

SWE_AGENT_ROLES = ("system", "user", "assistant", "tool")


def _read_swe_agent(raw: Any) -> Imported:
    """SWE-agent's history is chat messages with its own bookkeeping fields (agent,
    message_type, thought, action, is_demo), which are not sent; a tool result names its call
    in `tool_call_ids`, a list SWE-agent fills with exactly one id."""
    check = Check()
    history = raw.get("history") if isinstance(raw, dict) else raw
    if not check.array(history, "history", "a list of messages") or not history:
        raise FormatError(check.problems or [("history", "the trajectory has no message: at least 1 is needed")])
    messages: list[Message] = []
    examples = set()
    for index, item in enumerate(history):
        at = f"history[{index}]"
        if not check.object(item, at, "a message object") or not check.one_of(item.get("role"), SWE_AGENT_ROLES, f"{at}.role"):
            continue
        message: Message = {"role": item["role"], "content": item.get("content")}
        if item["role"] == "tool":
            ids = item.get("tool_call_ids", [item.get("tool_call_id")])
            if not (isinstance(ids, list) and len(ids) == 1):
                check.add(f"{at}.tool_call_ids", f"expected a list of exactly one call id, got {show(ids)}: which call this result answers is ambiguous")
                continue
            message["tool_call_id"] = ids[0]
        if item.get("tool_calls") is not None:
            message["tool_calls"] = item["tool_calls"]
        if item.get("is_demo") and item["role"] == "user":
            examples.add(len(messages))
        messages.append(message)
    if check.problems:
        raise FormatError(check.problems)
    notes = [
        (N_("SWE-agent's own fields (agent, message_type, thought, action) were left out, as SWE-agent leaves them out of its requests; tool_call_ids became tool_call_id."), {}),
        (N_("A trajectory does not hold the tool definitions, so they are not counted."), {}),
    ]
    if examples:
        notes.append((N_("Demonstrations: %(count)s. They are examples, sent ahead of the first real task like the system prompt."), {"count": len(examples)}))
    return Imported("swe-agent", messages, [], "tools", [f"history[{i}]" for i in range(len(history))], notes, frozenset(examples))
