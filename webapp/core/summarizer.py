"""Summarizers for the summarize strategy.

A summary is a model call: its input (the instructions, the earlier summary and the folded
messages) and its output go on the bill. The default summarizer makes no call at all: it is
offline and deterministic, so a replay is the same every time. It uses the scenario's digest
of each exchange where the author wrote one, and otherwise keeps the first sentence of each
request and of its final answer, and the names of the tools used. With "keep facts" it is
told the critical facts and keeps each one it sees, as the seed advises
("Dites au résumeur ce qui doit survivre"); without, a fact survives only by luck.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from .tokens import Counter

if TYPE_CHECKING:
    from .history import Block
    from .scenarios import Fact

SUMMARY_HEADER = "[Summary of earlier exchanges]"
INSTRUCTIONS = (
    "Summarize the earlier part of this conversation so the assistant can go on without it. "
    "Keep decisions and their reasons, facts established (names, numbers, identifiers), "
    "the user's constraints, and the state of the task. Be brief."
)


def instructions(facts: list[Fact]) -> str:
    """The summarizer's prompt; with facts, it names what must survive word for word."""
    if not facts:
        return INSTRUCTIONS
    listed = "; ".join(f"{fact.label}: {fact.text}" if fact.label != fact.text else fact.text for fact in facts)
    return f"{INSTRUCTIONS} These facts must survive word for word: {listed}."


@dataclass(frozen=True)
class SummaryResult:
    text: str
    input_tokens: int
    output_tokens: int


class Summarizer(Protocol):
    def summarize(
        self,
        *,
        previous: str | None,
        blocks: list[Block],
        digests: dict[int, str],
        facts: list[Fact],
        counter: Counter,
    ) -> SummaryResult: ...


def summary_cost(counter: Counter, prompt: str, previous: str | None, blocks: list[Block], text: str) -> tuple[int, int]:
    """Input and output tokens of one summarizer call under `counter`."""
    units = counter.measure({"role": "system", "content": prompt}) + sum(block.units for block in blocks)
    if previous:
        units += counter.measure({"role": "system", "content": previous})
    output = round(counter.block_tokens(counter.measure({"role": "assistant", "content": text})))
    return counter.request_tokens(units), output


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s")


def first_sentence(text: str, limit: int = 160) -> str:
    sentence = _SENTENCE_END.split(text.strip(), maxsplit=1)[0] if text.strip() else ""
    sentence = " ".join(sentence.split())
    return sentence if len(sentence) <= limit else sentence[: limit - 1] + "…"


class OfflineSummarizer:
    def summarize(self, *, previous, blocks, digests, facts, counter) -> SummaryResult:
        lines = [SUMMARY_HEADER]
        if previous:
            lines += [line for line in previous.splitlines()[1:] if line and not line.startswith("Facts to keep:")]
        for request, group in _by_request(blocks):
            lines.append("- " + (digests.get(request) or _extract(group)))
        if facts:
            seen = "\n".join([previous or ""] + [block.searchable for block in blocks])
            kept = [fact.text for fact in facts if fact.text in seen]
            if kept:
                lines.append("Facts to keep: " + "; ".join(kept))
        text = "\n".join(lines)
        input_tokens, output_tokens = summary_cost(counter, instructions(facts), previous, blocks, text)
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
        parts.append("tools used: " + ", ".join(tools))
    answer = next((block.text for block in reversed(group) if block.role == "assistant" and block.text), "")
    if answer:
        parts.append(f"assistant answered: {first_sentence(answer)}")
    return "; ".join(parts) or "(an exchange with no text)"
