"""Summarizers for the summarize strategy.

A summary is a model call: its input (the instructions, the earlier summary and the folded
messages) and its output go on the bill. The default summarizer makes no call at all: it is
offline and deterministic, so a replay is the same every time. It uses the scenario's digest
of each exchange where the author wrote one, and otherwise keeps the first sentence of each
request and of its final answer, and the names of the tools used. With "keep facts" it is
told the critical facts and keeps each one it sees, as the seed advises
("Dites au résumeur ce qui doit survivre"); without, a fact survives only by luck.

A summary stays short whatever it quotes, as a model's would: each quoted name and sentence
is cut, each exchange gets one line of bounded length, and past `MAX_SUMMARY_CHARS` the oldest
lines give way to a count of what was left out. Without these bounds every summary repeated
every earlier summary's quotes, so its size, and the time to count it, grew with the chat.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..counting.tokens import Counter

if TYPE_CHECKING:
    from .history import Block
    from ..model import Fact


@dataclass(frozen=True)
class SummaryStyle:
    """The summarizer's instructions and the frame of what it writes: the textbook's, or a
    harness's in the shape its product documents (engine/harnesses/), written for the
    playground: no product's prompt is copied. The offline summarizer writes the same exchange
    lines in every frame, so a summary reads like the product's and is billed at about its
    size, and a replay stays deterministic."""

    instructions: str  # the summarizer's prompt (billed as its input)
    opening: str  # the summary's first line
    facts_label: str = "Facts to keep:"
    closing: str = ""


TEXTBOOK = SummaryStyle(
    "Summarize the earlier part of this conversation so the assistant can go on without it. "
    "Keep decisions and their reasons, facts established (names, numbers, identifiers), "
    "the user's constraints, and the state of the task. Be brief.",
    "[Summary of earlier exchanges]",
)

SUMMARY_HEADER = TEXTBOOK.opening
# A summary's text, without its facts line (the facts it is told to keep are the scenario's own,
# and bounded with it). The longest built-in summary is under 1,800 characters.
MAX_SUMMARY_CHARS = 4000
MAX_LINE_CHARS = 400
MAX_NAME_CHARS = 60
MAX_TOOLS_NAMED = 5
_LEFT_OUT = re.compile(r"^- \((\d+) earlier exchanges? left out\)$")
INSTRUCTIONS = TEXTBOOK.instructions


def instructions(facts: list[Fact], style: SummaryStyle = TEXTBOOK) -> str:
    """The summarizer's prompt (the textbook's, or a harness's own shape); with facts, it
    names what must survive word for word."""
    prompt = style.instructions
    if not facts:
        return prompt
    listed = "; ".join(f"{fact.label}: {fact.text}" if fact.label != fact.text else fact.text for fact in facts)
    return f"{prompt} These facts must survive word for word: {listed}."


@dataclass(frozen=True)
class SummaryResult:
    text: str
    input_tokens: int
    output_tokens: int


class Summarizer(Protocol):
    # What tells its summaries apart from another's, in a replay's key (engine/replays.py).
    name: str

    def summarize(
        self,
        *,
        previous: str | None,
        blocks: list[Block],
        digests: dict[int, str],
        facts: list[Fact],
        counter: Counter,
        style: SummaryStyle = TEXTBOOK,
    ) -> SummaryResult: ...


def summary_cost(counter: Counter, prompt: str, previous: str | None, blocks: list[Block], text: str) -> tuple[int, int]:
    """Input and output tokens of one summarizer call under `counter`."""
    units = counter.measure({"role": "system", "content": prompt}) + sum(block.units for block in blocks)
    if previous:
        units += counter.measure({"role": "system", "content": previous})
    output = round(counter.block_tokens(counter.measure({"role": "assistant", "content": text})))
    return counter.request_tokens(units), output


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s")


def shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def first_sentence(text: str, limit: int = 160) -> str:
    # Only the start can hold the first sentence: a megabyte without a full stop is not split.
    head = text.strip()[: limit * 4]
    sentence = _SENTENCE_END.split(head, maxsplit=1)[0] if head else ""
    return shorten(" ".join(sentence.split()), limit)


def bounded_lines(earlier: Iterable[str], new: list[str], opening: str = SUMMARY_HEADER) -> list[str]:
    """The exchange lines of a summary, oldest first, at most MAX_SUMMARY_CHARS in all: the
    oldest give way first, and one line counts them (adding up an earlier summary's count)."""
    left_out = 0
    lines = []
    for line in [*earlier, *new]:
        count = _LEFT_OUT.match(line)
        if count:
            left_out += int(count.group(1))
        else:
            lines.append(shorten(line, MAX_LINE_CHARS))
    room = MAX_SUMMARY_CHARS - len(opening) - 40  # 40: the count line itself
    total = sum(len(line) + 1 for line in lines)
    while lines and total > room:
        total -= len(lines.pop(0)) + 1
        left_out += 1
    if left_out:
        lines.insert(0, f"- ({left_out} earlier exchange{'s' if left_out > 1 else ''} left out)")
    return lines


class OfflineSummarizer:
    name = "offline"

    def summarize(self, *, previous, blocks, digests, facts, counter, style=TEXTBOOK) -> SummaryResult:
        # An earlier summary's exchange lines (each starts "- "), in whatever frame it was written.
        earlier = [line for line in previous.splitlines() if line.startswith("- ")] if previous else []
        new = ["- " + (digests.get(request) or _extract(group)) for request, group in _by_request(blocks)]
        lines = [style.opening, *bounded_lines(earlier, new, style.opening)]
        if facts:
            seen = "\n".join([previous or ""] + [block.searchable for block in blocks])
            kept = [fact.text for fact in facts if fact.text in seen]
            if kept:
                lines.append(f"{style.facts_label} " + "; ".join(kept))
        if style.closing:
            lines.append(style.closing)
        text = "\n".join(lines)
        input_tokens, output_tokens = summary_cost(counter, instructions(facts, style), previous, blocks, text)
        return SummaryResult(text, input_tokens, output_tokens)


def _by_request(blocks: list[Block]) -> list[tuple[int, list[Block]]]:
    groups: list[tuple[int, list[Block]]] = []
    for block in blocks:
        if groups and groups[-1][0] == block.request:
            groups[-1][1].append(block)
        else:
            groups.append((block.request, [block]))
    return groups


def _extract(group: list[Block]) -> str:
    parts = []
    asked = next((block.text for block in group if block.role == "user"), "")
    if asked:
        parts.append(f"User asked: {first_sentence(asked)}")
    tools = []
    for block in group:
        for call in block.message.get("tool_calls") or []:
            name = (call.get("function") or {}).get("name", "")
            if name and name not in tools:
                tools.append(name)
    if tools:
        named = ", ".join(shorten(name, MAX_NAME_CHARS) for name in tools[:MAX_TOOLS_NAMED])
        more = len(tools) - MAX_TOOLS_NAMED
        parts.append("tools used: " + named + (f" and {more} more" if more > 0 else ""))
    answer = next((block.text for block in reversed(group) if block.role == "assistant" and block.text), "")
    if answer:
        parts.append(f"assistant answered: {first_sentence(answer)}")
    return "; ".join(parts) or "(an exchange with no text)"
