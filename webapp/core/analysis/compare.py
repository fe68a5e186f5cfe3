"""Every strategy on the same chat, side by side: the bill, the facts kept, the overflows, and
what prompt caching does to the bill.

One replay per strategy (and one more with "keep facts" for each strategy that summarizes);
every figure below is read from those replays, never recomputed by another route, so the
comparison always agrees with the engine.

Prompt caching is modelled in `cache.py` and the bill's prices in `pricing.py`. The verdict, and
its sentences, are in `verdict.py`; the comparison as plain data (JSON, CSV) in
`comparison_data.py`; the session's own record, beside them, in `as_recorded.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Collection

from ..collector import without_collection
from ..time_budget import spend
from .cache import CacheHit, MessageKeys
from .as_recorded import AsRecorded, as_recorded
from .metrics import replay_hits
from .pricing import Bill, Pricing, bill
from .provider_prices import session_basis
from .compaction_cost import CompactionCost, compaction_costs
from .references import ReferenceFate, replay_reference_fates
from ..engine.remote_summarizer import SummarizerError
from ..engine.pitfalls import REFUSED_LINES
from ..engine.replay import replay
from ..engine.calls import Call, Replay
from ..model import Fact, Scenario
from ..settings import Settings, SettingsError, with_strategy
from ..engine.strategy_catalog import STRATEGIES


# --- The comparison --------------------------------------------------------------------------


@dataclass(frozen=True)
class FactFate:
    fact: Fact
    present: tuple[bool, ...]  # at each call, from call 1
    lost_from: int | None  # the first call that needed it and did not have it
    # At each call, from call 1: the call it went from, when an earlier request held it and this one does not.
    gone_since: tuple[int | None, ...] = ()

    @property
    def lost(self) -> bool:
        return self.lost_from is not None


class StrategyChoice:
    """What a column's settings choose: its strategy, with keep facts or not, and the strategy's
    family. A comparison's column and a sweep's point both read it from their `settings`."""

    settings: Settings

    @property
    def strategy(self) -> str:
        return self.settings.strategy

    @property
    def keep_facts(self) -> bool:
        return self.settings.keep_facts

    @property
    def family(self) -> str:
        """"textbook" or "harness": the comparison shows each family apart."""
        return STRATEGIES[self.strategy].family


@dataclass
class Column(StrategyChoice):
    """One strategy (with its keep-facts choice) replayed on the scenario."""

    key: str
    settings: Settings
    result: Replay
    hits: list[CacheHit]
    invalid: dict[int, list[str]]  # call number -> why an API would refuse its request
    facts: list[FactFate]
    bill: Bill
    # The values the agent used again (references.py), and what each call that used one held.
    references: list[ReferenceFate] = field(default_factory=list)
    # What each compaction cost the prompt cache, by call (compaction_cost.py).
    costs: dict[int, CompactionCost] = field(default_factory=dict)

    @property
    def calls(self) -> list[Call]:
        return self.result.calls

    def call(self, number: int) -> Call:
        return self.result.calls[number - 1]

    def pitfalls(self, kind: str) -> list[dict]:
        """The harness pitfalls of this kind found at each call (engine/pitfalls.py), with the
        call's number: loop, small, grew, cache or refused."""
        return [
            {"call": call.number, **event.detail}
            for call in self.calls
            for event in call.events
            if event.kind == "pitfall" and event.detail.get("kind") == kind
        ]

    @property
    def sent_total(self) -> int:
        return self.calls[-1].sent_total if self.calls else 0

    @property
    def compactions(self) -> int:
        """Calls where compaction changed the history."""
        return sum(1 for call in self.calls if call.compaction is not None and call.compaction.changed)

    @property
    def futile_compactions(self) -> int:
        """Calls above the line where the strategy found nothing it may cut."""
        return sum(1 for call in self.calls if call.compaction is not None and not call.compaction.changed)

    @property
    def overflow_calls(self) -> list[int]:
        return [call.number for call in self.calls if call.overflow]

    @property
    def overflows(self) -> int:
        return len(self.overflow_calls)

    @property
    def no_room_calls(self) -> list[int]:
        """Calls whose request fits the window but leaves the reply no room."""
        return [call.number for call in self.calls if call.no_room_for_reply]

    @property
    def summarizer_input(self) -> int:
        return sum(call.compaction.summarizer_input for call in self.calls if call.compaction is not None)

    @property
    def summarizer_output(self) -> int:
        return self.calls[-1].summarizer_output_total if self.calls else 0

    @property
    def cached_total(self) -> int:
        return sum(hit.cached for hit in self.hits)

    @property
    def written_total(self) -> int:
        return sum(hit.written for hit in self.hits)

    @property
    def authored_lost(self) -> list[FactFate]:
        """The critical facts the lesson's author wrote that a call needed and did not have."""
        return [fate for fate in self.facts if fate.lost]

    @property
    def references_lost(self) -> list[ReferenceFate]:
        """The values the agent used again at a call whose request no longer held them."""
        return [fate for fate in self.references if fate.lost]

    @property
    def facts_lost(self) -> list[FactFate | ReferenceFate]:
        """Every fact lost: the authored ones, then the values the agent used again (each has
        `fact` and `lost_from`)."""
        return [*self.authored_lost, *self.references_lost]

    @property
    def compactions_never_repaid(self) -> int:
        """Compactions whose cache cost the session ends before their savings cover."""
        return sum(1 for cost in self.costs.values() if not cost.repaid)

    @property
    def valid_requests(self) -> bool:
        return not self.invalid

    @property
    def peak_tokens(self) -> int:
        return max((call.tokens for call in self.calls), default=0)

    @property
    def sound(self) -> bool:
        """Keeps every critical fact while it is needed (and every value the agent used again), never overflows, always leaves the
        reply room, and sends only requests an API accepts."""
        return not self.facts_lost and not self.overflows and not self.no_room_calls and self.valid_requests

    @property
    def recommendable(self) -> bool:
        """Sound on this chat, and sound by design: it never separates a tool call from its
        results, so being valid here was not luck."""
        return self.sound and not STRATEGIES[self.strategy].breaks_pairs and not self.product_refuses

    @property
    def product_refuses(self) -> bool:
        """A harness whose product would not run at this line: it refuses the trigger (Anthropic
        under 50,000 tokens), or its own trigger is beyond the window, so the provider refuses
        the request first (engine/pitfalls.py)."""
        return any(message in REFUSED_LINES for message, _ in self.result.notices)

    def sends_same_as(self, other: Column) -> bool:
        """Identical requests on every call (and so identical figures)."""
        return len(self.calls) == len(other.calls) and all(
            a.tokens == b.tokens and a.blocks == b.blocks for a, b in zip(self.calls, other.calls)
        )


