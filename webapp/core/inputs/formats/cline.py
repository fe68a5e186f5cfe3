"""Cline and Roo Code task histories (api_conversation_history.json): the Anthropic messages
the extension sent, in which tool calls are XML in the assistant's text and their results are
user text blocks opening with "[tool_name for 'argument'] Result:" (docs/transcripts.md)."""

from __future__ import annotations

import re
from typing import Any

from ...i18n import N_
from .anthropic_messages import FORMAT as ANTHROPIC
from .common import Format, Imported

RESULT_OPENING = re.compile(r"^\[[^\]\n]{1,200}\] Result:")


def _texts(messages: list) -> list[str]:
    return [
        block.get("text", "")
        for message in messages
        if isinstance(message, dict) and message.get("role") == "user" and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
    ]


def _is_cline(raw: Any) -> bool:
    """A list of Anthropic messages where a user text block is a "[tool] Result:" or an
    <environment_details> block, Cline's own."""
    texts = _texts(raw) if isinstance(raw, list) else []
    return any(RESULT_OPENING.match(text) or text.lstrip().startswith("<environment_details>") for text in texts)


def _read_cline(raw: list) -> Imported:
    imported = ANTHROPIC.read({"messages": raw})
    results = sum(1 for text in _texts(raw) if RESULT_OPENING.match(text))
    imported.format = "cline"
    imported.notes = [
        (N_("Tool results kept by Cline as text (\"[tool] Result:\" blocks in user messages): %(count)s. They are read as the text they are, user messages, and the tool calls as the assistant's text, as the model received them."), {"count": results}),
        *imported.notes,
        (N_("The history holds neither the system prompt nor the tool descriptions."), {}),
    ]
    return imported


FORMAT = Format("cline", N_("Cline / Roo Code task history"), _is_cline, _read_cline, notes=ANTHROPIC.notes, reads_keys=frozenset())
