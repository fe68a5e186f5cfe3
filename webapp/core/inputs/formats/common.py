"""What every transcript format's reader shares: the record a format is (`Format`), what
reading gives (`Imported`) or refuses (`FormatError`), strict JSON, the `Check` that collects
problems by their place in the input, and the checks of tool definitions and their JSON
schemas, which every format with tools rewrites into chat completions' own."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from ...i18n import N_
from ...model import RecordedCompaction, RecordedUsage
from ..scenarios import MAX_NESTING, value_problems

Message = dict[str, Any]
Problems = list[tuple[str, str]]

BUILTIN_TOOLS_LEFT_OUT = N_(
    "Built-in tools left out: %(count)s (web search, code execution…). Their definitions are the "
    "provider's and not in the request, so they are not counted."
)
SHOWN_CHARS = 60  # of a bad value quoted in a problem


@dataclass(frozen=True)
class Format:
    """A transcript format: its name (kept in a scenario's origin and written in the JSON
    pages), its label for people (a catalog message), whether a JSON value has its shape, and
    the reader that rewrites it into chat-completions messages."""

    name: str
    label: str
    detect: Callable[[Any], bool]
    read: Callable[[Any], Imported]
    # Catalog messages said on every page of such a transcript; %(counter)s names the counter.
    notes: tuple[str, ...] = ()
    # For a file holding several runs (an evaluation's output): the runs, each read on its own.
    runs: Callable[[Any], list[Any]] | None = None
    # The top-level keys of a JSON object that its test and its reader look at: the keys no
    # format reads are not parsed (unread_keys.py). None: it needs the whole object. A format
    # that never takes an object (a list, JSON Lines, text) reads none.
    reads_keys: frozenset[str] | None = None
    # What its test looks for, in words (English, like every reading problem): a file that no
    # format reads is told every format's label and shape (formats/__init__.py, `accepted_shapes`).
    shape: str = field(kw_only=True)


class FormatError(ValueError):
    """The input cannot be read: each problem is (where in the input, what is wrong)."""

    def __init__(self, problems: Problems):
        self.problems = problems
        super().__init__("; ".join(f"{where}: {what}" if where else what for where, what in problems))


@dataclass(frozen=True)
class JsonLines:
    """A file of one JSON value per line (JSONL): each value with its 1-based line number."""

    records: tuple[tuple[int, Any], ...]


@dataclass(frozen=True)
class PlainText:
    """A text that is neither JSON nor JSON Lines (a markdown chat log), with why JSON refused it."""

    text: str
    json_error: str


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
    # What the session itself recorded, as plain data (docs/transcripts.md, "Recorded usage").
    model: str | None = None
    usage: tuple[RecordedUsage, ...] = ()
    compactions: tuple[RecordedCompaction, ...] = ()
    # The context window the file itself records (Codex's model_context_window, Cline's
    # modelInfo, OpenHands' llm_config), and where: it wins over the window of the model named.
    window: int | None = None
    window_source: str = ""
    # Settings the harness that wrote the file ran with, as the file says (Claude Code's output
    # reserve, from its version): the scenario's defaults take them (transcripts.py).
    harness_settings: dict[str, Any] = field(default_factory=dict)


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


def _stdlib_loads(text: str) -> Any:
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite)


# What the walk below looks at: lists and objects, and floats; every other value is a leaf.
WATCHED = frozenset((dict, list, float))
# orjson reads an integer past 64 bits as a float, the standard library as the integer itself.
INTEGER_AS_FLOAT = float(2**63)


def _read_alike(value: Any) -> bool:
    """Whether the standard library reads as `value` the text orjson read as `value`: at most
    MAX_NESTING levels deep (deeper, its recursion limit may refuse it, where orjson's is
    1,024) and no float past ±2**63 (an integer past 64 bits, read by orjson as a float).
    Walked a level at a time, keeping only lists, objects and floats: one test of a type per
    value (a 20 MB session holds some 600,000 of them), the floats set aside at each level."""
    level = [value] if type(value) in WATCHED else []
    for depth in range(MAX_NESTING + 1):
        floats = [item for item in level if type(item) is float]
        if floats:
            if not all(-INTEGER_AS_FLOAT < item < INTEGER_AS_FLOAT for item in floats):
                return False
            level = [item for item in level if type(item) is not float]
        if not level:
            return True
        if depth < MAX_NESTING:
            level = [child for item in level for child in (item.values() if type(item) is dict else item) if type(child) in WATCHED]
    return False  # lists or objects on level MAX_NESTING + 1


def read_strict(text: str) -> tuple[Any, bool]:
    """The value of a JSON text and whether orjson read it (then it nests at most MAX_NESTING
    levels), else the standard library, whose answers `loads` gives."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        pass  # NaN, Infinity, 1e400, a lone surrogate, bad JSON: the standard library decides and words it
    else:
        if _read_alike(value):
            return value, True
    return _stdlib_loads(text), False


