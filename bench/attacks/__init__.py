"""The attacks that bench/attack.py runs, one module each, registered here by name.

An attack module holds one or more `Attack` records; each one starts the server it needs,
puts its load on it while a probe asks for the home page (bench/attacks/probe.py
`under_load`), and returns its rows. The entry point prints every row the same way: the home
page's p99 under the attack ÷ its idle p99 (goal: at most 5x) and the count of 5xx answers.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

GOAL = 5.0  # the home page's p99 under any attack, as a multiple of its idle p99 (issues 14, 26)


@dataclass(frozen=True)
class Row:
    """One measured attack: the home page's p99 idle and under the load, and the 5xx answers
    that anyone got (the probe or the attackers). `note` says what else the attack saw."""

    attack: str
    idle_p99: float
    attack_p99: float
    server_errors: int
    note: str = ""

    @property
    def ratio(self) -> float:
        return self.attack_p99 / self.idle_p99 if self.idle_p99 else float("inf")

    @property
    def met(self) -> bool:
        return self.ratio <= GOAL and self.server_errors == 0


@dataclass(frozen=True)
class Attack:
    name: str
    summary: str
    run: Callable[[argparse.Namespace], list[Row]]


def registry() -> dict[str, Attack]:
    """Every attack by name, in the order they run. Imported here, not at the top, so that
    `--list` and `--help` answer without loading the app."""
    from bench.attacks import cost, pins, recycling, slow, store

    attacks = [*cost.ATTACKS, *pins.ATTACKS, *slow.ATTACKS, *recycling.ATTACKS, *store.ATTACKS]
    return {attack.name: attack for attack in attacks}
