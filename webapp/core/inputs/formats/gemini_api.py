"""The Gemini API's request body: {"contents": [{"role": "user" | "model", "parts": [...]}],
"systemInstruction", "tools": [{"functionDeclarations": [...]}]}. A functionCall part
becomes a tool call, a functionResponse part a tool message; a call without an id is paired
with the response of the same name in the next turn, in order (docs/transcripts.md)."""

from __future__ import annotations

import json
from typing import Any

from ...i18n import N_
from .common import Check, Format, FormatError, Imported, Message, said

PAIRED_IN_ORDER = N_("Function calls without an id: %(count)s. Each was paired with the next response of the same name, in order, as the Gemini API pairs them.")
NOTES = {
    "tools": N_("functionCall parts became the assistant's tool calls, functionResponse parts tool messages."),
    "system": N_("The system instruction is sent as the first message."),
    "thought": N_("Thought parts left out: %(count)s. Gemini keeps only their signatures, which are not text."),
    "unnamed": PAIRED_IN_ORDER,
}


def _is_gemini_api(raw: Any) -> bool:
    """An object with "contents", a list of {role, parts}."""
    contents = raw.get("contents") if isinstance(raw, dict) else None
    return isinstance(contents, list) and any(isinstance(item, dict) and "parts" in item for item in contents)


def part_text(part: dict) -> str | None:
    return part["text"] if isinstance(part.get("text"), str) else None


def response_text(response: Any) -> str:
    """A functionResponse's response as the text a tool message carries: the JSON of the
    object the API receives ({"output": "…"} as Gemini CLI sends a tool's output), not the
    bare output: the model reads the object, its escapes included. On the Gemini CLI
    sessions kept here, the counts of later calls come 4 to 5 points closer to what Gemini
    counted (tests/fixtures/sessions/gemini-cli)."""
    return json.dumps(response, ensure_ascii=False)


class CallIds:
    """Ids for calls that have none, each response taking the oldest open call of its name."""

    def __init__(self, counts: dict[str, int]):
        self.counts = counts
        self.open: list[tuple[str, str]] = []  # (name, id)
        self.made = 0

    def call(self, name: str, given: Any) -> str:
        if isinstance(given, str) and given:
            return given
        self.made += 1
        self.counts["unnamed"] += 1
        call_id = f"call_{self.made}"
        self.open.append((name, call_id))
        return call_id

    def response(self, name: str, given: Any) -> str | None:
        if isinstance(given, str) and given:
            return given
        match = next((pair for pair in self.open if pair[0] == name), None)
        if match is None:
            return None
        self.open.remove(match)
        return match[1]


def read_parts(check: Check, parts: list, at: str, role: str, ids: CallIds, counts: dict[str, int]) -> list[Message]:
    """One turn's parts as chat messages: the tool results first, then the text (a user turn),
    or the text and its calls (a model turn)."""
    texts: list[str] = []
    calls: list[dict] = []
    results: list[Message] = []
    for position, part in enumerate(parts):
        where = f"{at}.parts[{position}]"
        if not check.object(part, where, "a part object"):
            continue
        if part.get("thought"):
            counts["thought"] += 1
        elif (text := part_text(part)) is not None:
            texts.append(text)
        elif isinstance(call := part.get("functionCall"), dict) and check.string(call.get("name"), f"{where}.functionCall.name", nonempty=True):
            counts["tools"] += 1
            arguments = json.dumps(call.get("args") or {}, ensure_ascii=False)
            calls.append({"id": ids.call(call["name"], call.get("id")), "type": "function", "function": {"name": call["name"], "arguments": arguments}})
        elif isinstance(response := part.get("functionResponse"), dict) and check.string(response.get("name"), f"{where}.functionResponse.name", nonempty=True):
            call_id = ids.response(response["name"], response.get("id"))
            if call_id is None:
                check.add(f"{where}.functionResponse", f"the response of {response['name']!r} answers no call of that name before it")
                continue
            results.append({"role": "tool", "tool_call_id": call_id, "content": response_text(response.get("response"))})
        elif not any(key in part for key in ("thoughtSignature", "inlineData", "fileData", "executableCode", "codeExecutionResult")):
            check.add(where, "expected a part with text, functionCall or functionResponse")
    text = "\n".join(texts)
    if role == "model":
        message: Message = {"role": "assistant", "content": text or None}
        return [message | ({"tool_calls": calls} if calls else {})]
    return results + ([{"role": "user", "content": text}] if text or not results else [])


def declarations(check: Check, tools: Any) -> list[dict]:
    """tools[].functionDeclarations as chat-completions function tools."""
    out = []
    for index, tool in enumerate(tools if isinstance(tools, list) else []):
        for position, declaration in enumerate((tool or {}).get("functionDeclarations") or []):
            where = f"tools[{index}].functionDeclarations[{position}]"
            if check.object(declaration, where, "a function declaration") and check.string(declaration.get("name"), f"{where}.name", nonempty=True):
                schema = declaration.get("parameters_json_schema", declaration.get("parametersJsonSchema", declaration.get("parameters")))
                function = {"name": declaration["name"], "description": declaration.get("description") or ""}
                out.append({"type": "function", "function": function | ({"parameters": schema} if isinstance(schema, dict) else {})})
    return out


def _read_gemini_api(raw: dict) -> Imported:
    check = Check()
    counts = {key: 0 for key in NOTES}
    messages: list[Message] = []
    origins: list[str] = []
    system = raw.get("systemInstruction") or raw.get("system_instruction")
    if isinstance(system, dict) and (text := "\n".join(filter(None, map(part_text, system.get("parts") or [])))):
        messages.append({"role": "system", "content": text})
        origins.append("systemInstruction")
        counts["system"] = 1
    ids = CallIds(counts)
    for index, item in enumerate(raw["contents"]):
        at = f"contents[{index}]"
        if not check.object(item, at, "a content object") or not check.one_of(item.get("role", "user"), ("user", "model"), f"{at}.role"):
            continue
        if check.array(item.get("parts"), f"{at}.parts", "a list of parts"):
            for message in read_parts(check, item["parts"], at, item.get("role", "user"), ids, counts):
                messages.append(message)
                origins.append(at)
    tools = declarations(check, raw.get("tools"))
    if check.problems:
        raise FormatError(check.problems)
    return Imported("gemini-api", messages, tools, "tools", origins, said(counts, NOTES), model=raw.get("model") if isinstance(raw.get("model"), str) else None)


FORMAT = Format("gemini-api", N_("Gemini API request (contents)"), _is_gemini_api, _read_gemini_api, reads_keys=frozenset(("contents", "systemInstruction", "system_instruction", "tools", "model")), shape='an object with "contents", a list of {"role", "parts"}')
