"""Scenarios: a scripted agent chat and the settings it is meant to be played with.

Two sources give the same `Scenario`:
- a TOML file written by a person (comments, multi-line text), validated with pydantic;
- a transcript in one of the formats agents log (transcript_formats.py), read into
  chat-completions messages; an OpenAI chat transcript's messages are kept exactly as given.

A scenario is a prefix and a script. The prefix is every message ahead of the first real user
request (system and developer messages, few-shot examples, an opening assistant message): it
is sent ahead of every request, is the floor of the well, and no strategy ever touches it. The
script starts at the first real request; its exchanges are what compaction works on.

Every problem is reported as a `ScenarioError` naming the source, the field path and what is
expected, so one bad file never stops the others from loading.
"""

from __future__ import annotations

import hashlib
import json
import math
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
)

from ..i18n import N_
from ..engine.history import tool_pair_problems
from ..model import ID_PATTERN, Budget, Condition, Fact, Narration, Origin, Scenario, ScriptMessage, count_calls
from ..settings import COUNTER_NAMES, STRATEGIES, Settings, SettingsError, parse_settings
from ..counting.tokens import Message
from .formats import FormatError, import_transcript
from .formats.common import loads, message_layer, relocate

TOOL_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"


class ScenarioError(ValueError):
    """A scenario that cannot be loaded: where (source, field path) and what is wrong."""

    def __init__(self, source: str, problems: list[tuple[str, str]]):
        self.source = source
        self.problems = problems
        lines = [f"{where}: {what}" if where else what for where, what in problems]
        super().__init__(f"{source}: " + "; ".join(lines))


# --- The TOML format -------------------------------------------------------------------------

Localized = str | dict[Literal["en", "fr", "zh"], str]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)


class ToolSpec(Strict):
    name: str = Field(pattern=TOOL_NAME_PATTERN, description="the function name the model calls")
    description: str = Field("", description="what the tool does, as the model reads it")
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}},
        description="the JSON schema of the arguments",
    )
    fetch_once: bool = Field(
        False, description="true when a result cannot be fetched twice (a payment receipt)"
    )


class FactSpec(Strict):
    text: str = Field(min_length=1, description="text that must still be in the request")
    label: Localized = Field("", description="what the fact is, for people; a string or a table of languages")
    needed_from_call: int = Field(ge=1, description="the first model call that needs it")


class ToolCallSpec(Strict):
    id: str = Field(min_length=1, description="the call id the tool result answers")
    name: str = Field(pattern=TOOL_NAME_PATTERN, description="a tool declared in [[tools]]")
    arguments: dict[str, Any] | str = Field(
        default_factory=dict, description="the arguments, as a table or a JSON string"
    )


PINNED = "never compacted by any strategy, and checked at every call (a safety rule, declared personal data)"


class UserEntry(Strict):
    user: str = Field(description="what the user asks")
    digest: str | None = Field(
        None, description="a summary of this whole exchange, for the summarize strategy"
    )
    pinned: bool = Field(False, description=PINNED)


class AssistantEntry(Strict):
    assistant: str | None = Field(None, description="the reply's text")
    tool_calls: list[ToolCallSpec] = Field(default_factory=list, description="tools it calls")
    pinned: bool = Field(False, description=PINNED)


class ToolEntry(Strict):
    tool: str = Field(min_length=1, description="the id of the tool call this answers")
    content: str = Field(description="the tool's output")
    layer: Literal["history", "retrieval"] = Field(
        "history", description="retrieval: the result of a search in documents, compressed first by by-layer"
    )
    pinned: bool = Field(False, description=PINNED)


class ContextEntry(Strict):
    context: str = Field(min_length=1, description="text the application adds to the request (sent as a system message)")
    layer: Literal["memory", "retrieval"] = Field(
        description="memory: long-term facts on the user or project; retrieval: documents found for the request"
    )
    pinned: bool = Field(False, description=PINNED)


