"""The strategies on offer, one record each: what the interface says of it, the engine's levels
it runs in order (engine/strategies.py, `LEVELS`), and what sets it apart.

Adding a strategy made of existing levels is one record here, plus its description in the
catalogs (scripts/i18n); every page, the command line, the JSON twins and the comparison
read this list. A strategy that needs a new kind of step adds that level to the engine too.
"""

from __future__ import annotations

from dataclasses import dataclass

from .i18n import N_


@dataclass(frozen=True)
class Strategy:
    name: str
    description: str  # marked for translation; the web layer says it in the page's language
    levels: tuple[str, ...]  # names of the engine's levels, run in order until the request fits
    # It may separate a tool call from its results, on purpose: a comparison never recommends
    # it, even on a chat where its requests happened to stay valid.
    breaks_pairs: bool = False
    # The manual's budget by layer: it keeps long-term memory whole, and the page shows the
    # layers' strip whatever the chat holds.
    by_layer: bool = False
    # The settings only this strategy reads: offered with it, carried along otherwise.
    options: tuple[str, ...] = ()

    @property
    def summarizes(self) -> bool:
        """It calls the summarizer, so "keep facts" changes what it does."""
        return "summarize" in self.levels


STRATEGIES: dict[str, Strategy] = {
    strategy.name: strategy
    for strategy in (
        Strategy("none", N_("never compacts: every call resends the whole history"), ()),
        Strategy("truncate", N_("level 1: old tool results become a one-line note"), ("truncate",)),
        Strategy("drop", N_("level 2: old exchanges are dropped whole"), ("drop",)),
        Strategy(
            "truncate-drop",
            N_("level 1, then level 2 if that was not enough: the reference compact() of the Compaction pattern"),
            ("truncate", "drop"),
        ),
        Strategy("summarize", N_("old exchanges become one summary message (costs a model call)"), ("summarize",)),
        Strategy(
            "naive-drop",
            N_(
                "deliberately broken, for the lesson: drops one message at a time, oldest first, "
                "splitting tool calls from their results as some libraries do"
            ),
            ("naive-drop",),
            breaks_pairs=True,
        ),
        Strategy(
            "clear-tool-results",
            N_(
                "old tool results become a short placeholder, oldest first, at least a set number of "
                "tokens at a time (Anthropic's context editing)"
            ),
            ("clear",),
            options=("clear_at_least", "exclude_tools", "clear_tool_inputs"),
        ),
        Strategy(
            "by-layer",
            N_("the manual's levels: retrieval first, then old history, then the oldest; a notice if still too big"),
            ("retrieval", "truncate", "drop", "oldest", "notice"),
            by_layer=True,
        ),
    )
}
