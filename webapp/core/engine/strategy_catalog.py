"""The strategies on offer, one record each, as the engine runs them: the textbook ones here,
made of the levels in strategies.py, and the production harnesses, one module each in
harnesses/. Every page, the command line, the JSON twins and the comparison read `STRATEGIES`.

A record holds its levels as functions, each named once by `@level`; the settings know a
strategy by its name and its product's trigger, on the ground floor (triggers.py), in the same
order as here (tests/test_harnesses.py checks the two agree).
"""

from __future__ import annotations

from ..i18n import N_
from .compaction import Strategy
from .harnesses import HARNESSES
from .strategies import (
    clear_level, drop_level, naive_drop_level, notice_level, oldest_level, retrieval_level, summarize_level, truncate_level,
)

TEXTBOOK = (
    Strategy("none", N_("never compacts: every call resends the whole history")),
    Strategy("truncate", N_("level 1: old tool results become a one-line note"), (truncate_level,)),
    Strategy("drop", N_("level 2: old exchanges are dropped whole"), (drop_level,)),
    Strategy(
        "truncate-drop",
        N_("level 1, then level 2 if that was not enough, as the compact() code of the Compaction pattern page (the one this playground follows) does"),
        (truncate_level, drop_level),
    ),
    Strategy("summarize", N_("old exchanges become one summary message (costs a model call)"), (summarize_level,)),
    Strategy(
        "naive-drop",
        N_(
            "deliberately broken, for the lesson: drops one message at a time, oldest first, "
            "splitting tool calls from their results as some libraries do"
        ),
        (naive_drop_level,),
        breaks_pairs=True,
    ),
    Strategy(
        "clear-tool-results",
        N_(
            "old tool results become a short placeholder, oldest first, at least a set number of "
            "tokens at a time (Anthropic's context editing)"
        ),
        (clear_level,),
        options=("clear_at_least", "exclude_tools", "clear_tool_inputs"),
    ),
    Strategy(
        "by-layer",
        N_("the levels of the context-management manual: retrieval first, then old history, then the oldest; a notice if still too big"),
        (retrieval_level, truncate_level, drop_level, oldest_level, notice_level),
        by_layer=True,
    ),
)

STRATEGIES: dict[str, Strategy] = {strategy.name: strategy for strategy in (*TEXTBOOK, *HARNESSES)}

# The mission's panel, "truncate, drop and summarize side by side": the comparison opens on
# these three, beside the reader's own harness and the verdict's pick.
PANEL = ("truncate", "drop", "summarize")


def harness_writing(format_name: str) -> str | None:
    """The harness whose sessions are written in `format_name`, if one is."""
    return next((strategy.name for strategy in HARNESSES if format_name in strategy.formats), None)
