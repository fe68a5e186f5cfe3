"""Scenarios: a scripted agent chat and the settings it is meant to be played with, and what
every source of one shares.

Two sources give the same `Scenario`: a lesson's TOML file, written by a person (lessons.py),
and a transcript in one of the formats agents log (transcripts.py, formats/).

A scenario is a prefix and a script. The prefix is every message ahead of the first real user
request (system and developer messages, few-shot examples, an opening assistant message): it
is sent ahead of every request, is the floor of the well, and no strategy ever touches it. The
script starts at the first real request; its exchanges are what compaction works on.

Every problem is reported as a `ScenarioError` naming the source, the field path and what is
expected, so one bad file never stops the others from loading.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Any

from ..counting.messages import MAX_NESTING
from ..counting.tokens import Message
from ..model import ScriptMessage


class ScenarioError(ValueError):
    """A scenario that cannot be loaded: where (source, field path) and what is wrong. Its
    text groups the problems said the same way and shows at most SHOWN_PROBLEMS of them."""

    def __init__(self, source: str, problems: list[tuple[str, str]], looks_like: str | None = None):
        self.source = source
        self.problems = problems
        # The label (a catalog message) of the format a refused transcript looks like.
        self.looks_like = looks_like
        groups, rest = problem_groups(problems)
        lines = [
            (f"{len(places)} places ({', '.join(places[:3])}{'…' if len(places) > 3 else ''}): {what}" if len(places) > 1 else f"{places[0]}: {what}" if places[0] else what)
            for what, places in groups
        ]
        lines += [f"and {rest} more problems"] if rest else []
        # No article before the label: it would have to fit each one (an Ollama body, OpenAI chat completions).
        looks = f"format recognised: {looks_like}; it cannot be read: " if looks_like else ""
        super().__init__(f"{source}: {looks}" + "; ".join(lines))


SHOWN_PROBLEMS = 10
QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|\b\d+\b")


def problem_groups(problems: list[tuple[str, str]], shown: int = SHOWN_PROBLEMS) -> tuple[list[tuple[str, list[str]]], int]:
    """The problems grouped by what is said, whatever value it quotes (231 calls that get no
    result are one line), each with its places, in order of first appearance: at most `shown`
    groups, and how many problems the groups left out hold."""
    groups: dict[str, tuple[str, list[str]]] = {}
    for where, what in problems:
        key = QUOTED.sub("…", what)
        groups.setdefault(key, (what, []))[1].append(where)
    ordered = list(groups.values())
    return ordered[:shown], sum(len(places) for _what, places in ordered[shown:])


def value_problems(value: Any) -> list[tuple[str, str]]:
    """A problem when lists and tables nest deeper than MAX_NESTING, or a number is NaN or
    infinite (TOML has both; strict JSON, which every JSON page writes, has neither). Walked
    without recursion, visiting only lists and tables and naming a place only for a problem:
    an agent's session is mostly metadata, walked here and nowhere else."""
    if isinstance(value, float) and not math.isfinite(value):
        return [("", f"{value} is not a number JSON can write: give a finite number")]
    stack: list[tuple[Any, int, tuple | None]] = [(value, 1, None)] if isinstance(value, (dict, list)) else []
    problems = []
    while stack:
        item, depth, place = stack.pop()
        if depth > MAX_NESTING:
            return [("", f"lists and objects nest more than {MAX_NESTING} levels deep")]
        for key, child in item.items() if isinstance(item, dict) else enumerate(item):
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1, (place, key)))
            elif isinstance(child, float) and not math.isfinite(child):
                problems.append((_path((place, key)), f"{child} is not a number JSON can write: give a finite number"))
    return problems


def _path(place: tuple | None) -> str:
    """"a.b[2].c" of a place kept as (parent place, key) pairs."""
    keys = []
    while place is not None:
        place, key = place
        keys.append(key)
    where = ""
    for key in reversed(keys):
        where = f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}" if where else str(key)
    return where


def first_request(messages: list[Message], examples: frozenset[int] = frozenset()) -> int:
    """Index of the first real user request, where the script starts: the messages before it
    (system, developer, few-shot examples, an opening assistant message) are the prefix."""
    return next(
        (i for i, message in enumerate(messages) if message.get("role") == "user" and i not in examples),
        len(messages),
    )


def grouped(script: list[ScriptMessage]) -> list[ScriptMessage]:
    """The script with each retrieval message in the group of the model call it enters
    before ("g3": the documents found for call 3), compressed as a unit."""
    call = 1
    out = []
    for item in script:
        if item.role == "assistant":
            call += 1
        out.append(replace(item, group=f"g{call}") if item.layer == "retrieval" else item)
    return out
