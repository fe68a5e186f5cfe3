"""The value types every wing of the core shares: a scenario and its script, the facts that
must survive, the narration, where a transcript came from, the manual's layers with their
budget (004_abe3947712a3ce73.txt, step 1), and what an API checks of any list of messages:
that each tool result answers a call, and each call gets its result (`tool_pair_problems`),
which reading a file and replaying a chat both ask.

They hold data and answer questions about it; reading them from files is inputs/, playing
them is engine/, judging the result is analysis/.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .counting.tokens import Message, content_text
from .i18n import N_
from .settings import Settings

LANGUAGES = ("en", "fr", "zh")
ID_PATTERN = r"^[a-z0-9][a-z0-9-]{0,63}$"

# The layers a request's tokens belong to, in the manual's order of assembly (its step 7).
REQUEST_LAYERS = ("system", "tools", "memory", "retrieval", "history")
# Room kept free in the window, after the request.
ROOM_LAYERS = ("reply", "margin")
LAYERS = (*REQUEST_LAYERS, *ROOM_LAYERS)
# What a message of the chat may be marked as (system and tools are the floor's).
MESSAGE_LAYERS = ("memory", "retrieval", "history")
MANUAL_KEYS = {"system": "system", "tools": "tools", "memory": "ltm", "retrieval": "rag", "history": "history"}
LAYER_WORDS = {
    "system": N_("system prompt"),
    "tools": N_("tool definitions"),
    "memory": N_("long-term memory"),
    "retrieval": N_("retrieved documents"),
    "history": N_("conversation history"),
    "reply": N_("room for the reply"),
    "margin": N_("safety margin"),
}


class Budget(BaseModel):
    """Each layer's share of the window. Defaults: the manual's, for a 200,000-token window
    (system 2,000, tools 3,000, memory 5,000, retrieval 20,000, history 40,000, reply 10,000,
    margin 20,000); the remaining 50% is free room. A scenario's `[budget]` table overrides."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    system: float = Field(0.01, ge=0, le=1, description="the system prompt's share of the window")
    tools: float = Field(0.015, ge=0, le=1, description="the tool definitions' share")
    memory: float = Field(0.025, ge=0, le=1, description="long-term memory's share")
    retrieval: float = Field(0.10, ge=0, le=1, description="the retrieved documents' share")
    history: float = Field(0.20, ge=0, le=1, description="the conversation history's share")
    reply: float = Field(0.05, ge=0, le=1, description="the room kept for the reply")
    margin: float = Field(0.10, ge=0, le=1, description="the safety margin")

    @model_validator(mode="after")
    def fits_the_window(self) -> Budget:
        total = sum(self.shares().values())
        if total > 1 + 1e-9:
            raise ValueError(f"the shares add up to {total:g}, more than the whole window (1)")
        return self

    def shares(self) -> dict[str, float]:
        return {layer: getattr(self, layer) for layer in LAYERS}

    def tokens(self, window: int) -> dict[str, int]:
        """Each layer's budget in tokens (rounded down), and "free": the rest of the window,
        so that the values add up to `window` exactly."""
        out = {layer: math.floor(window * share + 1e-9) for layer, share in self.shares().items()}
        out["free"] = window - sum(out.values())
        return out



@dataclass(frozen=True)
class Fact:
    text: str
    label: str  # in English (the text itself when the author gave no label)
    needed_from_call: int
    labels: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    def label_in(self, language: str) -> str:
        """What the fact is, in `language` (English as the fallback)."""
        return self.labels.get(language) or self.label


@dataclass(frozen=True)
class Condition:
    """When a narration applies, as the replay can check it (None: either way)."""

    strategies: frozenset[str] | None = None
    counters: frozenset[str] | None = None
    keep_facts: bool | None = None
    compacted: bool | None = None
    overflow: bool | None = None
    invalid_request: bool | None = None
    no_room_for_reply: bool | None = None
    facts: Literal["kept", "lost"] | None = None

    @property
    def always(self) -> bool:
        return self == Condition()

    @property
    def reads_replay(self) -> bool:
        """Whether it says what happened at the call (written for any settings that bring that
        about), not only which strategy, counter or option is chosen."""
        return any(
            flag is not None for flag in (self.compacted, self.overflow, self.invalid_request, self.no_room_for_reply, self.facts)
        )


