"""Scenarios: a scripted agent chat and the settings it is meant to be played with.

Two sources give the same `Scenario`:
- a TOML file written by a person (comments, multi-line text), validated with pydantic;
- an OpenAI chat-completions transcript (a JSON list of messages, or an object with
  "messages" and optionally "tools"), whose messages are kept exactly as given.

Every problem is reported as a `ScenarioError` naming the source, the field path and what is
expected, so one bad file never stops the others from loading.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass, field
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

from .settings import Settings, SettingsError, parse_settings
from .tokens import Message, content_text

LANGUAGES = ("en", "fr", "zh")
ID_PATTERN = r"^[a-z0-9][a-z0-9-]{0,63}$"
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
    label: str = Field("", description="what the fact is, for people")
    needed_from_call: int = Field(ge=1, description="the first model call that needs it")


class ToolCallSpec(Strict):
    id: str = Field(min_length=1, description="the call id the tool result answers")
    name: str = Field(pattern=TOOL_NAME_PATTERN, description="a tool declared in [[tools]]")
    arguments: dict[str, Any] | str = Field(
        default_factory=dict, description="the arguments, as a table or a JSON string"
    )


class UserEntry(Strict):
    user: str = Field(description="what the user asks")
    digest: str | None = Field(
        None, description="a summary of this whole exchange, for the summarize strategy"
    )


class AssistantEntry(Strict):
    assistant: str | None = Field(None, description="the reply's text")
    tool_calls: list[ToolCallSpec] = Field(default_factory=list, description="tools it calls")


class ToolEntry(Strict):
    tool: str = Field(min_length=1, description="the id of the tool call this answers")
    content: str = Field(description="the tool's output")


def _entry_kind(value: Any) -> str | None:
    if isinstance(value, dict):
        for key in ("user", "tool"):
            if key in value:
                return key
        if "assistant" in value or "tool_calls" in value:
            return "assistant"
    return None


ChatEntry = Annotated[
    Annotated[UserEntry, Tag("user")]
    | Annotated[AssistantEntry, Tag("assistant")]
    | Annotated[ToolEntry, Tag("tool")],
    Discriminator(
        _entry_kind,
        custom_error_type="chat_entry",
        custom_error_message="each [[chat]] entry needs one of the keys user, assistant (or tool_calls), tool",
    ),
]


class NarrationSpec(Strict):
    call: int = Field(ge=1, description="the model call this sentence explains")
    text: Localized = Field(description="a few sentences on what happens at that call")


class ScenarioFile(Strict):
    id: str = Field(pattern=ID_PATTERN, description="the scenario's id, used in URLs")
    order: int = Field(
        1000, ge=0, le=1_000_000, description="place in the list of scenarios, smallest first (then file name)"
    )
    title: Localized = Field(description="a short title")
    lesson: Localized = Field(description="the one-line lesson")
    system: str = Field(min_length=1, description="the system prompt, the floor of the well")
    settings: dict[str, Any] = Field(default_factory=dict, description="default settings")
    tools: list[ToolSpec] = Field(default_factory=list, description="tool definitions")
    facts: list[FactSpec] = Field(default_factory=list, description="critical facts")
    narration: list[NarrationSpec] = Field(default_factory=list, description="per-call narration")
    chat: list[ChatEntry] = Field(min_length=1, description="the scripted conversation")


# --- The domain object -----------------------------------------------------------------------


@dataclass(frozen=True)
class Fact:
    text: str
    label: str
    needed_from_call: int


@dataclass(frozen=True)
class ScriptMessage:
    """One message of the script: its stable id, the message as sent, and optional digest."""

    id: str
    message: Message
    digest: str | None = None

    @property
    def role(self) -> str:
        return self.message.get("role", "")


@dataclass(frozen=True)
class Scenario:
    id: str
    title: dict[str, str]
    lesson: dict[str, str]
    system: str
    tools: list[dict]
    script: list[ScriptMessage]
    settings: Settings = field(default_factory=Settings)
    facts: list[Fact] = field(default_factory=list)
    fetch_once_tools: frozenset[str] = frozenset()
    narration: dict[int, dict[str, str]] = field(default_factory=dict)
    source: str = ""
    kind: Literal["scenario", "transcript"] = "scenario"
    order: int = 1000

    def text(self, attribute: str, language: str = "en") -> str:
        """A localized text (title, lesson), falling back to English."""
        values: dict[str, str] = getattr(self, attribute)
        return values.get(language) or values.get("en") or next(iter(values.values()), "")

    @property
    def call_count(self) -> int:
        return count_calls(self.script)


def count_calls(script: list[ScriptMessage]) -> int:
    """One model call before every assistant message, and one more when the script ends
    on a user or tool message."""
    calls = sum(1 for m in script if m.role == "assistant")
    if script and script[-1].role != "assistant":
        calls += 1
    return calls


def _localized(value: Localized) -> dict[str, str]:
    return {"en": value} if isinstance(value, str) else dict(value)


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


def tool_pair_problems(messages: list[Message], where: str = "messages") -> list[tuple[str, str]]:
    """What an API would reject in a list of chat messages: a tool result that does not answer
    a call of the assistant message just before it, a call that gets no result before the next
    request or reply, a call id used twice. Empty when the messages are valid."""
    check = PairCheck(where)
    for message in messages:
        check.feed(message)
    return check.problems()


class PairCheck:
    """`tool_pair_problems`, one message at a time: a replay feeds each request only what it
    adds to the previous one instead of walking the whole history at every call."""

    def __init__(self, where: str = "messages"):
        self.where = where
        self.count = 0
        self.found: list[tuple[str, str]] = []
        self.open_calls: dict[str, int] = {}
        self.seen: set[str] = set()

    def feed(self, message: Message) -> None:
        where, index = self.where, self.count
        self.count += 1
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in self.open_calls:
                self.found.append(
                    (
                        f"{where}[{index}].tool_call_id",
                        f"tool result {call_id!r} has no matching call in the assistant message before it",
                    )
                )
            else:
                del self.open_calls[call_id]
            return
        self.found += self._unanswered()
        self.open_calls = {}
        if role == "assistant":
            for position, call in enumerate(message.get("tool_calls") or []):
                call_id = call.get("id") if isinstance(call, dict) else None
                if not call_id:
                    self.found.append((f"{where}[{index}].tool_calls[{position}].id", "a tool call needs an id"))
                    continue
                if call_id in self.seen:
                    self.found.append((f"{where}[{index}].tool_calls[{position}].id", f"call id {call_id!r} is used twice"))
                self.seen.add(call_id)
                self.open_calls[call_id] = index

    def problems(self) -> list[tuple[str, str]]:
        """The problems of the messages fed so far, as if they ended here."""
        return self.found + self._unanswered()

    def _unanswered(self) -> list[tuple[str, str]]:
        return [(f"{self.where}[{at}].tool_calls", f"call {call_id!r} never gets its tool result") for call_id, at in self.open_calls.items()]


def _tool_definition(spec: ToolSpec) -> dict:
    return {
        "type": "function",
        "function": {"name": spec.name, "description": spec.description, "parameters": spec.parameters},
    }


def _entry_message(entry: UserEntry | AssistantEntry | ToolEntry) -> Message:
    if isinstance(entry, UserEntry):
        return {"role": "user", "content": entry.user}
    if isinstance(entry, ToolEntry):
        return {"role": "tool", "tool_call_id": entry.tool, "content": entry.content}
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


def _nesting_problems(value: Any) -> list[tuple[str, str]]:
    """A problem when lists and tables nest deeper than MAX_NESTING (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > MAX_NESTING:
            return [("", f"lists and objects nest more than {MAX_NESTING} levels deep")]
        stack.extend((child, depth + 1) for child in children)
    return []


def parse_scenario_toml(text: str, source: str) -> Scenario:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ScenarioError(source, [("", f"not valid TOML: {error}")]) from None
    except RecursionError:
        raise ScenarioError(source, [("", f"not valid TOML: nested too deep (at most {MAX_NESTING} levels)")]) from None
    if too_deep := _nesting_problems(raw):
        raise ScenarioError(source, too_deep)
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
    script = [
        ScriptMessage(f"m{index + 1}", message, getattr(entry, "digest", None))
        for index, (entry, message) in enumerate(zip(spec.chat, messages))
    ]
    calls = count_calls(script)
    for index, fact in enumerate(spec.facts):
        if fact.needed_from_call > calls:
            problems.append((f"facts[{index}].needed_from_call", f"the chat has {calls} model calls"))
    for index, note in enumerate(spec.narration):
        if note.call > calls:
            problems.append((f"narration[{index}].call", f"the chat has {calls} model calls"))
    if problems:
        raise ScenarioError(source, problems)
    return Scenario(
        id=spec.id,
        title=_localized(spec.title),
        lesson=_localized(spec.lesson),
        system=spec.system,
        tools=[_tool_definition(tool) for tool in spec.tools],
        script=script,
        settings=settings,
        facts=[Fact(f.text, f.label or f.text, f.needed_from_call) for f in spec.facts],
        fetch_once_tools=frozenset(tool.name for tool in spec.tools if tool.fetch_once),
        narration={note.call: _localized(note.text) for note in spec.narration},
        source=source,
        order=spec.order,
    )


# --- OpenAI transcripts ----------------------------------------------------------------------


class TranscriptMessage(BaseModel):
    """One chat-completions message; extra keys are kept and sent as given."""

    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None


class Transcript(BaseModel):
    model_config = ConfigDict(extra="allow")
    messages: list[TranscriptMessage] = Field(min_length=1)
    tools: list[dict[str, Any]] = Field(default_factory=list)


def transcript_id(text: str) -> str:
    """Same content, same id: the link of a pasted transcript is its content's hash."""
    return "t-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def parse_transcript(text: str, source: str, *, scenario_id: str | None = None, title: str | None = None) -> Scenario:
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise ScenarioError(source, [("", f"not valid JSON: {error}")]) from None
    if isinstance(raw, list):
        raw = {"messages": raw}
    if not isinstance(raw, dict):
        raise ScenarioError(source, [("", 'expected a JSON list of messages, or an object with "messages"')])
    if too_deep := _nesting_problems(raw):
        raise ScenarioError(source, too_deep)
    try:
        transcript = Transcript.model_validate(raw)
    except ValidationError as error:
        raise ScenarioError(source, _pydantic_problems(error)) from None

    originals = raw["messages"]
    system = ""
    start = 0
    if transcript.messages[0].role == "system":
        system = content_text(transcript.messages[0].content)
        start = 1
    problems: list[tuple[str, str]] = []
    for index, message in enumerate(transcript.messages):
        if message.role == "tool" and not message.tool_call_id:
            problems.append((f"messages[{index}].tool_call_id", "a tool message needs the id of its call"))
        for position, call in enumerate(message.tool_calls or []):
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict) or not isinstance(function.get("name"), str):
                problems.append((f"messages[{index}].tool_calls[{position}].function.name", "a tool call needs a function name"))
            elif not isinstance(function.get("arguments", ""), str):
                problems.append((f"messages[{index}].tool_calls[{position}].function.arguments", "the arguments must be a JSON string, as the API sends them"))
    # Pair problems are reported with indexes into the input as given.
    offset_problems = tool_pair_problems(originals[start:], "messages")
    problems += [(_shift(where, start), what) for where, what in offset_problems]
    script = [
        ScriptMessage(f"m{index + 1}", dict(message))
        for index, message in enumerate(originals[start:])
    ]
    if not script:
        problems.append(("messages", "the transcript has a system prompt but no message after it"))
    if problems:
        raise ScenarioError(source, problems)
    name = scenario_id or transcript_id(text)
    return Scenario(
        id=name,
        title={"en": title or f"Transcript {name}"},
        lesson={"en": "Your own agent's chat, replayed call by call."},
        system=system,
        tools=transcript.tools,
        script=script,
        source=source,
        kind="transcript",
    )



def _shift(where: str, offset: int) -> str:
    prefix = "messages["
    if not where.startswith(prefix) or not offset:
        return where
    number, rest = where[len(prefix):].split("]", 1)
    return f"{prefix}{int(number) + offset}]{rest}"


# --- A directory of scenarios ----------------------------------------------------------------


@dataclass
class Library:
    """The scenarios that loaded, by their `order` then file name, and the errors of those
    that did not."""

    scenarios: dict[str, Scenario]
    errors: list[ScenarioError]

    def get(self, scenario_id: str) -> Scenario | None:
        return self.scenarios.get(scenario_id)


def load_file(path: Path) -> Scenario:
    source = path.name
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ScenarioError(source, [("", f"cannot be read: {error}")]) from None
    if path.suffix == ".json":
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
        if path.suffix not in {".toml", ".json"}:
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
