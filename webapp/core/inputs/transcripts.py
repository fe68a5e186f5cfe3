"""A transcript as a scenario: read in any format formats/ knows, its requests hold exactly
its messages, and its id (the link of a pasted one) is the hash of its content."""

from __future__ import annotations

import hashlib

from ..engine.history import tool_pair_problems
from ..i18n import N_
from ..model import Origin, Scenario, ScriptMessage
from .formats import FormatError, detect, import_transcript
from .formats.common import JsonLines, PlainText, message_layer, parse_text, relocate
from .scenarios import ScenarioError, first_request, grouped, value_problems

# A pasted transcript's title and lesson, in each language of the interface (like a scenario's).
TRANSCRIPT_WORD = {"en": "Transcript", "fr": "Transcription", "zh": "对话记录"}
TRANSCRIPT_LESSON = {
    "en": "Your own agent's chat, replayed call by call.",
    "fr": "Le chat de votre agent, rejoué appel par appel.",
    "zh": "你自己的智能体对话，逐次调用重放。",
}
NO_PREFIX = N_("No system prompt: each request starts with the first user message, and nothing is added ahead of it.")
PREFIX_KEPT = N_(
    "Messages ahead of the first user request: %(count)s (system prompt, examples, an opening reply). "
    "They are the floor: sent with every request, never compacted."
)


def transcript_id(content: str | bytes) -> str:
    """Same content, same id: the link of a pasted transcript is the hash of its bytes (of a
    text, its UTF-8)."""
    data = content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content
    return "t-" + hashlib.sha256(data).hexdigest()[:16]


def parse_transcript(
    text: str, source: str, *, scenario_id: str | None = None, title: str | None = None, run: int = 1
) -> Scenario:
    """A transcript in any format formats/ reads (of a file holding several runs, run `run`),
    as a scenario whose requests hold exactly its messages. A refusal names the format the
    text looks like (`ScenarioError.looks_like`) when one was recognised."""
    raw = parse_text(text)
    if too_deep := value_problems(raw.records if isinstance(raw, JsonLines) else raw if not isinstance(raw, PlainText) else None):
        raise ScenarioError(source, too_deep)
    try:
        imported = import_transcript(raw, run)
    except FormatError as error:
        raise ScenarioError(source, error.problems, looks_like=_label(raw)) from None
    problems = tool_pair_problems(imported.messages, "messages")
    if imported.format != "openai-chat":
        problems = [relocate(where, what, imported.origins) for where, what in problems]
    if problems:
        raise ScenarioError(source, problems, looks_like=_label(raw))
    start = first_request(imported.messages, imported.examples)
    notes = list(imported.notes)
    if start == 0:
        notes.append((NO_PREFIX, {}))
    elif start > 1 or imported.messages[0].get("role") != "system":
        notes.append((PREFIX_KEPT, {"count": start}))
    name = scenario_id or transcript_id(text)
    return Scenario(
        id=name,
        title={"en": title} if title else {language: f"{word} {name}" for language, word in TRANSCRIPT_WORD.items()},
        lesson=dict(TRANSCRIPT_LESSON),
        prefix=tuple(imported.messages[:start]),
        prefix_layers=tuple(layer if layer != "history" else "system" for layer in map(message_layer, imported.messages[:start])),
        tools=imported.tools,
        script=grouped(
            [
                ScriptMessage(f"m{index + 1}", message, layer=message_layer(message))
                for index, message in enumerate(imported.messages[start:])
            ]
        ),
        source=source,
        kind="transcript",
        tools_field=imported.tools_field,
        origin=Origin(imported.format, tuple(notes), imported.model, imported.usage, imported.compactions),
    )


def _label(raw) -> str | None:
    """The label of the agent format a refused value looks like, None for a bare chat."""
    try:
        found = detect(raw)
    except FormatError:
        return None
    return found.label if found.name != "openai-chat" else None
