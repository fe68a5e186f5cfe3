"""Every strategy on the same chat, side by side: the bill, the facts kept, the overflows, and
what prompt caching does to the bill.

One replay per strategy (and one more with "keep facts" for each strategy that summarizes);
every figure below is read from those replays, never recomputed by another route, so the
comparison always agrees with the engine.

Prompt caching is modelled in `cache.py` and the bill's prices in `pricing.py`. The verdict is
data; its sentences are catalog messages and values that each reader words (`english` below,
the web in the reader's language).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..time_budget import spend
from .cache import CacheHit, MessageKeys
from ..i18n import N_
from .metrics import replay_hits
from .pricing import Bill, Pricing, bill
from ..engine.remote_summarizer import SummarizerError
from ..engine.replay import replay
from ..engine.calls import Call, Replay
from ..model import Fact, Scenario
from ..settings import Settings, SettingsError
from ..strategy_catalog import STRATEGIES


# --- The comparison --------------------------------------------------------------------------


@dataclass(frozen=True)
class FactFate:
    fact: Fact
    present: tuple[bool, ...]  # at each call, from call 1
    lost_from: int | None  # the first call that needed it and did not have it

    @property
    def lost(self) -> bool:
        return self.lost_from is not None


@dataclass
class Column:
    """One strategy (with its keep-facts choice) replayed on the scenario."""

    key: str
    settings: Settings
    result: Replay
    hits: list[CacheHit]
    invalid: dict[int, list[str]]  # call number -> why an API would refuse its request
    facts: list[FactFate]
    bill: Bill

    @property
    def strategy(self) -> str:
        return self.settings.strategy

    @property
    def keep_facts(self) -> bool:
        return self.settings.keep_facts

    @property
    def calls(self) -> list[Call]:
        return self.result.calls

    def call(self, number: int) -> Call:
        return self.result.calls[number - 1]

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
    def facts_lost(self) -> list[FactFate]:
        return [fate for fate in self.facts if fate.lost]

    @property
    def valid_requests(self) -> bool:
        return not self.invalid

    @property
    def peak_tokens(self) -> int:
        return max((call.tokens for call in self.calls), default=0)

    @property
    def sound(self) -> bool:
        """Keeps every critical fact while it is needed, never overflows, always leaves the
        reply room, and sends only requests an API accepts."""
        return not self.facts_lost and not self.overflows and not self.no_room_calls and self.valid_requests

    @property
    def recommendable(self) -> bool:
        """Sound on this chat, and sound by design: it never separates a tool call from its
        results, so being valid here was not luck."""
        return self.sound and not STRATEGIES[self.strategy].breaks_pairs

    def sends_same_as(self, other: Column) -> bool:
        """Identical requests on every call (and so identical figures)."""
        return len(self.calls) == len(other.calls) and all(
            a.tokens == b.tokens and a.blocks == b.blocks for a, b in zip(self.calls, other.calls)
        )


def column_key(strategy: str, keep_facts: bool) -> str:
    return f"{strategy}+facts" if keep_facts else strategy


def variants(settings: Settings) -> list[Settings]:
    """The settings of every column: each registered strategy, and each one that summarizes
    once more with keep facts; window, line, keep and counter as given."""
    out = []
    for name in STRATEGIES:
        out.append(settings.model_copy(update={"strategy": name, "keep_facts": False}))
        if STRATEGIES[name].summarizes:
            out.append(settings.model_copy(update={"strategy": name, "keep_facts": True}))
    return out


@dataclass
class Verdict:
    """The cheapest recommendable strategy, and what the others got wrong, as data; `describe`
    turns it into sentences."""

    winner: str | None  # column key; None when no strategy is recommendable
    ties: list[str]  # other recommendable columns that send exactly the same requests
    fewest_tokens: str | None  # the recommendable column with the smallest SENT, if not the winner
    faults: dict[str, list[tuple[str, dict]]]  # column key -> [(kind, details)]


@dataclass
class Comparison:
    scenario: Scenario
    settings: Settings
    pricing: Pricing
    columns: list[Column]
    # Columns whose summarizer failed, with why (for the log): the others still compare.
    unavailable: dict[str, str] = field(default_factory=dict)
    verdict: Verdict = field(init=False)

    def __post_init__(self) -> None:
        self.verdict = judge(self.columns)

    @property
    def call_count(self) -> int:
        return len(self.columns[0].calls) if self.columns else 0

    def column(self, key: str) -> Column | None:
        return next((column for column in self.columns if column.key == key), None)


def compare(
    scenario: Scenario,
    settings: Settings | None = None,
    pricing: Pricing | None = None,
    run: Callable[[Scenario, Settings], Replay] = replay,
) -> Comparison:
    """Replay every variant of `settings` once (through `run`, which may be a cache) and
    gather the figures of each."""
    settings = settings or scenario.settings
    pricing = pricing or Pricing()
    keys = MessageKeys()
    columns = []
    unavailable = {}
    for variant in variants(settings):
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
            )
        )
    return Comparison(scenario, settings, pricing, columns, unavailable)


def fact_fates(facts: list[Fact], calls: list[Call]) -> list[FactFate]:
    fates = []
    for index, fact in enumerate(facts):
        statuses = [call.facts[index] for call in calls]
        lost = next((call.number for call, status in zip(calls, statuses) if status.missing_when_needed), None)
        fates.append(FactFate(fact, tuple(status.present for status in statuses), lost))
    return fates


def judge(columns: list[Column]) -> Verdict:
    faults: dict[str, list[tuple[str, dict]]] = {}
    for column in columns:
        found = []
        if column.overflows:
            found.append(("overflow", {"count": column.overflows, "first": column.overflow_calls[0]}))
        if column.no_room_calls:
            found.append(("no_room", {"count": len(column.no_room_calls), "first": column.no_room_calls[0]}))
        for fate in column.facts_lost:
            found.append(("lost", {"label": fate.fact.label or fate.fact.text, "call": fate.lost_from}))
        if column.invalid:
            found.append(("invalid", {"count": len(column.invalid), "first": min(column.invalid)}))
        if column.sound and not column.recommendable:
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


# --- The verdict in words -------------------------------------------------------------------
# Sentences are catalog messages and their values, as the replay's notices are: `english` says
# them for the command line and the JSON twin, the web in the reader's language.


@dataclass(frozen=True)
class Name:
    """A column named in a sentence; each reader words it ("+ keep facts" is translated)."""

    strategy: str
    keep_facts: bool


class Dollars(float):
    """An amount in US dollars, said as money in the reader's format."""


