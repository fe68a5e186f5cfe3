"""Hypothesis strategies for agent chats: requests, parallel tool calls, results of every size,
non-ASCII text, and scripts that end mid-request."""

from __future__ import annotations

import json
from dataclasses import replace

from hypothesis import strategies as st

from webapp.core.inputs.scenarios import grouped
from webapp.core.model import Fact, Scenario, ScriptMessage
from webapp.core.settings import Settings

WORDS = st.sampled_from(
    ["order", "wheel", "#4471", "roue", "commande", "车轮", "订单", "é", "naïve", "{\"a\": 1}", "def f():", "<|endoftext|>", "🚲", "\n", "ok"]
)
TEXT = st.lists(WORDS, min_size=1, max_size=30).map(" ".join)
# Tool results range from a word to a huge dump, the part compaction is about.
RESULT = st.one_of(
    TEXT,
    st.builds(lambda word, n: (word + " ") * n, WORDS, st.integers(10, 3000)),
)


@st.composite
def exchanges(draw, number: int):
    """Request `number` and everything up to the next: 0-3 tool turns (1-3 parallel calls each),
    then usually a final answer. Call ids are unique across a chat by construction."""
    messages = [{"role": "user", "content": draw(TEXT)}]
    for turn in range(draw(st.integers(0, 3))):
        calls = [
            {
                "id": f"call_{number}_{turn}_{i}",
                "type": "function",
                "function": {"name": draw(st.sampled_from(["get_order", "search", "pay"])), "arguments": json.dumps({"q": draw(TEXT)})},
            }
            for i in range(draw(st.integers(1, 3)))
        ]
        messages.append({"role": "assistant", "content": draw(st.none() | TEXT), "tool_calls": calls})
        for call in calls:
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": draw(RESULT)})
    if draw(st.booleans()) or messages[-1]["role"] != "user" and draw(st.booleans()):
        messages.append({"role": "assistant", "content": draw(TEXT)})
    return messages


@st.composite
def scenarios(draw, min_requests=1, max_requests=8):
    chat: list[dict] = []
    for number in range(draw(st.integers(min_requests, max_requests))):
        chat += draw(exchanges(number))
    script = [ScriptMessage(f"m{i + 1}", message) for i, message in enumerate(chat)]
    facts = [Fact("#4471", "order number", 1), Fact("车轮", "wheel", 2)]
    return Scenario(
        id="generated",
        title={"en": "generated"},
        lesson={"en": ""},
        prefix=({"role": "system", "content": draw(st.sampled_from(["You are a support assistant.", "Tu es un assistant. 你好。"]))},),
        tools=[],
        script=script,
        facts=facts,
        fetch_once_tools=frozenset({"pay"}),
    )


def settings(strategies=("none", "truncate", "drop", "truncate-drop", "summarize"), counters=("estimate",)):
    return st.builds(
        Settings,
        strategy=st.sampled_from(strategies),
        window=st.integers(300, 20_000),
        threshold=st.sampled_from([0.5, 0.7, 0.8, 0.9, 1.0]),
        keep=st.integers(1, 4),
        counter=st.sampled_from(counters),
        preview=st.sampled_from([0, 20, 150]),
        keep_facts=st.booleans(),
    )


@st.composite
def layered_scenarios(draw, min_requests=1, max_requests=7):
    """Chats with the manual's layers: documents retrieved for a request (context messages
    right after it, or a search tool's results), long-term memory in the prefix or the chat,
    and pinned messages of every role."""
    chat: list[tuple[dict, str]] = []
    for number in range(draw(st.integers(min_requests, max_requests))):
        messages = draw(exchanges(number))
        retrieved = [
            ({"role": "system", "content": f"<context>{draw(RESULT)}</context>"}, "retrieval")
            for _ in range(draw(st.integers(0, 2)))
        ]
        memory = [({"role": "system", "content": f"<memory>{draw(TEXT)}</memory>"}, "memory")] if draw(st.integers(0, 5)) == 0 else []
        searches = draw(st.booleans())
        rest = [(message, "retrieval" if searches and message["role"] == "tool" else "history") for message in messages[1:]]
        chat += [(messages[0], "history"), *memory, *retrieved, *rest]
    script = grouped([ScriptMessage(f"m{i + 1}", message, layer=layer) for i, (message, layer) in enumerate(chat)])
    pinned = draw(st.sets(st.sampled_from([item.id for item in script]), max_size=3))
    script = [replace(item, pinned=item.id in pinned) for item in script]
    prefix_memory = draw(st.booleans())
    return Scenario(
        id="layered",
        title={"en": "layered"},
        lesson={"en": ""},
        prefix=(
            {"role": "system", "content": "You are a support assistant."},
            *([{"role": "system", "content": "<memory>Ada, order #4471.</memory>"}] if prefix_memory else []),
        ),
        prefix_layers=("system", "memory") if prefix_memory else ("system",),
        tools=[],
        script=script,
        facts=[Fact("#4471", "order number", 1)],
    )


def session_with_metadata(chat: dict, target_bytes: int, cwd: str, tool_output: str) -> bytes:
    """A chat as an agent's session file holds it: each message wrapped in the metadata an agent
    records on every line (ids, working directory, version, timestamps), and lines of progress
    events (a copy of `tool_output` each) around them, up to about `target_bytes`. For the size
    tests and the 20 MB benchmark: the replay keeps the messages, not the metadata."""
    line = {
        "parentUuid": "5c0a3d52-8b5e-4f0e-9c43-0b4f0e7d9a11", "isSidechain": False, "userType": "external",
        "cwd": cwd, "sessionId": "0f8e9f5e-2c7a-4d6b-a7c3-53bd5d2a1c9e",
        "version": "1.0.51", "gitBranch": "main", "timestamp": "2025-07-14T09:12:33.512Z",
    }
    for index, message in enumerate(chat["messages"]):
        message["metadata"] = {**line, "uuid": f"{index:08d}-0000-4000-8000-000000000000"}
    size = len(json.dumps(chat))
    event = {**line, "type": "progress", "uuid": "00000000", "toolUseResult": {"stdout": tool_output, "stderr": "", "interrupted": False}}
    chat["events"] = [{**event, "uuid": f"{index:08d}"} for index in range(max(0, target_bytes - size) // (len(json.dumps(event)) + 2))]
    return json.dumps(chat).encode()