@dataclass
class Verdict:
    """The cheapest recommendable strategy, and what the others got wrong, as data;
    `verdict_notices` turns it into sentences."""

    winner: str | None  # column key; None when no strategy is recommendable
    ties: list[str]  # other recommendable columns that send exactly the same requests
    fewest_tokens: str | None  # the recommendable column with the smallest SENT, if not the winner
    faults: dict[str, list[tuple[str, dict]]]  # column key -> [(kind, details)]


def judge(columns: list[Column]) -> Verdict:
    """The cheapest recommendable column, the ones that send the same requests, and each
    column's faults (or, for a recommendable one, what it costs more)."""
    faults: dict[str, list[tuple[str, dict]]] = {}
    for column in columns:
        found = []
        if column.overflows:
            found.append(("overflow", {"count": column.overflows, "first": column.overflow_calls[0]}))
        if column.no_room_calls:
            found.append(("no_room", {"count": len(column.no_room_calls), "first": column.no_room_calls[0]}))
        for fate in column.authored_lost:
            found.append(("lost", {"label": fate.fact.label or fate.fact.text, "call": fate.lost_from}))
        if column.references_lost:
            first = min(column.references_lost, key=lambda fate: fate.lost_from)
            found.append(
                ("reference", {"count": len(column.references_lost), "value": first.reference.value, "call": first.lost_from, "source": first.reference.source_call})
            )
        if column.invalid:
            found.append(("invalid", {"count": len(column.invalid), "first": min(column.invalid)}))
        if column.product_refuses:
            found.append(("refused_line", {}))
        elif column.sound and not column.recommendable:
            found.append(("by_luck", {}))
        if found:
            faults[column.key] = found
    candidates = [column for column in columns if column.recommendable]
    if not candidates:
        return Verdict(None, [], None, faults)
    # Registry order breaks ties, so the simpler strategy wins an equal bill.
    winner = min(candidates, key=lambda column: round(column.bill.cost, 9))
    ties = [column.key for column in candidates if column is not winner and column.sends_same_as(winner)]
    fewest = min(candidates, key=lambda column: column.sent_total)
    for column in candidates:
        if column is winner or column.key in ties:
            continue
        extra = {"cost": column.bill.cost - winner.bill.cost, "sent": column.sent_total - winner.sent_total}
        if column.summarizer_input:
            extra["summarizer"] = column.summarizer_input + column.summarizer_output
        faults[column.key] = [("dearer", extra)]
    fewest_key = fewest.key if fewest.sent_total < winner.sent_total else None
    return Verdict(winner.key, ties, fewest_key, faults)