Notice = tuple[str, dict[str, object]]  # a catalog message and its values


def name_of(column: Column) -> Name:
    return Name(column.strategy, column.keep_facts)


def verdict_notices(comparison: Comparison) -> list[list[Notice]]:
    """The verdict as lines, each a few notices said one after the other: the winner (or that
    there is none), why the one that sends fewer tokens costs more, then each column's faults."""
    verdict = comparison.verdict
    lines: list[list[Notice]] = []
    if verdict.winner is None:
        lines.append([(
            N_("No strategy is safe at these settings: each one overflows, loses a critical fact, leaves the reply no room or sends a request an API would refuse."),
            {},
        )])
    else:
        winner = comparison.column(verdict.winner)
        line: list[Notice] = [(
            N_("Cheapest safe choice: %(name)s, %(cost)s for %(sent)s tokens sent (%(cached)s from the cache)."),
            {"name": name_of(winner), "cost": Dollars(winner.bill.cost), "sent": winner.sent_total, "cached": winner.cached_total},
        )]
        if verdict.ties:
            line.append((N_("Same requests, same bill: %(names)s."), {"names": tuple(name_of(comparison.column(key)) for key in verdict.ties)}))
        lines.append(line)
        if verdict.fewest_tokens:
            fewest = comparison.column(verdict.fewest_tokens)
            values = {"name": name_of(fewest), "sent": fewest.sent_total, "cached": fewest.cached_total}
            if fewest.cached_total < winner.cached_total:
                message = N_("%(name)s sends fewer tokens (%(sent)s) but costs more: its compactions rewrote the start of its requests, so only %(cached)s came from the cache.")
            else:
                message = N_("%(name)s sends fewer tokens (%(sent)s) but costs more: its summaries are billed as output.")
            lines.append([(message, values)])
    for column in comparison.columns:
        for kind, details in verdict.faults.get(column.key, []):
            lines.append([fault_notice(name_of(column), kind, details)])
    return lines


FAULTS = {
    "overflow": N_("%(name)s overflows the window from call %(first)s (overflowing calls: %(count)s)."),
    "by_luck": N_("%(name)s stayed valid on this chat by luck: it may separate a tool call from its result, so it is never the advice."),
    "no_room": N_("%(name)s leaves the reply no room from call %(first)s (such calls: %(count)s)."),
    "lost": N_("%(name)s loses a critical fact (%(label)s) from call %(call)s, while it is still needed."),
    "invalid": N_("%(name)s sends requests an API would refuse from call %(first)s: a tool call separated from its result (refused calls: %(count)s)."),
}


def fault_notice(name: Name, kind: str, details: dict) -> Notice:
    values = {"name": name, **details}
    if kind in FAULTS:
        return FAULTS[kind], values
    values["cost"] = Dollars(details["cost"])
    if "summarizer" in details:
        return N_("%(name)s keeps everything but costs %(cost)s more (its summaries cost %(summarizer)s tokens)."), values
    return N_("%(name)s keeps everything but costs %(cost)s more."), values


