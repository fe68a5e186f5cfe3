"""Facts the agent used again, found by themselves: the values a message brings into the chat
(a user's order number, a path in a tool's output) that a later assistant message or tool call
writes again. The agent needed them later, so a request that no longer holds one at that call
lost something the authored critical facts cannot name on a pasted session.

What counts as a value, what is ignored and how a use is matched is in docs/references.md; the
rules are deterministic (one pass over the script in order, no model). `find_references` reads
the scenario once; `reference_fates` checks one replay at each call that used a value, with the
blocks the call sent (verbatim, in a truncation preview, in a summary, or gone).
"""

from __future__ import annotations

import json
from bisect import bisect_right
from dataclasses import dataclass, field, replace
from typing import Iterator, Literal

import re

from ..model import Fact, Scenario
from ..engine.calls import Call, Replay, per_calls
from ..engine.history import Block, searchable
from ..time_budget import spend

# Quoted names: the text between a pair of quotes of one line ("…", '…', `…`, “…”, «…», 「…」);
# a JSON key (a quoted word followed by a colon) is not one. Each branch opens with its quote
# (the "not after a word" test comes after it), so the scan skips to the next quote at once.
QUOTED = re.compile(
    r'''"(?<!\w")([^"\n]{3,80})"|'(?<!\w')([^'\n]{3,80})'(?!\w)|`([^`\n]{3,80})`|“([^”\n]{3,80})”|«\s?([^»\n]{3,80}?)\s?»|「([^」\n]{2,80})」'''
)
# The stretches between spaces and quotes that hold a digit, a slash, a dot or an underscore:
# only those can hold a value of the other kinds, so the costly pattern below reads only them.
# Each is one plain run (possessive), so a megabyte without a space is read in linear time.
MARKED = re.compile(r'''(?<![^\s"'`“”«»「」])[^\s"'`“”«»「」\d/_.]*+[\d/_.][^\s"'`“”«»「」]*+''')
FILE_TYPES = (
    "py|pyi|ipynb|js|mjs|cjs|ts|tsx|jsx|json|jsonl|toml|yaml|yml|ini|cfg|conf|env|lock|md|rst|txt|csv|tsv|"
    "html|htm|css|scss|xml|svg|png|jpg|jpeg|gif|pdf|zip|gz|tar|log|sql|db|sqlite|sh|bash|ps1|bat|"
    "c|h|cc|cpp|hpp|rs|go|java|kt|swift|rb|php|cs|lua|r|dart|scala|ex|exs|vue|svelte|tf|proto|wasm|so|dll|exe"
)
# One alternation, tried left to right at each position: the longest shapes first, so a URL is
# not also read as a path, nor a path as a file name. A version may have a name glued in front
# (v2.3, go1.22.1, python3.12), and an id never ends where a dotted number goes on ("go1" is
# not taken out of go1.22.1, nor "node-18" out of node-18.17.0).
VALUE = re.compile(
    r"""
    (?P<url>https?://[^\s<>"'`)\]}]+)
    | (?P<path>(?<![\w/.])(?:~|\.{1,2})?(?:/[\w.@+-]+){2,}/?|(?<![\w/.])[\w.@+-]+(?:/[\w.@+-]+)+\.[A-Za-z]\w{0,7}(?![\w/]))
    | (?P<version>(?<![\w.])[A-Za-z]+\d+(?:\.\d+)+(?:[-+][\w.]+)?(?![\w]|\.[A-Za-z])|(?<![\w.])\d+\.\d+\.\d+(?:[-+][\w.]+)?(?![\w.]))
    | (?P<code>(?<![\w-])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?![\w-]))
    | (?P<id>(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9][\w-]+[A-Za-z0-9](?![\w-]|\.\d))
    | (?P<file>(?<![\w./-])[\w-]+(?:\.[\w-]+)*\.(?:""" + FILE_TYPES + r""")(?![\w.]))
    | (?P<number>(?<![\w.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|(?<![\w.,])\d{3,}(?:\.\d+)?(?![\w.])|(?<![\w.,])\d+\.\d+(?![\w.]))
    """,
    re.VERBOSE,
)
# A number with a unit or an ordinal ("200ms", "3rd", "16px") is a measure, not a value.
JSON_KEY = re.compile(r"\s*:")
# Quoted code rather than a name: an assignment or comparison, a statement's end, braces, an
# escape, a call or an index glued to a name, a shell substitution, an arrow, words joined by a
# comma without a space (a list of fields, "lng,lat").
CODE = re.compile(r"[=;{}\\]|\w[(\[]|\$[({]|->|[A-Za-z],[A-Za-z]")
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
MEASURE = re.compile(r"\d+(?:\.\d+)?[a-z]{1,3}")
# A character range of a pattern ("0-9a-f", "a-zA-Z0-9"), read as an id from "[0-9a-f]{40}".
RANGE = re.compile(r"(?:[0-9A-Za-z]-[0-9A-Za-z])+")
YEAR = re.compile(r"(?:19|20)\d\d")
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