def _entry_kind(value: Any) -> str | None:
    if isinstance(value, dict):
        for key in ("user", "tool", "context"):
            if key in value:
                return key
        if "assistant" in value or "tool_calls" in value:
            return "assistant"
    return None


ChatEntry = Annotated[
    Annotated[UserEntry, Tag("user")]
    | Annotated[AssistantEntry, Tag("assistant")]
    | Annotated[ToolEntry, Tag("tool")]
    | Annotated[ContextEntry, Tag("context")],
    Discriminator(
        _entry_kind,
        custom_error_type="chat_entry",
        custom_error_message="each [[chat]] entry needs one of the keys user, assistant (or tool_calls), tool, context",
    ),
]


class NarrationWhen(Strict):
    """When a narration applies: every condition given must hold (none given: always)."""

    strategy: list[str] | str | None = Field(None, description="the strategy, or one of a list")
    counter: list[str] | str | None = Field(None, description="the counter, or one of a list")
    keep_facts: bool | None = Field(None, description="keep facts on (true) or off (false)")
    compacted: bool | None = Field(None, description="the hammer changed the request at this call")
    overflow: bool | None = Field(None, description="the request is larger than the model's window")
    invalid_request: bool | None = Field(None, description="an API rejects the request: a tool call split from its result")
    no_room_for_reply: bool | None = Field(None, description="the request fits but its reply does not")
    facts: Literal["kept", "lost"] | None = Field(
        None, description="kept: every critical fact seen so far is still sent; lost: one of them no longer is"
    )


class NarrationSpec(Strict):
    call: int = Field(ge=1, description="the model call this sentence explains")
    text: Localized = Field(description="a few sentences on what happens at that call")
    when: NarrationWhen | None = Field(None, description="conditions; the first entry of a call whose conditions hold is shown")


class ScenarioFile(Strict):
    id: str = Field(pattern=ID_PATTERN, description="the scenario's id, used in URLs")
    order: int = Field(
        1000, ge=0, le=1_000_000, description="place in the list of scenarios, smallest first (then file name)"
    )
    title: Localized = Field(description="a short title")
    lesson: Localized = Field(description="the one-line lesson")
    system: str = Field(min_length=1, description="the system prompt, the floor of the well")
    settings: dict[str, Any] = Field(default_factory=dict, description="default settings")
    budget: Budget = Field(default_factory=Budget, description="each layer's share of the window (default: the manual's)")
    tools: list[ToolSpec] = Field(default_factory=list, description="tool definitions")
    facts: list[FactSpec] = Field(default_factory=list, description="critical facts")
    narration: list[NarrationSpec] = Field(default_factory=list, description="per-call narration")
    chat: list[ChatEntry] = Field(min_length=1, description="the scripted conversation")


def _localized(value: Localized) -> dict[str, str]:
    return {"en": value} if isinstance(value, str) else dict(value)


def _names(value: list[str] | str | None, accepted: tuple[str, ...] | dict, key: str) -> tuple[frozenset[str] | None, list[tuple[str, str]]]:
    if value is None:
        return None, []
    names = [value] if isinstance(value, str) else value
    unknown = [name for name in names if name not in accepted]
    if unknown or not names:
        return None, [(key, f"got {', '.join(map(repr, unknown)) or 'an empty list'}, expected one or a list of {', '.join(accepted)}")]
    return frozenset(names), []


def _fact(spec: FactSpec) -> Fact:
    labels = _localized(spec.label) if spec.label else {}
    return Fact(spec.text, labels.get("en") or spec.text, spec.needed_from_call, labels)


def _condition(when: NarrationWhen | None) -> tuple[Condition, list[tuple[str, str]]]:
    if when is None:
        return Condition(), []
    strategies, problems = _names(when.strategy, STRATEGIES, "strategy")
    counters, more = _names(when.counter, COUNTER_NAMES, "counter")
    flags = when.model_dump(exclude={"strategy", "counter"})
    return Condition(strategies=strategies, counters=counters, **flags), problems + more