def fill(
    values: dict[str, object],
    name: Callable[[Name], str],
    number: Callable[[int], str],
    money: Callable[[float], str],
) -> dict[str, object]:
    """A notice's values as words: names, numbers and money in the reader's format."""
    out: dict[str, object] = {}
    for key, value in values.items():
        if isinstance(value, Name):
            out[key] = name(value)
        elif isinstance(value, tuple):
            out[key] = ", ".join(name(each) for each in value)
        elif isinstance(value, Dollars):
            out[key] = money(value)
        elif isinstance(value, int) and not isinstance(value, bool):
            out[key] = number(value)
        else:
            out[key] = value
    return out


def english(lines: list[list[Notice]]) -> list[str]:
    """Notices as English sentences, one per line, for the command line and the JSON twin."""
    return [
        " ".join(message % fill(values, label_of, "{:,}".format, "${:.4f}".format) for message, values in line)
        for line in lines
    ]


def label_of(name: Name) -> str:
    return f"{name.strategy} + keep facts" if name.keep_facts else name.strategy


def label(column: Column) -> str:
    """A column's English name, as the chart and the command line show it."""
    return label_of(name_of(column))


# --- Plain data, for the CLI, the JSON twin and the CSV download ------------------------------


def check_call(comparison: Comparison, call: int | None) -> int:
    """The call to show: the given one if it exists, else the last. Raises SettingsError."""
    if call is None:
        return comparison.call_count
    if not 1 <= call <= comparison.call_count:
        raise SettingsError([f"call: got {call!r}, expected a whole number from 1 to {comparison.call_count}"])
    return call


def summary_row(column: Column, call: int) -> dict[str, object]:
    """One strategy's figures as flat values (one CSV row), at `call` and for the whole chat."""
    at = column.call(call)
    hit = column.hits[call - 1]
    return {
        "strategy": column.strategy,
        "keep_facts": column.keep_facts,
        "call": call,
        "tokens_at_call": at.tokens,
        "sent_at_call": at.sent_total,
        "cached_at_call": hit.cached,
        "sent_total": column.sent_total,
        "cached_total": column.cached_total,
        "written_total": column.written_total,
        "uncached_total": column.bill.uncached,
        "bill_usd": round(column.bill.cost, 6),
        "compactions": column.compactions,
        "futile_compactions": column.futile_compactions,
        "overflows": column.overflows,
        "no_room_for_reply": len(column.no_room_calls),
        "peak_tokens": column.peak_tokens,
        "summarizer_input": column.summarizer_input,
        "summarizer_output": column.summarizer_output,
        "cleared_tokens": sum(call.compaction.cleared_tokens for call in column.calls if call.compaction),
        "facts_lost": "; ".join(f"{fate.fact.label or fate.fact.text} from call {fate.lost_from}" for fate in column.facts_lost),
        "valid_requests": column.valid_requests,
    }


def comparison_json(comparison: Comparison, call: int | None = None) -> dict[str, object]:
    call = check_call(comparison, call)
    pricing = comparison.pricing
    strategies = []
    for column in comparison.columns:
        row = summary_row(column, call)
        row.update(
            key=column.key,
            facts_lost=[
                {"label": fate.fact.label, "text": fate.fact.text, "lost_from": fate.lost_from} for fate in column.facts_lost
            ],
            facts=[
                {
                    "label": fate.fact.label,
                    "text": fate.fact.text,
                    "needed_from_call": fate.fact.needed_from_call,
                    "present_at_call": fate.present[call - 1],
                    "lost_from": fate.lost_from,
                }
                for fate in column.facts
            ],
            overflow_calls=column.overflow_calls,
            invalid_calls={str(number): problems for number, problems in column.invalid.items()},
            calls=[
                {
                    "call": item.number,
                    "tokens": item.tokens,
                    "sent_total": item.sent_total,
                    "cached": hit.cached,
                    "written": hit.written,
                    "compacted": item.compaction is not None and item.compaction.changed,
                    "provider_tokens": item.provider_tokens,
                    "overflow": item.overflow,
                    "no_room_for_reply": item.no_room_for_reply,
                    "valid": item.valid,
                    "facts_present": [fate.present[item.number - 1] for fate in column.facts],
                }
                for item, hit in zip(column.calls, column.hits)
            ],
        )
        strategies.append(row)
    verdict = comparison.verdict
    return {
        "scenario": comparison.scenario.id,
        "title": comparison.scenario.text("title"),
        "settings": comparison.settings.model_dump(exclude={"strategy", "keep_facts"}),
        "real_window": comparison.settings.real_window,
        "pricing": {
            **pricing.model_dump(),
            "cached_share": pricing.share,
            "write_share": pricing.model.write_share,
            "source": pricing.model.source,
        },
        "call": call,
        "call_count": comparison.call_count,
        "strategies": strategies,
        # Columns left out because the summarizer failed (why is in the server's log).
        "unavailable": sorted(comparison.unavailable),
        "verdict": {
            "winner": verdict.winner,
            "ties": verdict.ties,
            "fewest_tokens": verdict.fewest_tokens,
            "text": english(verdict_notices(comparison)),
        },
    }
