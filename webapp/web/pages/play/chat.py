"""The chat as its user sees it: requests and replies, the current reply marked; on a +1 step,
only what the step adds."""

from __future__ import annotations

from dataclasses import dataclass

from ....core.counting.tokens import content_text
from ....core.engine.calls import Replay, per_replay


@dataclass
class Chat:
    added: list[dict]  # the bubbles to add: all of them, or those a +1 step adds
    changed: list[dict]  # bubbles already shown that change (the one that was current)


@per_replay
def bubbles(result: Replay) -> list[dict]:
    """What the chat's user sees: requests and replies with text, each with the call whose
    reply it is or precedes (`call`)."""
    out = []
    replies = 0
    for item in result.scenario.script:
        role = item.role
        if role == "assistant":
            replies += 1
        if role not in {"user", "assistant"}:
            continue
        text = content_text(item.message.get("content"))
        if text.strip():
            out.append({"id": item.id, "role": role, "text": text, "call": replies, "reply": role == "assistant"})
    return out


def chat(result: Replay, number: int, shown: int = 0) -> Chat:
    """The chat up to call `number`'s reply, the reply marked current. With `shown` (the call a
    page already shows), only what comes after it, and the bubble that stops being current."""

    def at(call: int) -> list[dict]:
        return [{**bubble, "current": bubble["reply"] and bubble["call"] == call} for bubble in bubbles(result) if bubble["call"] <= call]

    now = at(number)
    if not shown:
        return Chat(now, [])
    then = at(shown)
    changed = [bubble for bubble, was in zip(now, then) if bubble["current"] != was["current"]]
    return Chat(now[len(then) :], changed)