def column_key(strategy: str, keep_facts: bool) -> str:
    return f"{strategy}+facts" if keep_facts else strategy


def variants(settings: Settings, base: Settings | None = None, fixed: Collection[str] = ()) -> list[Settings]:
    """The settings of every column: what `settings` sets by hand over `base` (the scenario's
    own) and the fields named in `fixed`, with each strategy, from where that strategy starts
    (a harness at its product's defaults); each textbook strategy that summarizes once more
    with keep facts."""
    base = base or settings
    out = []
    for name, strategy in STRATEGIES.items():
        column = with_strategy(settings, base, name, fixed)
        out.append(column.model_copy(update={"keep_facts": False}))
        if strategy.summarizes and not strategy.harness:
            out.append(column.model_copy(update={"keep_facts": True}))
    return out


@dataclass
class Comparison:
    scenario: Scenario
    settings: Settings
    pricing: Pricing
    columns: list[Column]
    # Columns whose summarizer failed, with why (for the log): the others still compare.
    unavailable: dict[str, str] = field(default_factory=dict)
    # What the harness really sent, when the session recorded it: shown apart, never judged.
    recorded: AsRecorded | None = None
    verdict: Verdict = field(init=False)

    def __post_init__(self) -> None:
        self.verdict = judge(self.columns)

    @property
    def call_count(self) -> int:
        return len(self.columns[0].calls) if self.columns else 0

    def column(self, key: str) -> Column | None:
        return next((column for column in self.columns if column.key == key), None)


@without_collection
def compare(
    scenario: Scenario,
    settings: Settings | None = None,
    pricing: Pricing | None = None,
    run: Callable[[Scenario, Settings], Replay] = replay,
    keys: MessageKeys | None = None,
    fixed: Collection[str] = (),
) -> Comparison:
    """Replay every variant of `settings` once (through `run`, which may be a cache) and
    gather the figures of each; `keys` may be shared with other comparisons of the chat.
    The fields named in `fixed` count as set by hand: every harness runs with them too."""
    settings = settings or scenario.settings
    pricing = pricing or session_basis(scenario).pricing
    keys = keys or MessageKeys()
    columns = []
    unavailable = {}
    for variant in variants(settings, scenario.settings, fixed):
        spend()
        try:
            result = run(scenario, variant)
        except SummarizerError as error:
            unavailable[column_key(variant.strategy, variant.keep_facts)] = str(error)
            continue
        hits = replay_hits(result, pricing, keys)
        invalid = {call.number: list(call.problems) for call in result.calls if call.problems}
        last = result.calls[-1] if result.calls else None
        columns.append(
            Column(
                key=column_key(variant.strategy, variant.keep_facts),
                settings=variant,
                result=result,
                hits=hits,
                invalid=invalid,
                facts=fact_fates(scenario.facts, result.calls),
                bill=bill(
                    pricing,
                    sent=last.sent_total if last else 0,
                    cached=sum(hit.cached for hit in hits),
                    written=sum(hit.written for hit in hits),
                    output=last.summarizer_output_total if last else 0,
                ),
                references=replay_reference_fates(result),
                costs=compaction_costs(result, hits, pricing),
            )
        )
    return Comparison(scenario, settings, pricing, columns, unavailable, as_recorded(scenario, settings.real_window, pricing))


def fact_fates(facts: list[Fact], calls: list[Call]) -> list[FactFate]:
    fates = []
    for index, fact in enumerate(facts):
        statuses = [call.facts[index] for call in calls]
        lost = next((call.number for call, status in zip(calls, statuses) if status.missing_when_needed), None)
        fates.append(FactFate(fact, tuple(status.present for status in statuses), lost, tuple(status.lost_from for status in statuses)))
    return fates


def check_call(comparison: Comparison, call: int | None) -> int:
    """The call to show: the given one if it exists, else the last. Raises SettingsError."""
    if call is None:
        return comparison.call_count
    if not 1 <= call <= comparison.call_count:
        raise SettingsError([f"call: got {call!r}, expected a whole number from 1 to {comparison.call_count}"])
    return call
