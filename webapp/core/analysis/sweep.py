"""Every strategy over a range of lines and KEEP values: the bill and the faults at each point,
and the cheapest safe point, to choose an agent's settings rather than try them one by one.

Each point is read from a comparison (`compare.py`) at that line and KEEP: its columns are
the points, so the sweep counts what the comparison counts (the bill, the facts lost, the
invalid requests) and calls a point safe exactly when the verdict may recommend its column
(`Column.recommendable`). The line and KEEP of a point count as set by hand (`SWEPT`), so a
harness runs at the line asked too, not at its product's default; a product that only lowers
its line stays at its default above it, so two lines may give one point.

The many replays share their work (`Replays.sending`, engine/replays.py): one replay per
distinct setting that changes what is sent, each message tokenized once (the token counter's
cache), and each strategy's replay starts from "none"'s at the call where it first acts
(`replay_from`): a strategy that never reaches its line at a point sends what "none" sends,
so that replay is "none"'s. Given the server's `Replays`, the sweep's replays outlive it, so
the same sweep at other prices replays nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..collector import without_collection
from ..engine.replays import Replays
from ..i18n import N_
from ..model import Scenario
from ..settings import Settings, SettingsError, giving_way
from ..engine.strategy_catalog import STRATEGIES
from .cache import MessageKeys
from .compare import Column, Comparison, StrategyChoice, column_key, compare
from .pricing import Pricing
from .provider_prices import session_basis

# The range's defaults and bounds, in percent of the window (the URL's and the CLI's unit).
LINE_FROM, LINE_TO, LINE_STEP = 50, 95, 5
LINE_LOW, LINE_HIGH = 5, 100
STEP_HIGH = 50
MOST_LINES = 20
MOST_KEEPS = 5
KEEP_HIGH = Settings.model_fields["keep"].metadata[1].le


# What the sweep sets at each point: set by hand, so a harness runs at the line asked too.
SWEPT = ("threshold", "keep")


@dataclass(frozen=True)
class SweepRange:
    """Lines from `line_from` to `line_to` percent by `line_step`, at each KEEP of `keeps`
    (empty: half, the same and double the current KEEP)."""

    line_from: int = LINE_FROM
    line_to: int = LINE_TO
    line_step: int = LINE_STEP
    keeps: tuple[int, ...] = ()

    @property
    def lines(self) -> list[float]:
        return [percent / 100 for percent in range(self.line_from, self.line_to + 1, self.line_step)]

    def keep_values(self, settings: Settings) -> list[int]:
        if self.keeps:
            return sorted(set(self.keeps))
        keep = settings.keep
        return sorted({max(1, keep // 2), keep, min(KEEP_HIGH, keep * 2)})


Problem = tuple[str, dict[str, object]]  # a catalog message and its values


def range_problems(values: SweepRange) -> list[Problem]:
    """What is wrong with a range, as catalog messages (the web words them, `check_range`
    in English): each bound, then the number of lines and of KEEP values."""
    problems: list[Problem] = []
    for name, value, low, high in (
        ("line_from", values.line_from, LINE_LOW, LINE_HIGH),
        ("line_to", values.line_to, LINE_LOW, LINE_HIGH),
        ("line_step", values.line_step, 1, STEP_HIGH),
    ):
        if not low <= value <= high:
            problems.append((N_("%(name)s: got %(value)s, expected a whole number from %(low)s to %(high)s"), {"name": name, "value": value, "low": low, "high": high}))
    if problems:
        return problems
    if values.line_from > values.line_to:
        problems.append((N_("line_from (%(low)s) must not be above line_to (%(high)s)"), {"low": values.line_from, "high": values.line_to}))
    elif len(values.lines) > MOST_LINES:
        problems.append((N_("%(count)s lines asked: at most %(most)s; raise line_step or narrow the range"), {"count": len(values.lines), "most": MOST_LINES}))
    if len(values.keeps) > MOST_KEEPS:
        problems.append((N_("keeps: %(count)s values asked, at most %(most)s"), {"count": len(values.keeps), "most": MOST_KEEPS}))
    bad = [keep for keep in values.keeps if not 1 <= keep <= KEEP_HIGH]
    if bad:
        problems.append((N_("keeps: got %(value)s, expected whole numbers from 1 to %(high)s"), {"value": bad[0], "high": KEEP_HIGH}))
    return problems


def check_range(values: SweepRange) -> SweepRange:
    """The range, or SettingsError saying in English what is wrong."""
    problems = range_problems(values)
    if problems:
        raise SettingsError([message % values for message, values in problems])
    return values


def parse_keeps(text: str) -> tuple[int, ...]:
    """KEEP values written as "1,2,4"; ValueError when one is not a whole number."""
    return tuple(int(part) for part in text.split(",") if part.strip())


@dataclass(frozen=True)
class SweepPoint(StrategyChoice):
    """One column of the comparison at one line and KEEP: its figures for the whole chat."""

    key: str
    settings: Settings
    bill: float  # dollars
    sent: int
    cached: int
    compactions: int
    overflows: int
    invalid: int  # requests an API would refuse
    no_room: int  # requests that leave the reply no room
    facts_lost: int
    safe: bool  # the verdict may recommend it (Column.recommendable)

    @property
    def line(self) -> float:
        """The line it really compacts at (a product may lower what was asked)."""
        return self.settings.effective_threshold

    @property
    def keep(self) -> int:
        return self.settings.keep

    @classmethod
    def of(cls, column: Column) -> SweepPoint:
        return cls(
            key=column.key,
            settings=column.settings,
            bill=column.bill.cost,
            sent=column.sent_total,
            cached=column.cached_total,
            compactions=column.compactions,
            overflows=column.overflows,
            invalid=len(column.invalid),
            no_room=len(column.no_room_calls),
            facts_lost=len(column.facts_lost),
            safe=column.recommendable,
        )


@dataclass(frozen=True)
class Recommendation:
    """The cheapest safe point, against the current settings' point."""

    best: SweepPoint | None  # None: no point of the sweep is safe
    current: SweepPoint | None  # None: the current strategy's column is unavailable

    @property
    def saving(self) -> float | None:
        """Dollars the best point saves on the current one (negative: it costs more, since
        the current one is unsafe)."""
        if self.best is None or self.current is None:
            return None
        return self.current.bill - self.best.bill

    @property
    def changes(self) -> dict[str, tuple[object, object]]:
        """The settings that differ between the current point and the best: name -> (now, best)."""
        if self.best is None or self.current is None:
            return {}
        now, best = self.current.settings, self.best.settings
        out: dict[str, tuple[object, object]] = {}
        # A product that draws its own KEEP reads no keep: there is none to change.
        names = ("strategy", "keep_facts", "threshold", "alert", "target") + (() if STRATEGIES[best.strategy].keep_rule else ("keep",))
        for name in names:
            before, after = getattr(now, name), getattr(best, name)
            if name == "threshold":
                before, after = now.effective_threshold, best.effective_threshold
            if before != after:
                out[name] = (before, after)
        return out


