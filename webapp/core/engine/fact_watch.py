"""Which critical facts a request holds, call after call, without searching the whole request
at every call: a block's facts are found once (for a script message, once for every replay of
the chat), counted as blocks enter, and recounted only after a compaction."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..model import Fact, Scenario
from .calls import FactStatus, script_blocks
from .history import Block, searchable


class FactWatch:
    """A fact is in a request when its text is in the request's text: the prefix's messages and
    the blocks' searchable texts, one after another with a newline between. A fact with no
    newline cannot straddle two of them, so it is in the request when it is in one of them; a
    fact with one is looked for in the whole text, as before."""

    def __init__(self, scenario: Scenario, counter_name: str):
        self.facts = scenario.facts
        self.prefix_parts = [searchable(message) for message in scenario.prefix]
        prefix_text = "\n".join(self.prefix_parts)
        self.in_prefix = [fact.text in prefix_text for fact in self.facts]
        self.straddling = [index for index, fact in enumerate(self.facts) if "\n" in fact.text]
        self.known = _script_facts(scenario, counter_name) if self.facts else {}
        self.found: dict[int, tuple[Block, tuple[int, ...]]] = {}  # blocks the loop wrote
        self.counts = [0] * len(self.facts)
        # Whether an earlier request held each fact, and the call it went from since (None: held, or never sent).
        self.sent_before = [False] * len(self.facts)
        self.lost_from: list[int | None] = [None] * len(self.facts)
        # Each status made once, not at every call.
        self.made: dict[tuple[int, bool, bool, int | None], FactStatus] = {}

    def held(self, block: Block) -> tuple[int, ...]:
        """The indexes of the facts in this block's text."""
        known = self.known.get(id(block)) or self.found.get(id(block))
        if known is None:
            known = self.found[id(block)] = (block, _facts_in(self.facts, block))
        return known[1]

    def add(self, block: Block) -> None:
        if self.facts:
            for index in self.held(block):
                self.counts[index] += 1

    def recount(self, blocks: Iterable[Block]) -> None:
        """After a compaction: the history is another."""
        if self.facts:
            self.counts = [0] * len(self.facts)
            for block in blocks:
                self.add(block)

    def resume(self, previous: Sequence[FactStatus]) -> None:
        """Go on from a replay's call whose statuses are `previous`: what was sent before it."""
        for index, status in enumerate(previous):
            self.sent_before[index] = status.present or status.lost
            self.lost_from[index] = status.lost_from

    def statuses(self, blocks: Sequence[Block], call: int) -> list[FactStatus]:
        """The facts at call `call` (the calls come in order): a fact an earlier request held and
        this one does not is lost from the first call without it."""
        if not self.facts:
            return []
        present = [in_prefix or count > 0 for in_prefix, count in zip(self.in_prefix, self.counts)]
        if self.straddling:
            sent = "\n".join([*self.prefix_parts, *(block.searchable for block in blocks)])
            for index in self.straddling:
                present[index] = self.facts[index].text in sent
        statuses = []
        for index, (fact, held) in enumerate(zip(self.facts, present)):
            if held:
                self.sent_before[index], self.lost_from[index] = True, None
            elif self.sent_before[index] and self.lost_from[index] is None:
                self.lost_from[index] = call
            key = (index, held, call >= fact.needed_from_call, self.lost_from[index])
            status = self.made.get(key)
            if status is None:
                status = self.made[key] = FactStatus(fact, held, key[2], key[3])
            statuses.append(status)
        return statuses


def _facts_in(facts: list[Fact], block: Block) -> tuple[int, ...]:
    text = block.searchable
    return tuple(index for index, fact in enumerate(facts) if fact.text in text)


def _script_facts(scenario: Scenario, counter_name: str) -> dict[int, tuple[Block, tuple[int, ...]]]:
    """The facts of each script message's block, found once for the chat."""
    key = (_script_facts, counter_name)
    found = scenario.derived.get(key)
    if found is None:
        found = scenario.derived[key] = {id(block): (block, _facts_in(scenario.facts, block)) for block in script_blocks(scenario, counter_name)}
    return found