def _path(loc: tuple) -> str:
    out = ""
    after_index = False
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not (after_index and part in {"user", "assistant", "tool"} and out.startswith("chat")):
            out += f".{part}" if out else str(part)
        # else: the discriminator's tag right after chat[N] is not a field the author wrote
        after_index = isinstance(part, int)
    return out


def _pydantic_problems(error: ValidationError, root: str = "") -> list[tuple[str, str]]:
    problems = []
    for item in error.errors():
        where = _path(tuple(item["loc"]))
        if root:
            where = f"{root}{where}" if where.startswith("[") else f"{root}.{where}" if where else root
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown field"
        elif item["type"] == "missing":
            message = "required field is missing"
        problems.append((where, message))
    return problems


def _tool_definition(spec: ToolSpec) -> dict:
    return {
        "type": "function",
        "function": {"name": spec.name, "description": spec.description, "parameters": spec.parameters},
    }


def _entry_message(entry: UserEntry | AssistantEntry | ToolEntry | ContextEntry) -> Message:
    if isinstance(entry, UserEntry):
        return {"role": "user", "content": entry.user}
    if isinstance(entry, ToolEntry):
        return {"role": "tool", "tool_call_id": entry.tool, "content": entry.content}
    if isinstance(entry, ContextEntry):
        return {"role": "system", "content": entry.context}
    message: Message = {"role": "assistant", "content": entry.assistant}
    if entry.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": call.arguments
                    if isinstance(call.arguments, str)
                    else json.dumps(call.arguments, ensure_ascii=False),
                },
            }
            for call in entry.tool_calls
        ]
    return message


# Real chats nest a few levels (a JSON schema a dozen). Far deeper input is refused at load,
# since rendering or re-encoding it later (in a web request) would exhaust the stack.
MAX_NESTING = 64


def _value_problems(value: Any) -> list[tuple[str, str]]:
    """A problem when lists and tables nest deeper than MAX_NESTING, or a number is NaN or
    infinite (TOML has both; strict JSON, which every JSON page writes, has neither). Walked
    without recursion."""
    stack = [(value, 1, "")]
    problems = []
    while stack:
        item, depth, where = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            problems.append((where, f"{item} is not a number JSON can write: give a finite number"))
            continue
        children = item.items() if isinstance(item, dict) else enumerate(item) if isinstance(item, list) else None
        if children is None:
            continue
        if depth > MAX_NESTING:
            return [("", f"lists and objects nest more than {MAX_NESTING} levels deep")]
        for key, child in children:
            path = f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}" if where else str(key)
            stack.append((child, depth + 1, path))
    return problems


