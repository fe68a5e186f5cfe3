"""The references finder as it was before it was made fast (webapp/core/analysis/references.py
at 6128213), kept as the reference the fast one must equal: the same references (values, kinds,
sources, uses, holders, in order) and the same fates on every chat
(tests/test_references_fast.py). Its own cost was one pass over every value of the script
and one walk of every call of every replay. Its rules of what a value is follow the app's
(VALUE and CODE are imported); its own scans of quotes and stretches are the plain ones."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator, Literal

import re

from webapp.core.model import Fact, Scenario
from webapp.core.engine.calls import Call
from webapp.core.analysis.references import CODE, VALUE
from webapp.core.engine.history import Block, searchable

# Quoted names: the text between a pair of quotes of one line ("…", '…', `…`, “…”, «…», 「…」);
# a JSON key (a quoted word followed by a colon) is not one.
QUOTED = re.compile(
    r'''(?<![\w])"([^"\n]{3,80})"|(?<![\w])'([^'\n]{3,80})'(?![\w])|`([^`\n]{3,80})`|“([^”\n]{3,80})”|«\s?([^»\n]{3,80}?)\s?»|「([^」\n]{2,80})」'''
)
# The stretches between spaces and quotes; only those that hold a digit, a slash, a dot or an
# underscore (MARK) can hold a value of the other kinds, so the costly pattern below reads only
# them. Each is one plain run, so a megabyte without a space is read in linear time.
CANDIDATE = re.compile(r'''[^\s"'`“”«»「」]+''')
MARK = re.compile(r"[\d/_.]")
# What a value is (its shapes, VALUE) and what quoted code is (CODE) are the app's rules.
# A number with a unit or an ordinal ("200ms", "3rd", "16px") is a measure, not a value.
JSON_KEY = re.compile(r"\s*:")
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
MEASURE = re.compile(r"\d+(?:\.\d+)?[a-z]{1,3}")
WORD = re.compile(r"\w+")
TRAILING = ".,;:!?"
# A value longer than one word whose words are all in more than this share of the messages
# (and in more than COMMON_FLOOR of them) is made of common words.
COMMON_SHARE = 0.05
COMMON_FLOOR = 20
Held = Literal["verbatim", "summary", "preview", "lost"]


@dataclass(frozen=True)
class Reference:
    """One value brought in by a message and written again by the agent later."""

    value: str
    kind: str  # url, quoted, path, version, code, id, file or number
    source: str  # the id of the script message that brought it in
    source_call: int  # the first call whose request held that message
    uses: tuple[int, ...]  # the calls whose reply wrote the value again, in order
    holders: frozenset[str]  # the script messages that hold it as written (the source, later repeats, the uses)

    @property
    def fact(self) -> Fact:
        """The reference as a critical fact, needed from its first use: what the comparison's
        lists of lost facts show ("4471", lost from call 12)."""
        return Fact(self.value, self.value, self.uses[0])


@dataclass(frozen=True)
class References:
    items: tuple[Reference, ...]
    script_ids: frozenset[str] = field(default_factory=frozenset)

    def from_message(self, message_id: str) -> list[Reference]:
        return [reference for reference in self.items if reference.source == message_id]


@dataclass(frozen=True)
class ReferenceFate:
    """A reference under one strategy: what each call that used it still held of it."""

    reference: Reference
    held: tuple[Held, ...]  # at each of reference.uses

    @property
    def fact(self) -> Fact:
        return self.reference.fact

    @property
    def lost_from(self) -> int | None:
        """The first call that used the value and whose request no longer held it."""
        return next((call for call, held in zip(self.reference.uses, self.held) if held == "lost"), None)

    @property
    def lost(self) -> bool:
        return self.lost_from is not None


def values_in(text: str) -> Iterator[tuple[str, str]]:
    """(value, kind) of every value in `text`: its quoted names, then the other values in
    order (docs/references.md says which)."""
    for match in QUOTED.finditer(text):
        inner = next(group for group in match.groups() if group).strip()
        if " " not in inner and JSON_KEY.match(text, match.end()):
            continue
        if not _plain_words(inner) and not (NUMBER.fullmatch(inner) and _small(inner)) and not CODE.search(inner):
            yield inner, "quoted"
    for stretch in CANDIDATE.finditer(text):
        if not MARK.search(stretch.group()):
            continue
        for match in VALUE.finditer(stretch.group()):
            kind = match.lastgroup
            value = match.group(kind)
            if kind in ("url", "path"):
                value = value.rstrip(TRAILING)
            elif kind == "id" and MEASURE.fullmatch(value) or kind == "number" and _small(value):
                continue
            yield value, kind


def _small(number: str) -> bool:
    """Fewer than four significant digits ("10.00", "200", "2026" has four): a count, a price
    or a year the agent may well write again of itself, not a value it had to be given."""
    return len(number.replace(",", "").replace(".", "").strip("0")) < 4


def _plain_words(text: str) -> bool:
    """A quoted text that is one plain word (a JSON string, "yes", "shipped"): as often a
    common word as a name, so not a value."""
    stripped = text.strip()
    return " " not in stripped and stripped.isalpha()


def occurs(value: str, text: str, words: set[str] | None = None) -> bool:
    """`value` written in `text` as a whole: not inside a longer word or number. `words`, the
    words of `text`, answers at once for a value of one word."""
    if words is not None and _key(value) == value:
        return value in words
    start = text.find(value)
    while start >= 0:
        end = start + len(value)
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        if not (value[0].isalnum() and (before.isalnum() or before == "_")) and not (
            value[-1].isalnum() and (after.isalnum() or after == "_")
        ):
            return True
        start = text.find(value, start + 1)
    return False


def _key(value: str) -> str:
    """The word a text must contain for `value` to be in it: its longest."""
    return max(WORD.findall(value), key=len, default=value)


def find_references(scenario: Scenario) -> References:
    """Every reference of the scenario, in the order their sources entered. Long because it is
    one pass over the script that keeps five tables in step (values by key word, their words,
    where each occurs, its uses, and what is ignored)."""
    floor = "\n".join([*(searchable(message) for message in scenario.prefix), json.dumps(scenario.tools, ensure_ascii=False)])
    floor_words = set(WORD.findall(floor))
    texts = [searchable(item.message) for item in scenario.script]
    word_sets = [set(WORD.findall(text)) for text in texts]
    # A value is looked for through its rarest word, in the messages that have it; a value
    # longer than one word whose words are all common (each in more than COMMON_SHARE of the
    # messages) is made of common words, not a name.
    frequency = Counter(word for words in word_sets for word in words)
    common = max(COMMON_FLOOR, COMMON_SHARE * len(texts))
    by_key: dict[str, list[str]] = {}  # key word -> values registered under it
    found: dict[str, tuple[str, str, int]] = {}  # value -> (kind, source id, source call)
    holders: dict[str, set[str]] = {}
    value_words: dict[str, frozenset[str]] = {}
    uses: dict[str, list[int]] = {}
    # In the floor, written by the assistant before any message brought it, or an authored
    # critical fact (checked as that).
    ignored: set[str] = {fact.text for fact in scenario.facts}
    call = 1
    for item, text, words in zip(scenario.script, texts, word_sets):
        assistant = item.role == "assistant"
        for word in words & by_key.keys():
            for value in by_key[word]:
                # A value of one word is its key, found in the words; a longer one needs all
                # its words there before its text is searched.
                if value == word or value_words[value] <= words and occurs(value, text):
                    holders[value].add(item.id)
                    if assistant and (not uses[value] or uses[value][-1] != call):
                        uses[value].append(call)
        for value, kind in values_in(text):
            if value in found or value in ignored:
                continue
            parts = frozenset(WORD.findall(value)) or frozenset([value])
            key = min(parts, key=lambda part: (frequency[part], -len(part), part))
            if assistant or _in_floor(value, floor, floor_words) or value != key and frequency[key] > common:
                ignored.add(value)
                continue
            found[value] = (kind, item.id, call)
            holders[value] = {item.id}
            uses[value] = []
            value_words[value] = parts
            by_key.setdefault(key, []).append(value)
        if assistant:
            call += 1
    items = tuple(
        Reference(value, kind, source, source_call, tuple(uses[value]), frozenset(holders[value]))
        for value, (kind, source, source_call) in found.items()
        if uses[value]
    )
    return References(items, frozenset(item.id for item in scenario.script))


def _in_floor(value: str, floor: str, floor_words: set[str]) -> bool:
    return _key(value) in floor_words and occurs(value, floor, floor_words)


def held_at(reference: Reference, original: set[str], rewritten: list[Block]) -> Held:
    """What a request holds of the value: a script message that has it as written (`original`,
    the ids of the request's unchanged script messages), else a summary or a truncated or
    cleared message whose new text still has it (`rewritten`), else nothing."""
    if not reference.holders.isdisjoint(original):
        return "verbatim"
    kept = [block.state for block in rewritten if occurs(reference.value, block.searchable)]
    if not kept:
        return "lost"
    return "summary" if "summary" in kept else "preview"


def requests(calls: list[Call], script_ids: frozenset[str]) -> Iterator[tuple[Call, set[str], list[Block]]]:
    """Each call with its request split as `held_at` reads it. A request is usually the one
    before and a few new messages: only a compaction makes it walk the whole request again."""
    original: set[str] = set()
    rewritten: list[Block] = []
    previous: tuple[Block, ...] = ()
    for call in calls:
        blocks = call.blocks
        if blocks[: len(previous)] == previous:
            new = blocks[len(previous) :]
        else:
            original, rewritten, new = set(), [], blocks
        for block in new:
            if block.state == "original" and block.id in script_ids:
                original.add(block.id)
            else:
                rewritten.append(block)
        previous = blocks
        yield call, original, rewritten


def reference_fates(references: References, calls: list[Call]) -> list[ReferenceFate]:
    """Each reference under one replay: what each call that used it held of it."""
    used_at: dict[int, list[Reference]] = {}
    for reference in references.items:
        for use in reference.uses:
            used_at.setdefault(use, []).append(reference)
    held: dict[tuple[str, int], Held] = {}
    for call, original, rewritten in requests(calls, references.script_ids):
        for reference in used_at.get(call.number, ()):
            held[reference.value, call.number] = held_at(reference, original, rewritten)
    return [
        ReferenceFate(reference, tuple(held[reference.value, use] for use in reference.uses if (reference.value, use) in held))
        for reference in references.items
    ]
