"""The lessons' TOML format: a file written by a person (comments, multi-line text),
validated with pydantic and read into a Scenario. docs/scenarios.md documents every field."""

from __future__ import annotations

import json
import tomllib
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
)

from ..counting.tokens import Message
from ..model import ID_PATTERN, Budget, Condition, Fact, Narration, Scenario, ScriptMessage, count_calls, tool_pair_problems
from ..settings import COUNTER_NAMES, Settings, SettingsError, parse_settings
from ..triggers import STRATEGY_NAMES
from .scenarios import MAX_NESTING, ScenarioError, first_request, grouped, value_problems

TOOL_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"

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


def _names(value: list[str] | str | None, accepted: tuple[str, ...], key: str) -> tuple[frozenset[str] | None, list[tuple[str, str]]]:
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
    strategies, problems = _names(when.strategy, STRATEGY_NAMES, "strategy")
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


def parse_scenario_toml(text: str, source: str) -> Scenario:
    """A lesson's TOML file as a scenario, or ScenarioError naming every problem."""
    spec = _scenario_file(text, source)
    settings, problems = _settings(spec)
    messages = [_entry_message(entry) for entry in spec.chat]
    problems += tool_pair_problems(messages, "chat")
    problems += _tool_call_problems(spec)
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
    narration, narration_problems = _narration(spec.narration, calls)
    problems += narration_problems
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
        narration=narration,
        source=source,
        order=spec.order,
        prefix_layers=("system", *(layer if layer != "history" else "system" for layer in layers[:start])),
        budget=spec.budget,
    )


def _scenario_file(text: str, source: str) -> ScenarioFile:
    """The file's TOML, checked against the format; ScenarioError names every problem."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ScenarioError(source, [("", f"not valid TOML: {error}")]) from None
    except RecursionError:
        raise ScenarioError(source, [("", f"not valid TOML: nested too deep (at most {MAX_NESTING} levels)")]) from None
    if bad_values := value_problems(raw):
        raise ScenarioError(source, bad_values)
    try:
        return ScenarioFile.model_validate(raw)
    except ValidationError as error:
        raise ScenarioError(source, _pydantic_problems(error)) from None


def _settings(spec: ScenarioFile) -> tuple[Settings, list[tuple[str, str]]]:
    """The file's default settings, or the defaults and what is wrong with its own."""
    try:
        return parse_settings(spec.settings), []
    except SettingsError as error:
        return Settings(), [("settings", problem) for problem in error.problems]


def _tool_call_problems(spec: ScenarioFile) -> list[tuple[str, str]]:
    """Calls of a tool not declared in [[tools]], and arguments given as a string that is not JSON."""
    problems = []
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
    return problems


def _narration(notes: list[NarrationSpec], calls: int) -> tuple[dict[int, tuple[Narration, ...]], list[tuple[str, str]]]:
    """The narration by call, and what is wrong with it: a call past the chat's last, a
    condition on an unknown strategy or counter, an entry an earlier one always hides."""
    narration: dict[int, list[Narration]] = {}
    problems = []
    for index, note in enumerate(notes):
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
    return {call: tuple(entries) for call, entries in narration.items()}, problems