def parse_scenario_toml(text: str, source: str) -> Scenario:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ScenarioError(source, [("", f"not valid TOML: {error}")]) from None
    except RecursionError:
        raise ScenarioError(source, [("", f"not valid TOML: nested too deep (at most {MAX_NESTING} levels)")]) from None
    if bad_values := _value_problems(raw):
        raise ScenarioError(source, bad_values)
    try:
        spec = ScenarioFile.model_validate(raw)
    except ValidationError as error:
        raise ScenarioError(source, _pydantic_problems(error)) from None

    problems: list[tuple[str, str]] = []
    try:
        settings = parse_settings(spec.settings)
    except SettingsError as error:
        settings = Settings()
        problems += [("settings", problem) for problem in error.problems]

    messages = [_entry_message(entry) for entry in spec.chat]
    problems += tool_pair_problems(messages, "chat")
    tool_names = {tool.name for tool in spec.tools}
    for index, entry in enumerate(spec.chat):
        if isinstance(entry, AssistantEntry):
            for position, call in enumerate(entry.tool_calls):
                if call.name not in tool_names:
                    problems.append(
                        (f"chat[{index}].tool_calls[{position}].name", f"{call.name!r} is not declared in [[tools]]")
                    )
                if isinstance(call.arguments, str):
                    try:
                        json.loads(call.arguments)
                    except (ValueError, RecursionError):
                        problems.append((f"chat[{index}].tool_calls[{position}].arguments", "not valid JSON"))
    start = first_request(messages)
    layers = [getattr(entry, "layer", "history") for entry in spec.chat]
    script = grouped(
        [
            ScriptMessage(f"m{index + 1}", message, getattr(entry, "digest", None), layers[start + index], entry.pinned)
            for index, (entry, message) in enumerate(zip(spec.chat[start:], messages[start:]))
        ]
    )
    calls = count_calls(script)
    for index, fact in enumerate(spec.facts):
        if fact.needed_from_call > calls:
            problems.append((f"facts[{index}].needed_from_call", f"the chat has {calls} model calls"))
    narration: dict[int, list[Narration]] = {}
    for index, note in enumerate(spec.narration):
        if note.call > calls:
            problems.append((f"narration[{index}].call", f"the chat has {calls} model calls"))
        when, condition_problems = _condition(note.when)
        problems += [(f"narration[{index}].when.{key}", what) for key, what in condition_problems]
        earlier = narration.setdefault(note.call, [])
        if earlier and earlier[-1].when.always:
            problems.append(
                (f"narration[{index}]", f"never shown: an earlier entry for call {note.call} has no `when`, so it always applies")
            )
        earlier.append(Narration(_localized(note.text), when))
    if problems:
        raise ScenarioError(source, problems)
    return Scenario(
        id=spec.id,
        title=_localized(spec.title),
        lesson=_localized(spec.lesson),
        prefix=({"role": "system", "content": spec.system}, *messages[:start]),
        tools=[_tool_definition(tool) for tool in spec.tools],
        script=script,
        settings=settings,
        facts=[_fact(f) for f in spec.facts],
        fetch_once_tools=frozenset(tool.name for tool in spec.tools if tool.fetch_once),
        narration={call: tuple(notes) for call, notes in narration.items()},
        source=source,
        order=spec.order,
        prefix_layers=("system", *(layer if layer != "history" else "system" for layer in layers[:start])),
        budget=spec.budget,
    )


def grouped(script: list[ScriptMessage]) -> list[ScriptMessage]:
    """The script with each retrieval message in the group of the model call it enters
    before ("g3": the documents found for call 3), compressed as a unit."""
    call = 1
    out = []
    for item in script:
        if item.role == "assistant":
            call += 1
        out.append(replace(item, group=f"g{call}") if item.layer == "retrieval" else item)
    return out


# --- Transcripts ------------------------------------------------------------------------------


# A pasted transcript's title and lesson, in each language of the interface (like a scenario's).
TRANSCRIPT_WORD = {"en": "Transcript", "fr": "Transcription", "zh": "对话记录"}
TRANSCRIPT_LESSON = {
    "en": "Your own agent's chat, replayed call by call.",
    "fr": "Le chat de votre agent, rejoué appel par appel.",
    "zh": "你自己的智能体对话，逐次调用重放。",
}
NO_PREFIX = N_("No system prompt: each request starts with the first user message, and nothing is added ahead of it.")
PREFIX_KEPT = N_(
    "Messages ahead of the first user request: %(count)s (system prompt, examples, an opening reply). "
    "They are the floor: sent with every request, never compacted."
)


def first_request(messages: list[Message], examples: frozenset[int] = frozenset()) -> int:
    """Index of the first real user request, where the script starts: the messages before it
    (system, developer, few-shot examples, an opening assistant message) are the prefix."""
    return next(
        (i for i, message in enumerate(messages) if message.get("role") == "user" and i not in examples),
        len(messages),
    )