@dataclass(frozen=True)
class Narration:
    """What the author says at one call, and when."""

    texts: dict[str, str]
    when: Condition = field(default_factory=Condition)

    def text(self, language: str = "en") -> str:
        return self.texts.get(language) or self.texts.get("en") or next(iter(self.texts.values()), "")


@dataclass(frozen=True)
class ScriptMessage:
    """One message of the script: its stable id, the message as sent, and optional digest."""

    id: str
    message: Message
    digest: str | None = None
    layer: str = "history"  # one of layers.MESSAGE_LAYERS
    pinned: bool = False
    # Retrieval messages that enter before the same model call share a group ("g3"), which
    # by-layer compresses as a unit.
    group: str = ""

    @property
    def role(self) -> str:
        return self.message.get("role", "")


@dataclass(frozen=True)
class RecordedUsage:
    """What the provider counted for one model call, as the session recorded it."""

    call: int  # 1 for the transcript's first assistant message, 2 for the next…
    input_tokens: int  # the request as the provider counted it, cached tokens included
    output_tokens: int | None = None
    cached_tokens: int | None = None  # of input_tokens, read from the provider's cache
    source: str = ""  # where in the input ("line 12")


@dataclass(frozen=True)
class RecordedCompaction:
    """A compaction the harness itself did, as its log recorded it."""

    before_call: int  # the first call sent after it (numbered as RecordedUsage.call)
    summary: str  # what replaced the history ("" when the log keeps it encrypted or empty)
    trigger: str | None = None  # "manual" or "auto", when the log says
    tokens_before: int | None = None  # the harness's own count of the history it replaced
    source: str = ""


@dataclass(frozen=True)
class Origin:
    """Where a transcript came from: its format, and what reading it rewrote, as (catalog
    message, numbers) for the web to say in the reader's language."""

    format: str
    notes: tuple[tuple[str, dict[str, int]], ...] = ()
    # What the session recorded: the model it named, the provider's count of each call, and
    # the compactions the harness did (docs/transcripts.md, "Recorded usage").
    model: str | None = None
    usage: tuple[RecordedUsage, ...] = ()
    compactions: tuple[RecordedCompaction, ...] = ()
    # The settings the scenario's defaults took from the file (window, keep_unit).
    settings_from_file: tuple[str, ...] = ()
    # Settings the harness that wrote the file ran with (Imported.harness_settings), as pairs.
    harness_settings: tuple[tuple[str, Any], ...] = ()
    # The context window the file records, and where (Imported.window).
    window: int | None = None
    window_source: str = ""
    # Where the scenario's own window came from: "file", "model" (the table of
    # counting/windows.py), "small-chat", or "" when nothing said it (the page asks for it).
    window_from: str = ""


