"""Transcripts in the formats agents log, read into the chat-completions messages the
playground replays, with every problem named by its place in the input.

Each format is a module ending with its `Format` record; `FORMATS` lists them in the order
they are tried, and the first whose shape the JSON has reads it (docs/transcripts.md has the
rules and examples). Adding a format is a module and its line in `FORMATS` (and the
translations of its label and notes).

Every format but chat completions is rewritten as chat-completions messages: `Imported.notes`
says what was rewritten, in words a person reads, and `origins` keeps where each message came
from.
"""

from __future__ import annotations

from typing import Any

from . import anthropic_messages, openai_chat, openai_responses, swe_agent
from .common import Format, FormatError, Imported

__all__ = ["FORMATS", "Format", "FormatError", "Imported", "detect", "format_named", "import_transcript"]

# Chat completions last: it takes any list of messages. Responses before SWE-agent: a list
# holding both formats' marks is Responses items (an object with both "input" and "history"
# is a trajectory: the Responses test itself leaves it out).
FORMATS: tuple[Format, ...] = (
    openai_responses.FORMAT,
    swe_agent.FORMAT,
    anthropic_messages.FORMAT,
    openai_chat.FORMAT,
)
_BY_NAME = {known.name: known for known in FORMATS}
ACCEPTED_SHAPES = (
    'expected a transcript: a JSON list of messages, or an object with "messages" '
    '(OpenAI chat completions, Anthropic Messages), "input" (OpenAI Responses API) or '
    '"history" (SWE-agent trajectory)'
)


def detect(raw: Any) -> Format:
    """The first format whose shape the JSON has, or FormatError."""
    found = next((known for known in FORMATS if known.detect(raw)), None)
    if found is None:
        raise FormatError([("", ACCEPTED_SHAPES)])
    return found


def format_named(name: str) -> Format:
    """The format a scenario's origin names."""
    return _BY_NAME[name]


def import_transcript(raw: Any) -> Imported:
    """The transcript in chat-completions form, or FormatError naming every problem."""
    imported = detect(raw).read(raw)
    problems = openai_chat.chat_problems(imported)
    if problems:
        raise FormatError(problems)
    return imported