def loads(text: str) -> Any:
    """json.loads, refusing NaN, Infinity and numbers too large to be finite: whatever is
    read is written back as strict JSON by every JSON page. orjson reads it when it reads
    it the same (a 20 MB session in about half the time, bench/run.py benchmark 6), the
    standard library otherwise: the value or the error is always the standard library's."""
    return read_strict(text)[0]


@dataclass(frozen=True)
class TooDeep:
    """A JSON text whose lists and objects nest deeper than MAX_NESTING: refused whole."""

    problems: Problems


def parse_text(text: str) -> Any:
    """A transcript's text as JSON (refused as TooDeep if it nests too deep), else as JSON
    Lines (every non-blank line a JSON value; a last line cut short, as a log being written
    has it, is set aside), else as plain text."""
    try:
        value, shallow = read_strict(text)
    except (ValueError, RecursionError) as error:
        json_error = str(error)
    else:
        too_deep = [] if shallow else value_problems(value)
        return TooDeep(too_deep) if too_deep else value
    records = []
    lines = [(number, line) for number, line in enumerate(text.splitlines(), 1) if line.strip()]
    for position, (number, line) in enumerate(lines):
        try:
            records.append((number, loads(line)))
        except (ValueError, RecursionError):
            if position == len(lines) - 1 and len(records) > 1:
                break  # the line being written when the file was read
            return PlainText(text, json_error)
    if len(records) < 2:
        return PlainText(text, json_error)
    return JsonLines(tuple(records))


def record_objects(raw: Any, limit: int = 50) -> list[dict]:
    """The first JSON Lines records that are objects: what a format's test looks at."""
    if not isinstance(raw, JsonLines):
        return []
    return [record for _number, record in raw.records[:limit] if isinstance(record, dict)]


def call_number(messages: list[Message]) -> int:
    """The number the next assistant message will have as a call (RecordedUsage.call)."""
    return sum(1 for message in messages if message.get("role") == "assistant") + 1


def settle_calls(messages: list[Message], origins: list[str], counts: dict[str, int]) -> tuple[list[Message], list[str]]:
    """Each assistant message's calls followed at once by their outputs, as chat completions
    requires: the outputs are paired with their calls by id, and messages written before the
    last of them go after it (`counts["moved"]`); calls the log never answers are left out
    (`counts["unanswered"]`)."""
    outputs = {message.get("tool_call_id") for message in messages if message["role"] == "tool"}
    out: list[tuple[Message, str]] = []
    held: list[tuple[Message, str]] = []
    waiting: set[str] = set()  # the calls of the last assistant message whose output is still to come
    for message, origin in zip(messages, origins):
        if message["role"] == "tool":
            out.append((message, origin))
            waiting.discard(message.get("tool_call_id"))
            if held and not waiting:
                counts["moved"] += len(held)  # written before the last output: they were in between
                out += held
                held = []
            continue
        if message["role"] == "assistant":
            out += held
            held = []
            calls = [call for call in message.get("tool_calls") or [] if call["id"] in outputs]
            counts["unanswered"] += len(message.get("tool_calls") or []) - len(calls)
            waiting = {call["id"] for call in calls}
            message = {key: value for key, value in message.items() if key != "tool_calls"} | ({"tool_calls": calls} if calls else {})
            out.append((message, origin))
        elif waiting:
            held.append((message, origin))
        else:
            out.append((message, origin))
    out += held
    return [message for message, _ in out], [origin for _, origin in out]


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


def relocate(where: str, what: str, origins: list[str]) -> tuple[str, str]:
    """A problem found in the rewritten messages ("messages[4].tool_calls"), placed at the
    input's message it came from ("input[7]"), the rewritten field named in the text."""
    if not where.startswith("messages["):
        return where, what
    number, rest = where[len("messages["):].split("]", 1)
    index = int(number)
    origin = origins[index] if index < len(origins) else where
    return origin, f"{rest.lstrip('.')}: {what}" if rest else what


# --- Tool definitions, the chat-completions way -----------------------------------------------


def check_tools(check: Check, tools: Any, at: str) -> None:
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


def check_functions(check: Check, functions: Any, at: str) -> None:
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