def transcript_id(text: str) -> str:
    """Same content, same id: the link of a pasted transcript is its content's hash."""
    return "t-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def parse_transcript(text: str, source: str, *, scenario_id: str | None = None, title: str | None = None) -> Scenario:
    """A transcript in any format transcript_formats.py reads, as a scenario whose requests
    hold exactly its messages."""
    try:
        raw = loads(text)
    except (ValueError, RecursionError) as error:
        raise ScenarioError(source, [("", f"not valid JSON: {error}")]) from None
    if too_deep := _value_problems(raw):
        raise ScenarioError(source, too_deep)
    try:
        imported = import_transcript(raw)
    except FormatError as error:
        raise ScenarioError(source, error.problems) from None
    problems = tool_pair_problems(imported.messages, "messages")
    if imported.format != "openai-chat":
        problems = [relocate(where, what, imported.origins) for where, what in problems]
    if problems:
        raise ScenarioError(source, problems)
    start = first_request(imported.messages, imported.examples)
    notes = list(imported.notes)
    if start == 0:
        notes.append((NO_PREFIX, {}))
    elif start > 1 or imported.messages[0].get("role") != "system":
        notes.append((PREFIX_KEPT, {"count": start}))
    name = scenario_id or transcript_id(text)
    return Scenario(
        id=name,
        title={"en": title} if title else {language: f"{word} {name}" for language, word in TRANSCRIPT_WORD.items()},
        lesson=dict(TRANSCRIPT_LESSON),
        prefix=tuple(imported.messages[:start]),
        prefix_layers=tuple(layer if layer != "history" else "system" for layer in map(message_layer, imported.messages[:start])),
        tools=imported.tools,
        script=grouped(
            [
                ScriptMessage(f"m{index + 1}", message, layer=message_layer(message))
                for index, message in enumerate(imported.messages[start:])
            ]
        ),
        source=source,
        kind="transcript",
        tools_field=imported.tools_field,
        origin=Origin(imported.format, tuple(notes)),
    )


# --- A directory of scenarios ----------------------------------------------------------------

# A transcript file: JSON, or a SWE-agent trajectory, which SWE-agent names *.traj.
TRANSCRIPT_SUFFIXES = (".json", ".traj")


@dataclass
class Library:
    """The scenarios that loaded, by their `order` then file name, and the errors of those
    that did not."""

    scenarios: dict[str, Scenario]
    errors: list[ScenarioError]

    def get(self, scenario_id: str) -> Scenario | None:
        return self.scenarios.get(scenario_id)

    @property
    def lessons(self) -> list[Scenario]:
        """The path: the scenarios written as lessons (not transcripts), in teaching order."""
        return [scenario for scenario in self.scenarios.values() if scenario.kind == "scenario"]

    def lesson_number(self, scenario_id: str) -> int | None:
        """1 for the first lesson; None for a transcript."""
        return next((index for index, lesson in enumerate(self.lessons, 1) if lesson.id == scenario_id), None)

    def next_lesson(self, scenario_id: str) -> Scenario | None:
        number = self.lesson_number(scenario_id)
        lessons = self.lessons
        return lessons[number] if number is not None and number < len(lessons) else None


def load_file(path: Path) -> Scenario:
    source = path.name
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ScenarioError(source, [("", f"cannot be read: {error}")]) from None
    if path.suffix in TRANSCRIPT_SUFFIXES:
        return parse_transcript(text, source, scenario_id=path.stem, title=path.stem.replace("-", " ").capitalize())
    return parse_scenario_toml(text, source)


def load_library(*directories: Path) -> Library:
    """Every scenario of the folders, in their `order`; a broken file, a missing folder or an
    id used twice is reported and the other scenarios still load."""
    scenarios: dict[str, Scenario] = {}
    errors: list[ScenarioError] = []
    paths = []
    for directory in directories:
        if not directory.is_dir():
            errors.append(ScenarioError(str(directory), [("", "no such folder")]))
            continue
        paths += sorted(directory.glob("*"))
    for path in paths:
        if path.suffix not in {".toml", *TRANSCRIPT_SUFFIXES}:
            continue
        try:
            scenario = load_file(path)
        except ScenarioError as error:
            errors.append(error)
            continue
        if scenario.id in scenarios:
            errors.append(ScenarioError(path.name, [("id", f"{scenario.id!r} is already used by {scenarios[scenario.id].source}")]))
            continue
        scenarios[scenario.id] = scenario
    ordered = sorted(scenarios.values(), key=lambda scenario: scenario.order)  # stable: file name breaks ties
    return Library({scenario.id: scenario for scenario in ordered}, errors)
