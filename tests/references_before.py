"""The references finder as it was before it was made fast (webapp/core/analysis/references.py
at 6128213), kept as the reference the fast one must equal: the same references (values, kinds,
sources, uses, holders, in order) and the same fates on every chat
(tests/test_references_fast.py). Its own cost was one pass over every value of the script
and one walk of every call of every replay. Its rules of what a value is follow the app's
(VALUE and CODE are imported); its own scans of quotes and stretches are the plain ones."""

from __future__ import annotations

import json
from collections import Counter
from typing import Iterator

import re

from webapp.core.model import Scenario
from webapp.core.engine.calls import Call
from webapp.core.analysis.references import (  # the records and the rules of what a value is are the app's
    CODE, COMMON_FLOOR, COMMON_SHARE, JSON_KEY, NUMBER, WORD, Held, Reference, ReferenceFate, References,
    _in_floor, _plain_words, _small, _stretch_values, held_at, occurs,
)
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
        yield from _stretch_values(stretch.group())


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
