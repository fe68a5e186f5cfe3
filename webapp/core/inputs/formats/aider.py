"""aider's chat history (.aider.chat.history.md): markdown aider appends to, one session after
each "# aider chat started at" line. The user's prompts are "#### " lines, aider's own output
"> " lines, and the model's replies the plain text between them; there is no tool structure
(edits are SEARCH/REPLACE blocks in the reply's text). "> Tokens: 9.7k sent, 85 received."
is what the provider counted, rounded (docs/transcripts.md)."""

from __future__ import annotations

import re
from typing import Any

from ...i18n import N_
from ...model import RecordedUsage
from .common import Format, FormatError, Imported, Message, PlainText, call_number

SESSION_START = "# aider chat started at"
USER_LINE = "#### "
TOKENS = re.compile(r"^> Tokens: ([\d.]+)(k?) sent, ([\d.]+)(k?) received")
MODEL = re.compile(r"^> (?:Main )?[Mm]odel: (\S+)")


def _is_aider(raw: Any) -> bool:
    return isinstance(raw, PlainText) and (SESSION_START in raw.text or any(line.startswith(USER_LINE) for line in raw.text.splitlines()[:200]))


def _sessions(raw: PlainText) -> list[list[tuple[int, str]]]:
    """The sessions that hold a prompt and a reply, each as its numbered lines."""
    sessions: list[list[tuple[int, str]]] = [[]]
    for number, line in enumerate(raw.text.splitlines(), 1):
        if line.startswith(SESSION_START):
            sessions.append([])
        sessions[-1].append((number, line))
    return [session for session in sessions if _has_reply(session)]


def _has_reply(session: list[tuple[int, str]]) -> bool:
    """A prompt, then a line of the model's (neither a prompt nor aider's own output)."""
    prompted = False
    for _number, line in session:
        prompted = prompted or line.startswith(USER_LINE)
        if prompted and line.strip() and not line.startswith((USER_LINE, ">", SESSION_START)):
            return True
    return False


def _count(number: str, thousands: str) -> int:
    return round(float(number) * (1000 if thousands else 1))


def _read_session(lines: list[tuple[int, str]]) -> Imported:
    messages: list[Message] = []
    origins: list[str] = []
    usage: dict[int, RecordedUsage] = {}  # by call: a retried call's last count
    model, quoted = None, 0
    for number, line in lines:
        role = "user" if line.startswith(USER_LINE) else None if line.startswith(">") or line.startswith(SESSION_START) else "assistant"
        if role is None:
            quoted += 1
            if found := TOKENS.match(line):
                call = call_number(messages) - 1
                usage[call] = RecordedUsage(call, _count(*found.group(1, 2)), _count(*found.group(3, 4)), None, f"line {number}")
            elif found := MODEL.match(line):
                model = model or found.group(1)
            continue
        text = line[len(USER_LINE):] if role == "user" else line
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"] += "\n" + text
        elif role == "user" or text.strip():
            messages.append({"role": role, "content": text})
            origins.append(f"line {number}")
    for message in messages:
        message["content"] = message["content"].strip()
    if not messages:
        raise FormatError([("", "the session has no prompt (no \"#### \" line)")])
    notes = [
        (N_("An aider chat history is a chat without tool structure: prompts (\"#### \" lines) and the model's replies, edits included as text. aider's own output (\"> \" lines: %(count)s) is left out."), {"count": quoted}),
        (N_("The history holds neither aider's system prompt nor the files it added to the chat."), {}),
    ]
    if usage:
        notes.append((N_("aider recorded the tokens sent at %(count)s calls, rounded to hundreds (\"9.7k\")."), {"count": len(usage)}))
    imported = Imported("aider", messages, [], "tools", origins, notes, model=model)
    imported.usage = tuple(usage[call] for call in sorted(usage) if call >= 1)
    return imported


FORMAT = Format("aider", N_("aider chat history"), _is_aider, _read_session, runs=_sessions, reads_keys=frozenset())
