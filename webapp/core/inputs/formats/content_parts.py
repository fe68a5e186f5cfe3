"""What the formats whose messages hold typed content parts share (Anthropic's blocks, the
Responses API's parts, chat completions' own): each part of a list that is an object of a type
the format reads, and a text part as chat completions writes it."""

from __future__ import annotations

from collections.abc import Iterator

from .common import Check


def typed_parts(check: Check, parts: list, at: str, accepted: tuple[str, ...], expected: str) -> Iterator[tuple[dict, str]]:
    """Each part of the list at `at` that is an object (`expected` names it in a problem) whose
    "type" is one of `accepted`, with its place (`at[2]`); the others are reported on `check`."""
    for position, part in enumerate(parts):
        where = f"{at}[{position}]"
        if check.object(part, where, expected) and check.one_of(part.get("type"), accepted, f"{where}.type"):
            yield part, where


def text_part(check: Check, part: dict, where: str) -> dict | None:
    """A part's text as chat completions' text part, or None (reported) when it is no string."""
    if not check.string(part.get("text"), f"{where}.text"):
        return None
    return {"type": "text", "text": part["text"]}
