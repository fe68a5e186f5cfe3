"""Every strategy on the same chat, side by side: the bill, the facts kept, the overflows, and
what prompt caching does to the bill.

One replay per strategy (and one more with "keep facts" for each strategy that summarizes);
every figure below is read from those replays, never recomputed by another route, so the
comparison always agrees with the engine.

Prompt caching
--------------
Providers bill the part of a request that repeats the start of an earlier request at a
discount. Two documented models are offered:

- ``openai`` — automatic caching, as described in "Prompt Caching in the API"
  (https://openai.com/index/api-prompt-caching/) and the guide
  (https://platform.openai.com/docs/guides/prompt-caching): prompts of 1,024 tokens or more;
  the longest previously computed prefix is cached, "starting at 1,024 tokens and increasing
  in 128-token increments". Cached input was billed at half price at launch (gpt-4o: $2.50
  uncached, $1.25 cached per million tokens), hence the default share of 0.5. Writing to the
  cache costs nothing extra.
- ``anthropic`` — explicit breakpoints (``cache_control``), as described in
  https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching. The model here puts
  two breakpoints on every request, the common choice for an agent loop: one after the system
  prompt and tools, one on the last message. A request reads from the cache the longest
  prefix that ends where an earlier request put a breakpoint, if it is identical and at least
  1,024 tokens long (the minimum for Claude Sonnet and Opus); the lookup reaches back 20
  blocks from the last breakpoint. Cache reads cost 0.1x the base input price (the default
  share), and the tokens written to the cache past the part read cost 1.25x (5-minute cache).

Both models assume every call comes within the cache's lifetime (minutes), as in an agent's
loop; a request above the window is treated like the others (a real API would reject it; the
verdict rules out any strategy that overflows anyway).

How a prefix is measured: at message granularity. Every request starts with the floor (the
system prompt and the tool definitions, identical on every call), then the history's
messages in order. The cached prefix is the floor plus the longest run of leading messages
that are identical, in content and order, to the start of an earlier request of the same
strategy; its tokens are the floor's plus those messages' own token counts from the replay
(no re-encoding). A real provider compares tokens, so it may also match a few tokens into
the first message that differs (its role header, a common start of its text): these figures
can be a few tokens low, never high.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Callable, Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .budget import spend
from .history import Block
from .remote_summarizer import SummarizerError
from .replay import Call, Replay, replay
from .scenarios import Fact, Scenario
from .settings import STRATEGIES, Settings, SettingsError
from .strategies import BREAKS_TOOL_PAIRS, LEVELS, summarize_level
from .tokens import Counter, get_counter

# --- Prompt-cache models ---------------------------------------------------------------------


@dataclass(frozen=True)
class CacheModel:
    name: str
    label: str
    source: str
    minimum: int  # a prefix shorter than this is never cached
    step: int  # cached tokens are a multiple of this
    cached_share: float  # default price of a cached token, as a share of the full price
    write_share: float  # price of a token written to the cache, as a share of the full price
    breakpoints: bool  # True: only prefixes ending at an earlier breakpoint can be read
    lookback: int = 0  # how many messages before the last breakpoint a hit may end


CACHE_MODELS: dict[str, CacheModel] = {
    "openai": CacheModel(
        name="openai",
        label="OpenAI automatic caching",
        source="https://platform.openai.com/docs/guides/prompt-caching",
        minimum=1024,
        step=128,
        cached_share=0.5,
        write_share=1.0,
        breakpoints=False,
    ),
    "anthropic": CacheModel(
        name="anthropic",
        label="Anthropic cache breakpoints",
        source="https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching",
        minimum=1024,
        step=1,
        cached_share=0.1,
        write_share=1.25,
        breakpoints=True,
        lookback=20,
    ),
}


@dataclass(frozen=True)
class CacheHit:
    """The cache's effect on one request: tokens read from it, and tokens written to it that
    are billed at the write price (zero when writing is free)."""

    cached: int
    written: int
    prefix_messages: int  # history messages in the cached prefix, after the floor; -1: none


def cache_hits(
    requests: Sequence[Sequence[Block]],
    floor_units: int,
    counter: Counter,
    model: CacheModel,
    keys: MessageKeys | None = None,
) -> list[CacheHit]:
    """The cache hits of a series of requests sent in order, each the floor then its blocks.

    A trie of message keys holds every prefix sent so far. A request usually repeats the
    previous one's blocks (the very same objects) and appends a few: that shared run is found
    by tuple comparisons done in C, and only the rest is walked through the trie.
    """
    keys = keys or MessageKeys()
    trie: dict[int, int] = {}  # (node << 32 | message key) -> child node
    written: set[int] = set()  # trie nodes where an earlier request put a breakpoint
    # The previous request, and its path: node and units after 0..n messages. Tokens are
    # computed only where a hit or a breakpoint is decided.
    previous: tuple[Block, ...] = ()
    nodes, units = [0], [floor_units]
    hits = []
    for index, request in enumerate(requests):
        blocks = tuple(request)
        shared = _common_prefix(previous, blocks) if index > 0 else 0
        del nodes[shared + 1 :], units[shared + 1 :]
        matched = shared if index > 0 else -1  # the floor repeats from the second request on
        for position in range(shared, len(blocks)):
            block = blocks[position]
            edge = nodes[-1] << 32 | keys.of(block)
            node = trie.get(edge)
            if node is None:
                node = trie[edge] = len(trie) + 1
            elif matched == position:
                matched = position + 1
            nodes.append(node)
            units.append(units[-1] + block.units)
        previous = blocks
        if model.breakpoints:
            hit = _breakpoint_hit(model, nodes, units, counter, written, matched)
            tail = _prefix_tokens(counter, units[-1])
            write = max(0, tail - hit.cached) if tail >= model.minimum else 0
            hit = CacheHit(hit.cached, write, hit.prefix_messages)
            for depth in (0, len(nodes) - 1):
                if _prefix_tokens(counter, units[depth]) >= model.minimum:
                    written.add(nodes[depth])
        else:
            prefix = _prefix_tokens(counter, units[matched]) if matched >= 0 else 0
            cached = prefix // model.step * model.step if prefix >= model.minimum else 0
            hit = CacheHit(cached, 0, matched)
        hits.append(hit)
    return hits


def _common_prefix(a: tuple[Block, ...], b: tuple[Block, ...]) -> int:
    """Length of the longest common prefix of two requests, by tuple comparisons done in C
    (the same object compares equal without looking inside)."""
    if len(a) <= len(b) and b[: len(a)] == a:
        return len(a)  # the usual case: the previous request, then new messages
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _breakpoint_hit(
    model: CacheModel, nodes: list[int], units: list[int], counter: Counter, written: set[int], matched: int
) -> CacheHit:
    """The deepest prefix shared with an earlier request that ends at an earlier breakpoint
    and that the lookup reaches: the floor's breakpoint, or within `lookback` messages of
    the last one."""
    last = len(nodes) - 1
    for depth in [*range(matched, max(0, last - model.lookback) - 1, -1), 0] if matched >= 0 else ():
        if depth <= matched and nodes[depth] in written:
            return CacheHit(_prefix_tokens(counter, units[depth]), 0, depth)
    return CacheHit(0, 0, -1)


def _prefix_tokens(counter: Counter, units: int) -> int:
    """Tokens of a request's prefix: its parts' tokens, without the reply's priming, rounded
    down so that a prefix never counts more than the request."""
    return math.floor(counter.block_tokens(units))


class MessageKeys:
    """A small integer per distinct message, so prefixes compare by integers. A message is
    keyed by its fields as a tuple (strings keep their hash once computed, so a long tool
    result is hashed once); only nested values (tool calls, content parts) are serialized."""

    def __init__(self) -> None:
        self.keys: dict[tuple, int] = {}
        # By object too: a message is walked again after each compaction, and by every
        # strategy (their blocks share the script's message objects). The message is kept
        # with its key, so its id cannot be reused by another object meanwhile.
        self.by_object: dict[int, tuple[dict, int]] = {}

    def of(self, block: Block) -> int:
        known = self.by_object.get(id(block.message))
        if known is not None:
            return known[1]
        fields = tuple(
            sorted(
                (name, value if isinstance(value, (str, int, float, bool, type(None))) else json.dumps(value, sort_keys=True))
                for name, value in block.message.items()
            )
        )
        key = self.by_object[id(block.message)] = (block.message, self.keys.setdefault(fields, len(self.keys)))
        return key[1]


# --- Pricing ---------------------------------------------------------------------------------


class Pricing(BaseModel):
    """How the bill is computed. Defaults: gpt-4o's launch prices for prompt caching
    (https://openai.com/index/api-prompt-caching/): $2.50 per million input tokens, $10.00 per
    million output tokens (the summarizer's replies)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cache: Literal["openai", "anthropic"] = Field("openai", description="the prompt-cache model")
    price: float = Field(2.5, ge=0, le=1000, description="US dollars per million input tokens")
    cached_share: float | None = Field(
        None, ge=0, le=1, description="price of a cached token as a share of the full price (default: the cache model's)"
    )
    output_price: float = Field(10.0, ge=0, le=1000, description="US dollars per million output tokens")

    @property
    def model(self) -> CacheModel:
        return CACHE_MODELS[self.cache]

    @property
    def share(self) -> float:
        return self.model.cached_share if self.cached_share is None else self.cached_share


PRICING_ACCEPTS = {
    "cache": "one of " + ", ".join(CACHE_MODELS),
    "price": "a number from 0 to 1000 (US dollars per million input tokens)",
    "cached_share": "a number from 0 to 1 (0.1 bills a cached token at 10%)",
    "output_price": "a number from 0 to 1000 (US dollars per million output tokens)",
}


def parse_pricing(values: dict[str, object]) -> Pricing:
    """Pricing from loose values (query strings, CLI flags); empty values take the default.
    Raises SettingsError naming each bad field, what it got and what it accepts."""
    unknown = sorted(set(values) - set(PRICING_ACCEPTS))
    if unknown:
        raise SettingsError([f"unknown pricing setting {name!r}; accepted: {', '.join(PRICING_ACCEPTS)}" for name in unknown])
    given = {name: value for name, value in values.items() if value not in (None, "")}
    try:
        return Pricing(**given)
    except ValidationError as error:
        problems, bad = [], []
        for item in error.errors():
            name = str(item["loc"][0]) if item["loc"] else "pricing"
            problems.append(f"{name}: got {item.get('input')!r}, expected {PRICING_ACCEPTS.get(name, item['msg'])}")
            if name in PRICING_ACCEPTS:
                bad.append((name, item.get("input")))
        raise SettingsError(problems, bad if len(bad) == len(problems) else None) from None


@dataclass(frozen=True)
class Bill:
    """Tokens by how they are billed, and their cost in US dollars."""

    uncached: int  # input tokens at the full price (includes the summarizer's input)
    cached: int  # input tokens read from the cache
    written: int  # input tokens written to the cache at the write price
    output: int  # the summarizer's output tokens
    cost: float


def bill(pricing: Pricing, sent: int, cached: int, written: int, output: int) -> Bill:
    uncached = sent - cached - written
    cost = (
        pricing.price * (uncached + cached * pricing.share + written * pricing.model.write_share)
        + pricing.output_price * output
    ) / 1_000_000
    return Bill(uncached, cached, written, output, cost)


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
        return self.sound and self.strategy not in BREAKS_TOOL_PAIRS

    def sends_same_as(self, other: Column) -> bool:
        """Identical requests on every call (and so identical figures)."""
        return len(self.calls) == len(other.calls) and all(
            a.tokens == b.tokens and a.blocks == b.blocks for a, b in zip(self.calls, other.calls)
        )


def column_key(strategy: str, keep_facts: bool) -> str:
    return f"{strategy}+facts" if keep_facts else strategy


def summarizes(strategy: str) -> bool:
    """Whether the strategy calls the summarizer, so keep facts changes what it does."""
    return summarize_level in LEVELS.get(strategy, ())


def variants(settings: Settings) -> list[Settings]:
    """The settings of every column: each registered strategy, and each one that summarizes
    once more with keep facts; window, line, keep and counter as given."""
    out = []
    for name in STRATEGIES:
        out.append(settings.model_copy(update={"strategy": name, "keep_facts": False}))
        if summarizes(name):
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
    counter = get_counter(settings.counter)
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
        hits = cache_hits([call.blocks for call in result.calls], result.floor_units, counter, pricing.model, keys)
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


def _grouped(number: int) -> str:
    return f"{number:,}"


def _dollars(amount: float) -> str:
    return f"${amount:.4f}"


def describe(
    comparison: Comparison,
    _: Callable[[str], str] = lambda text: text,
    number: Callable[[int], str] = _grouped,
    money: Callable[[float], str] = _dollars,
) -> list[str]:
    """The verdict in sentences, through the given gettext, number and money formats, so the
    web can speak the reader's language."""
    verdict = comparison.verdict
    lines = []
    if verdict.winner is None:
        lines.append(
            _("No strategy is safe at these settings: each one overflows, loses a critical fact, leaves the reply no room or sends a request an API would refuse.")
        )
    else:
        winner = comparison.column(verdict.winner)
        text = _("Cheapest safe choice: %(name)s, %(cost)s for %(sent)s tokens sent (%(cached)s from the cache).") % {
            "name": label(winner, _),
            "cost": money(winner.bill.cost),
            "sent": number(winner.sent_total),
            "cached": number(winner.cached_total),
        }
        if verdict.ties:
            text += " " + _("Same requests, same bill: %(names)s.") % {
                "names": ", ".join(label(comparison.column(key), _) for key in verdict.ties)
            }
        lines.append(text)
        if verdict.fewest_tokens:
            fewest = comparison.column(verdict.fewest_tokens)
            values = {"name": label(fewest, _), "sent": number(fewest.sent_total), "cached": number(fewest.cached_total)}
            if fewest.cached_total < winner.cached_total:
                text = _("%(name)s sends fewer tokens (%(sent)s) but costs more: its compactions rewrote the start of its requests, so only %(cached)s came from the cache.")
            else:
                text = _("%(name)s sends fewer tokens (%(sent)s) but costs more: its summaries are billed as output.")
            lines.append(text % values)
    for column in comparison.columns:
        for kind, details in verdict.faults.get(column.key, []):
            lines.append(fault_sentence(label(column, _), kind, details, _, number, money))
    return lines


def fault_sentence(
    name: str,
    kind: str,
    details: dict,
    _: Callable[[str], str] = lambda text: text,
    number: Callable[[int], str] = _grouped,
    money: Callable[[float], str] = _dollars,
) -> str:
    values = {"name": name, **details}
    if kind == "overflow":
        return _("%(name)s overflows the window from call %(first)s (overflowing calls: %(count)s).") % values
    if kind == "by_luck":
        return _("%(name)s stayed valid on this chat by luck: it may separate a tool call from its result, so it is never the advice.") % values
    if kind == "no_room":
        return _("%(name)s leaves the reply no room from call %(first)s (such calls: %(count)s).") % values
    if kind == "lost":
        return _("%(name)s loses a critical fact (%(label)s) from call %(call)s, while it is still needed.") % values
    if kind == "invalid":
        return _("%(name)s sends requests an API would refuse from call %(first)s: a tool call separated from its result (refused calls: %(count)s).") % values
    parts = _("%(name)s keeps everything but costs %(cost)s more") % {**values, "cost": money(details["cost"])}
    if "summarizer" in details:
        parts += " " + _("(its summaries cost %(summarizer)s tokens)") % {"summarizer": number(details["summarizer"])}
    return parts + "."


def label(column: Column, _: Callable[[str], str] = lambda text: text) -> str:
    if column.keep_facts:
        return _("%(strategy)s + keep facts") % {"strategy": column.strategy}
    return column.strategy


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
            "text": describe(comparison),
        },
    }
