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
# The figures aider 0.86.2 writes after each request (base_coder.calculate_and_show_tokens_and_cost,
# utils.format_tokens: "950", "9.7k", "12k"): sent, cache write and cache hit when the
# provider reports them, received.
TOKENS = re.compile(r"^> Tokens: ([\d.]+)(k?) sent(?:, ([\d.]+)(k?) cache write)?(?:, ([\d.]+)(k?) cache hit)?, ([\d.]+)(k?) received")
MODEL = re.compile(r"^> (?:Main )?[Mm]odel: (\S+)")
# A question of io.confirm_ask and its answer. Answered for a whole group ("(A)ll"), the
# answer is written with user_input, on a "#### " line, though it is no prompt (io.py).
CONFIRM = re.compile(r"^(?:> |#### )(.+?) \(Y\)es/\(N\)o.*\]: ?(\S*)")
ADD_FILE = "Add file to the chat?"
# What aider sends, with no prompt of the user's, after files were added (prompts.added_files,
# from base_coder.check_for_file_mentions via reflected_message).
ADDED_FILES = "I added these files to the chat: {fnames}\nLet me know if there are others we should add."


def _is_prompt(line: str) -> bool:
    return line.startswith(USER_LINE) and not CONFIRM.match(line)


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
        prompted = prompted or _is_prompt(line)
        if prompted and line.strip() and not line.startswith((USER_LINE, ">", SESSION_START)):
            return True
    return False


def _count(number: str, thousands: str) -> int:
    return round(float(number) * (1000 if thousands else 1))


def _read_session(lines: list[tuple[int, str]]) -> Imported:
    """One call per request aider sent: a reply closes at its "> Tokens:" line, and a reply
    after that line with no prompt between is a request aider sent by itself (files added,
    an edit, lint or test error to fix: base_coder.run_one's reflected_message). Long because
it is one walk over the lines, each kind of line kept where it goes."""
    messages: list[Message] = []
    origins: list[str] = []
    usage: list[RecordedUsage] = []
    model, quoted, followups = None, 0, 0
    closed = True  # no prompt since the last request's Tokens line (or the session's start)
    said: list[str] = []  # aider's output since then
    added: list[str] = []  # the files added to the chat since then
    subject = ""  # the file a confirmation asks about (the line before it)

    def add(role: str, text: str, number: int) -> None:
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"] += "\n" + text
        else:
            messages.append({"role": role, "content": text})
            origins.append(f"line {number}")

    for number, line in lines:
        if _is_prompt(line):
            add("user", line[len(USER_LINE):], number)
            closed = False
            continue
        if line.startswith((">", USER_LINE, SESSION_START)):
            quoted += 1
            if found := TOKENS.match(line):
                if not messages:
                    continue  # no request: nothing was prompted or replied
                if messages[-1]["role"] != "assistant":
                    add("assistant", "", number)  # a request whose reply was empty
                sent, _write, hit, received = (_count(*found.group(at, at + 1)) if found.group(at) else None for at in (1, 3, 5, 7))
                usage.append(RecordedUsage(call_number(messages) - 1, sent, received, hit, f"line {number}"))
                closed, said, added = True, [], []
                continue
            elif found := CONFIRM.match(line):
                # A group's answer is written twice, on the "#### " line and the "> " one.
                if line.startswith("> ") and found.group(1) == ADD_FILE and found.group(2)[:1].lower() in ("y", "a") and subject:
                    added.append(subject)
            elif found := MODEL.match(line):
                model = model or found.group(1)
            elif line.startswith("> "):
                subject = line[2:].strip()
                said.append(subject)
            continue
        if closed and line.strip():
            reflected = ADDED_FILES.format(fnames=", ".join(added)) if added else "\n".join(text for text in said if text)
            add("user", reflected, number)
            followups += 1
            closed = False
        if line.strip() or (messages and messages[-1]["role"] == "assistant"):
            add("assistant", line, number)
    for message in messages:
        message["content"] = message["content"].strip()
    if not messages:
        raise FormatError([("", "the session has no prompt (no \"#### \" line)")])
    notes = [
        (N_("An aider chat history is a chat without tool structure: prompts (\"#### \" lines) and the model's replies, edits included as text. aider's own output (\"> \" lines: %(count)s) is left out."), {"count": quoted}),
        (N_("The history holds neither aider's system prompt nor the files it added to the chat."), {}),
    ]
    if followups:
        notes.append((N_("Requests aider sent with no prompt in the history (after \"Add file to the chat?\", an edit error to fix, a watched file's comment): %(count)s. Each is a call; its message is the one aider sends (\"I added these files to the chat: …\"), or else what aider wrote before it."), {"count": followups}))
    if usage:
        notes.append((N_("aider recorded the tokens sent at %(count)s calls, rounded to hundreds (\"9.7k\")."), {"count": len(usage)}))
    imported = Imported("aider", messages, [], "tools", origins, notes, model=model)
    imported.usage = tuple(usage)
    return imported


FORMAT = Format("aider", N_("aider chat history"), _is_aider, _read_session, runs=_sessions, reads_keys=frozenset(), shape='a markdown log whose user lines start "#### "')
