"""A comparison's verdict (compare.judge, as data) in words: notices, catalog messages with their
values, as the replay's notices are (`verdict_notices`). `english` says them for the command line and the JSON twin; the web says
them in the reader's language (`fill` gives their values as words).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..i18n import N_
from .compare import Column, Comparison


# --- The verdict in words -------------------------------------------------------------------


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
    """The verdict as lines, each a few notices said one after the other: its head, then each
    column's faults."""
    return verdict_head(comparison) + verdict_faults(comparison)


def verdict_head(comparison: Comparison) -> list[list[Notice]]:
    """The lines a reader reads first: the winner (or that there is none), and why the one
    that sends fewer tokens costs more."""
    verdict = comparison.verdict
    lines: list[list[Notice]] = []
    if verdict.winner is None:
        lines.append([(N_("No strategy is safe at these settings."), {}), *why_none(comparison)])
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
    return lines


def verdict_faults(comparison: Comparison) -> list[list[Notice]]:
    """Each column's faults (or what it costs more), a line each, in the columns' order."""
    faults = comparison.verdict.faults
    return [[fault_notice(name_of(column), kind, details)] for column in comparison.columns for kind, details in faults.get(column.key, [])]


FAULTS = {
    "overflow": N_("%(name)s overflows the window from call %(first)s (overflowing calls: %(count)s)."),
    "by_luck": N_("%(name)s stayed valid on this chat by luck: it may separate a tool call from its result, so it is never the advice."),
    "refused_line": N_(
        "%(name)s cannot run this way: its product refuses this line, or its own trigger is beyond the window, "
        "so the provider would refuse the request before it compacts."
    ),
    "no_room": N_("%(name)s leaves the reply no room from call %(first)s (such calls: %(count)s)."),
    "lost": N_("%(name)s loses a critical fact (%(label)s) from call %(call)s, while it is still needed."),
    "reference": N_(
        "%(name)s loses values the agent used again (%(count)s): first %(value)s, brought in at call %(source)s, "
        "no longer in the request when call %(call)s used it."
    ),
    "invalid": N_("%(name)s sends requests an API would refuse from call %(first)s: a tool call separated from its result (refused calls: %(count)s)."),
}


# Why no strategy is safe: each kind of fault, with the strategies that have it.
FAULT_KINDS = {
    "overflow": N_("Overflowing the window: %(names)s."),
    "no_room": N_("Leaving the reply no room: %(names)s."),
    "lost": N_("Losing a critical fact: %(names)s."),
    "reference": N_("Losing a value the agent used again: %(names)s."),
    "invalid": N_("Sending requests an API would refuse: %(names)s."),
    "by_luck": N_("Valid here by luck only, since it may separate a tool call from its result: %(names)s."),
}


def why_none(comparison: Comparison) -> list[Notice]:
    """Each kind of fault the strategies have, naming the strategies that have it."""
    faults = comparison.verdict.faults
    notices = []
    for kind, message in FAULT_KINDS.items():
        names = tuple(name_of(column) for column in comparison.columns if any(found == kind for found, _ in faults.get(column.key, [])))
        if names:
            notices.append((message, {"names": names}))
    return notices


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