def values_in(text: str, stretches: dict[str, list[tuple[str, str]]] | None = None) -> Iterator[tuple[str, str]]:
    """(value, kind) of every value in `text`: its quoted names, then the other values in
    order (docs/references.md says which). `stretches` keeps what each stretch held, for the
    next text of the same chat (a chat's tool results repeat many of them)."""
    for match in QUOTED.finditer(text):
        inner = match.group(match.lastindex).strip()
        if " " not in inner and JSON_KEY.match(text, match.end()):
            continue
        if not _plain_words(inner) and not (NUMBER.fullmatch(inner) and _small(inner)) and not CODE.search(inner):
            yield inner, "quoted"
    stretches = {} if stretches is None else stretches
    for stretch in MARKED.findall(text):
        found = stretches.get(stretch)
        if found is None:
            found = stretches[stretch] = list(_stretch_values(stretch))
        yield from found


def _stretch_values(stretch: str) -> Iterator[tuple[str, str]]:
    for match in VALUE.finditer(stretch):
        kind = match.lastgroup
        value = match.group(kind)
        if kind in ("url", "path"):
            value = value.rstrip(TRAILING)
        elif kind == "id" and (MEASURE.fullmatch(value) or RANGE.fullmatch(value)) or kind == "number" and _small(value):
            continue
        yield value, kind


def _small(number: str) -> bool:
    """Fewer than four significant digits ("10.00", "200"), or a year ("2026"): a count, a
    price or a year the agent may well write again of itself, not a value it had to be given."""
    return len(number.replace(",", "").replace(".", "").strip("0")) < 4 or bool(YEAR.fullmatch(number))


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
    """Every reference of the scenario, in the order their sources entered.

    Each value's fate depends on its own first appearance alone, so the script is read once for
    where each value first appears (a message repeated word for word brings nothing new), then
    only the values an assistant message writes again are followed: their uses through the
    assistant messages' words, the rules that ignore them, and every message that holds them."""
    script = scenario.script
    texts = [searchable(item.message) for item in script]
    chat = _ChatIndex(scenario, texts)
    grams = chat.assistant_grams
    first: dict[str, tuple[str, int]] = {}  # value -> (kind, the message it first appears in)
    read: set[str] = set()
    stretches: dict[str, list[tuple[str, str]]] = {}
    for index, text in enumerate(texts):
        spend()
        if text not in read:
            read.add(text)
            for value, kind in values_in(text, stretches):
                # No assistant message has its first or last three characters: never used again.
                if len(value) < 3 or value[:3] in grams and value[-3:] in grams:
                    first.setdefault(value, (kind, index))
    ignored = {fact.text for fact in scenario.facts}  # an authored critical fact is checked as that
    found = (chat.follow(value, kind, source) for value, (kind, source) in first.items() if value not in ignored)
    return References(tuple(reference for reference in found if reference), frozenset(item.id for item in script))