@dataclass(frozen=True)
class Scenario:
    id: str
    title: dict[str, str]
    lesson: dict[str, str]
    # The messages sent ahead of the script in every request, never compacted: the floor.
    prefix: tuple[Message, ...]
    tools: list[dict]
    script: list[ScriptMessage]
    settings: Settings = field(default_factory=Settings)
    facts: list[Fact] = field(default_factory=list)
    fetch_once_tools: frozenset[str] = frozenset()
    # Per call, the narrations in file order: the first whose condition holds is shown.
    narration: dict[int, tuple[Narration, ...]] = field(default_factory=dict)
    source: str = ""
    kind: Literal["scenario", "transcript"] = "scenario"
    order: int = 1000
    # The request field the tool definitions go in: "functions" for legacy function calling.
    tools_field: str = "tools"
    origin: Origin | None = None
    # The layer of each prefix message ("system", or "memory"/"retrieval" when marked so).
    prefix_layers: tuple[str, ...] = ()
    budget: Budget = field(default_factory=Budget)
    # What analyses derive from the scenario alone, by the function that derives it (the
    # references the agent used again): a scenario never changes once read.
    derived: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def pinned(self) -> frozenset[str]:
        """Ids of the script messages the scenario pins."""
        return frozenset(item.id for item in self.script if item.pinned)

    def floor_layers(self, floor_units: int, counter) -> dict[str, int]:
        """`floor_units` (this counter's `floor_units`) split by layer: the tool definitions,
        the prefix messages marked memory or retrieval, and the system prompt with the rest."""
        system_later = any(item.role == "system" for item in self.script)
        tools = floor_units - counter.measure_floor(self.prefix, [], system_later=system_later) if self.tools else 0
        parts = {"system": 0, "tools": tools, "memory": 0, "retrieval": 0}
        for message, layer in zip(self.prefix, self.prefix_layers):
            if layer != "system":
                parts[layer] += counter.measure(message)
        parts["system"] = floor_units - sum(parts.values())
        return parts

    @property
    def system(self) -> str:
        """The text of the prefix's system and developer messages, as a reader or a fact
        search reads it ("" when the transcript has none)."""
        return "\n".join(
            content_text(message.get("content")) for message in self.prefix if message.get("role") in ("system", "developer")
        )

    def floor_units(self, counter) -> int:
        """What every request carries ahead of the script, in `counter`'s units: the prefix and
        the tool definitions (which join a system message, even one further down the chat)."""
        system_later = any(item.role == "system" for item in self.script)
        return counter.measure_floor(self.prefix, self.tools, system_later=system_later)

    def text(self, attribute: str, language: str = "en") -> str:
        """A localized text (title, lesson), falling back to English."""
        values: dict[str, str] = getattr(self, attribute)
        return values.get(language) or values.get("en") or next(iter(values.values()), "")

    @cached_property
    def counters(self) -> dict[str, object]:
        """The counters this chat's replays share, by name, as the engine makes them
        (engine/calls.py, `chat_counter`): each message of the script measured once for all."""
        return {}

    @cached_property
    def call_count(self) -> int:
        # Counted once: every page reads it to check its `call` parameter.
        return count_calls(self.script)


def count_calls(script: list[ScriptMessage]) -> int:
    """One model call before every assistant message, and one more when the script ends
    on a user or tool message, or is empty (a transcript that is all prefix is one request)."""
    calls = sum(1 for m in script if m.role == "assistant")
    if not script or script[-1].role != "assistant":
        calls += 1
    return calls


# --- Tool calls and their results, as an API pairs them -------------------------------------


def tool_pair_problems(messages: list[Message], where: str = "messages") -> list[tuple[str, str]]:
    """What an API would reject in a list of chat messages: a tool result that does not answer
    a call of the assistant message just before it, a call that gets no result before the next
    request or reply, a call id used twice. Empty when the messages are valid."""
    check = PairCheck(where)
    for message in messages:
        check.feed(pair_facts(message))
    return check.problems()


# What the pair check reads of a message: its role, the call id a tool result answers, and the
# ids of an assistant message's tool calls (None for a call that is not an object).
PairFacts = tuple[object, object, tuple[object, ...]]


def pair_facts(message: Message) -> PairFacts:
    role = message.get("role")
    if role == "tool":
        return role, message.get("tool_call_id"), ()
    if role == "assistant":
        return role, None, tuple(call.get("id") if isinstance(call, dict) else None for call in message.get("tool_calls") or [])
    return role, None, ()


class PairCheck:
    """`tool_pair_problems`, one message at a time: a replay feeds each request only what it
    adds to the previous one instead of walking the whole history at every call."""

    def __init__(self, where: str = "messages"):
        self.where = where
        self.count = 0
        self.found: list[tuple[str, str]] = []
        self.open_calls: dict[str, int] = {}
        self.seen: set[str] = set()

    def feed(self, facts: PairFacts) -> None:
        """Take the next message, as `pair_facts` reads it."""
        where, index = self.where, self.count
        self.count += 1
        role, answers, calls = facts
        if role == "tool":
            if answers not in self.open_calls:
                self.found.append(
                    (
                        f"{where}[{index}].tool_call_id",
                        f"tool result {answers!r} has no matching call in the assistant message before it",
                    )
                )
            else:
                del self.open_calls[answers]
            return
        if self.open_calls:  # most messages follow no open call: nothing to report or reset
            self.found += self._unanswered()
            self.open_calls = {}
        for position, call_id in enumerate(calls):
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