@dataclass
class Sweep:
    scenario: Scenario
    settings: Settings
    pricing: Pricing
    span: SweepRange
    lines: list[float]
    keeps: list[int]
    points: list[SweepPoint]  # strategy by strategy in the catalog's order, then KEEP, then line
    current: Comparison
    # The point each line asked gives, by (column, KEEP, line asked): a product that only
    # lowers its line gives the point of its own line at every line above it.
    given: dict[tuple[str, int, float], SweepPoint] = field(default_factory=dict)
    # Columns whose summarizer failed, with why (for the log): the others are still swept.
    unavailable: dict[str, str] = field(default_factory=dict)
    recommendation: Recommendation = field(init=False)

    def __post_init__(self) -> None:
        safe = [point for point in self.points if point.safe]
        # The catalog's order breaks ties, then the higher line (fewer compactions), then the
        # current KEEP, then the larger: an equal bill goes to the simpler, less eager choice.
        keep = self.settings.keep
        best = min(safe, key=lambda p: (round(p.bill, 9), -p.line, p.keep != keep, -p.keep), default=None) if safe else None
        column = self.current.column(column_key(self.settings.strategy, self.settings.keep_facts))
        current = SweepPoint.of(column) if column else None
        if best is not None and current is not None and current.safe and round(current.bill, 9) <= round(best.bill, 9):
            best = current  # nothing to change for the same bill
        self.recommendation = Recommendation(best, current)

    @property
    def keys(self) -> list[str]:
        """The columns swept, in the comparison's order."""
        return list(dict.fromkeys(point.key for point in self.points))

    def at(self, key: str, keep: int, line: float) -> SweepPoint | None:
        """The point of one column at one KEEP when the sweep asked for `line`."""
        return self.given.get((key, keep, round(line, 6)))

    def series(self, key: str, keep: int) -> list[SweepPoint]:
        """One column's points at one KEEP, by line."""
        return sorted((p for p in self.points if p.key == key and p.keep == keep), key=lambda p: p.line)


def runs_lower(point: SweepPoint | None, line: float) -> bool:
    """Whether the point a sweep got when it asked for `line` runs at a lower line, its
    product's own."""
    return point is not None and point.line < line - 1e-9


def point_settings(settings: Settings, line: float, keep: int) -> Settings:
    """`settings` at another line and KEEP; an alert line or a target that would no longer be
    below the line gives way, as it does when a harness starts at its own line."""
    return Settings(**{**settings.model_dump(), "threshold": line, "keep": keep, **giving_way(settings, line)})


@without_collection
def sweep(
    scenario: Scenario, settings: Settings | None = None, pricing: Pricing | None = None, span: SweepRange | None = None, replays: Replays | None = None
) -> Sweep:
    """The comparison at every line and KEEP of `span` (checked: SettingsError), each
    column a point; a point two lines share is kept once. Its replays come from `replays`
    (`sending`), by default a new one with the offline summarizer."""
    settings = settings or scenario.settings
    pricing = pricing or session_basis(scenario).pricing
    span = check_range(span or SweepRange())
    replays = Replays() if replays is None else replays  # (an empty one is falsy: it has a length)
    keys = MessageKeys()  # the messages' cache keys, shared by every comparison of the chat
    keep_values = span.keep_values(settings)
    seen: dict[tuple[str, int, float], SweepPoint] = {}
    given: dict[tuple[str, int, float], SweepPoint] = {}
    unavailable: dict[str, str] = {}
    for keep in keep_values:
        for line in span.lines:
            comparison = compare(scenario, point_settings(settings, line, keep), pricing, run=replays.sending, keys=keys, fixed=SWEPT)
            unavailable.update(comparison.unavailable)
            for column in comparison.columns:
                where = (column.key, keep, round(column.settings.effective_threshold, 6))
                given[(column.key, keep, round(line, 6))] = seen.setdefault(where, SweepPoint.of(column))
    order = {key: index for index, key in enumerate(dict.fromkeys(key for key, _, _ in seen))}
    points = sorted(seen.values(), key=lambda p: (order[p.key], p.keep, p.line))
    current = compare(scenario, settings, pricing, run=replays.sending, keys=keys)
    unavailable.update(current.unavailable)
    replays.settle()
    return Sweep(scenario, settings, pricing, span, span.lines, keep_values, points, current, given, unavailable)