class _ChatIndex:
    """What `find_references` asks of the script once it knows a value: each message's words
    (read the first time they are needed), the assistant messages by word, the calls."""

    def __init__(self, scenario: Scenario, texts: list[str]):
        self.script = scenario.script
        self.texts = texts
        self.words: dict[str, set[str]] = {}
        self.calls: list[int] = []  # the call each message is read at: each assistant message ends one
        call = 1
        for item in scenario.script:
            self.calls.append(call)
            call += item.role == "assistant"
        self.by_word: dict[str, list[int]] = {}  # word -> the assistant messages that have it, in order
        # Every three characters an assistant message has: a value it writes again has its first
        # three and its last three among them, which most values of a tool's output have not.
        self.assistant_grams: set[str] = set()
        for index, item in enumerate(scenario.script):
            if item.role == "assistant":
                for word in self.words_of(index):
                    self.by_word.setdefault(word, []).append(index)
                text = texts[index]
                self.assistant_grams.update(text[start : start + 3] for start in range(len(text) - 2))
        self.floor = "\n".join([*(searchable(message) for message in scenario.prefix), json.dumps(scenario.tools, ensure_ascii=False)])
        self.floor_words = set(WORD.findall(self.floor))
        self.common = max(COMMON_FLOOR, COMMON_SHARE * len(texts))
        self.more_common: dict[str, bool] = {}

    def words_of(self, index: int) -> set[str]:
        """The words of message `index`, read once per distinct text."""
        text = self.texts[index]
        found = self.words.get(text)
        if found is None:
            found = self.words[text] = set(WORD.findall(text))
        return found

    def holds(self, index: int, value: str, parts: frozenset[str]) -> bool:
        """Message `index` has `value` as written: a value of one word among its words, a
        longer one with all its words there and its text written whole."""
        text = self.texts[index]
        return value in text and parts <= self.words_of(index) and (value in parts or occurs(value, text))

    def follow(self, value: str, kind: str, source: int) -> Reference | None:
        """The reference `value` is, first brought in by message `source`, if it is one: an
        assistant message writes it again later, and no rule ignores it."""
        if self.script[source].role == "assistant":
            return None  # what the assistant said first
        parts = frozenset(WORD.findall(value))
        if not parts:
            return None  # no word to match it by
        postings = min((self.by_word.get(part, ()) for part in parts), key=len)
        uses = tuple(self.calls[index] for index in postings[bisect_right(postings, source) :] if self.holds(index, value, parts))
        if not uses or value not in parts and all(self._common(part) for part in parts):
            return None  # not used again, or common words strung together
        if _in_floor(value, self.floor, self.floor_words):
            return None
        holders = [self.script[index].id for index in range(source + 1, len(self.texts)) if self.holds(index, value, parts)]
        return Reference(value, kind, self.script[source].id, self.calls[source], uses, frozenset([self.script[source].id, *holders]))

    def _common(self, word: str) -> bool:
        """In more than `common` messages: counted until it is."""
        found = self.more_common.get(word)
        if found is None:
            count = 0
            for index in range(len(self.texts)):
                count += word in self.words_of(index)
                if count > self.common:
                    break
            found = self.more_common[word] = count > self.common
        return found


def _in_floor(value: str, floor: str, floor_words: set[str]) -> bool:
    return _key(value) in floor_words and occurs(value, floor, floor_words)


def scenario_references(scenario: Scenario) -> References:
    """`find_references` without fragments, kept on the scenario: every strategy and every
    step reads it."""
    try:
        return scenario.derived[find_references]
    except KeyError:
        found = scenario.derived[find_references] = without_fragments(find_references(scenario), scenario.facts)
        return found


def without_fragments(references: References, facts: list[Fact]) -> References:
    """Each value once, as a person names it: a value written inside a longer one ("4X7" of a
    tracking number, "11.02" of "11.02 EUR") is no use of its own at a call that writes the
    longer one, and a value inside an authored critical fact is checked as that fact. A value
    left with no use of its own is none."""
    by_key: dict[str, list[Reference]] = {}
    for reference in references.items:
        for word in set(WORD.findall(reference.value)):
            by_key.setdefault(word, []).append(reference)
    kept = []
    for reference in references.items:
        value = reference.value
        if any(value in fact.text and occurs(value, fact.text) for fact in facts):
            continue
        longer = [other for other in by_key.get(_key(value), ()) if len(other.value) > len(value) and occurs(value, other.value)]
        taken = {use for other in longer for use in other.uses}
        uses = tuple(use for use in reference.uses if use not in taken)
        if uses:
            kept.append(reference if uses == reference.uses else replace(reference, uses=uses))
    return References(tuple(kept), references.script_ids)


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


def reference_fates(references: References, calls: list[Call]) -> list[ReferenceFate]:
    """Each reference under one replay: what each call that used it held of it. Only the calls
    that used a value are read, each from the one read before it when its request starts with
    that one's (the usual case: only a compaction makes a request be read whole again)."""
    used_at: dict[int, list[Reference]] = {}
    for reference in references.items:
        for use in reference.uses:
            used_at.setdefault(use, []).append(reference)
    held: dict[tuple[str, int], Held] = {}
    original: set[str] = set()  # the ids of the request's unchanged script messages
    rewritten: list[Block] = []  # its summaries, truncated and cleared messages, notices
    previous: tuple[Block, ...] = ()
    for call in calls:
        if call.number not in used_at:
            continue
        spend()
        blocks = call.blocks
        if blocks[: len(previous)] == previous:
            new = blocks[len(previous) :]
        else:
            original, rewritten, new = set(), [], blocks
        for block in new:
            if block.state == "original" and block.id in references.script_ids:
                original.add(block.id)
            else:
                rewritten.append(block)
        previous = blocks
        for reference in used_at[call.number]:
            held[reference.value, call.number] = held_at(reference, original, rewritten)
    return [
        ReferenceFate(reference, tuple(held[reference.value, use] for use in reference.uses if (reference.value, use) in held))
        for reference in references.items
    ]


@per_calls
def replay_reference_fates(result: Replay) -> list[ReferenceFate]:
    """`reference_fates` of a replay, kept on it."""
    return reference_fates(scenario_references(result.scenario), result.calls)
