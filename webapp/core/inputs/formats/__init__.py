"""Transcripts in the formats agents log, read into the chat-completions messages the
playground replays, with every problem named by its place in the input.

A transcript's text is read as JSON, else JSON Lines, else plain text (`parse`): of a file
that is one JSON object, the top-level keys no format reads are only checked as JSON syntax
(unread_keys.py).
Each format is a module ending with its `Format` record; `FORMATS` lists them in the order
they are tried, and the first whose shape the value has reads it (docs/transcripts.md has the
rules and examples). Adding a format is a module and its line in `FORMATS` (and the
translations of its label and notes).

Every format but chat completions is rewritten as chat-completions messages: `Imported.notes`
says what was rewritten, in words a person reads, and `origins` keeps where each message came
from.
"""

from __future__ import annotations

from typing import Any

from ...i18n import N_

from . import (
    aider, anthropic_messages, claude_code, cline, codex, gemini_api, gemini_cli, langchain, ollama, ollama_exchanges, openai_chat,
    openai_responses, openhands, recorded, swe_agent, vercel_ai,
)
from .common import Format, FormatError, Imported, PlainText, show
from .unread_keys import parse_reading

__all__ = ["FORMATS", "Format", "FormatError", "Imported", "detect", "format_named", "import_transcript", "parse"]

# The recorder's own runs first (marked by "recorded_by"), then the agents' own files: their
# marks are narrow (JSON Lines envelopes, a session's ids, an event's action/observation). OpenHands before SWE-agent, whose test is "history"; Cline
# and Ollama before Anthropic and chat completions, whose messages theirs look like (its logged
# exchanges, a list of requests and responses, before its lone request body); LangChain
# (a type, no role) and the Vercel AI SDK (tool-call parts) likewise. Chat
# completions last: it takes any list of messages. Responses before SWE-agent: a list holding
# both formats' marks is Responses items (an object with both "input" and "history" is a
# trajectory: the Responses test itself leaves it out).
FORMATS: tuple[Format, ...] = (
    recorded.FORMAT,
    claude_code.FORMAT,
    codex.FORMAT,
    gemini_cli.FORMAT,
    gemini_api.FORMAT,
    openhands.FORMAT,
    aider.FORMAT,
    cline.FORMAT,
    ollama_exchanges.FORMAT,
    ollama.FORMAT,
    langchain.FORMAT,
    vercel_ai.FORMAT,
    openai_responses.FORMAT,
    swe_agent.FORMAT,
    anthropic_messages.FORMAT,
    openai_chat.FORMAT,
)
_BY_NAME = {known.name: known for known in FORMATS}
# The top-level keys of a JSON object that some format looks at; None if one needs them all.
KEYS_READ = None if any(known.reads_keys is None for known in FORMATS) else frozenset().union(*(known.reads_keys for known in FORMATS))


def accepted_shapes() -> str:
    """What a file that no format reads is told: every format of the registry, its label and
    the shape its test looks for, broadest first (the order a person tries them in, where
    `FORMATS` tries the narrowest first), so a format added is named here by itself."""
    return "expected a transcript in a format the playground reads. " + "; ".join(f"{known.label}: {known.shape}" for known in reversed(FORMATS)) + "."


def parse(text: str) -> Any:
    """A transcript's text as common.parse_text reads it, less the keys of a JSON object that
    no format reads: those are checked as JSON syntax only (a 20 MB session's progress events)."""
    return parse_reading(text, KEYS_READ)


def detect(raw: Any) -> Format:
    """The first format whose shape the value has, or FormatError."""
    found = next((known for known in FORMATS if known.detect(raw)), None)
    if found is None:
        if isinstance(raw, PlainText):
            raise FormatError([("", f"not valid JSON: {raw.json_error}")])
        raise FormatError([("", accepted_shapes())])
    return found


def format_named(name: str) -> Format:
    """The format a scenario's origin names."""
    return _BY_NAME[name]


def import_transcript(raw: Any, run: int = 1) -> Imported:
    """The transcript in chat-completions form, or FormatError naming every problem. Of a file
    holding several runs, run `run` (1 for the first) is read, and a note says how many there are."""
    found = detect(raw)
    runs = found.runs(raw) if found.runs else [raw]
    if not runs:
        raise FormatError([("", "the file holds no conversation")])
    if not 1 <= run <= len(runs):
        raise FormatError([("run", f"got {show(run)}; this file holds {len(runs)} run(s): choose 1 to {len(runs)}")])
    imported = found.read(runs[run - 1])
    if len(runs) > 1:
        imported.notes.insert(0, (RUN_CHOSEN, {"run": run, "count": len(runs)}))
    problems = openai_chat.chat_problems(imported)
    if problems:
        raise FormatError(problems)
    return imported


RUN_CHOSEN = N_(
    "This file holds %(count)s runs; run %(run)s is replayed. Another is chosen with its number: "
    "the Run field when pasting, or FILE#2 on the command line."
)
