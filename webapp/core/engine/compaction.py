"""What a compaction works with and leaves behind: the strategy as the engine runs it (its
levels, each a function named once, and a harness's KEEP rule, summary prompt, configuration as
code and citations), the context a strategy needs besides the history (settings, counter,
pins), the work under way, and the record of what was done."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..counting.tokens import Counter, Message
from ..model import Fact
from ..settings import Settings
from ..triggers import TRIGGERS, Trigger
from .history import Block, caller_of, keep_start
from .recorded import Calibration
from .summarizer import TEXTBOOK, Summarizer, SummaryStyle


@dataclass(frozen=True)
class Compaction:
    """What one compaction did, for the view and the event log."""

    strategy: str
    tokens_before: int
    tokens_after: int
    levels: tuple[str, ...] = ()
    truncated: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    summarized: tuple[str, ...] = ()
    summary_id: str | None = None
    summarizer_input: int = 0
    summarizer_output: int = 0
    # Results of tools marked fetch_once that truncation destroyed: they cannot be fetched again.
    destroyed: tuple[str, ...] = ()
    # clear-tool-results: the results cleared, the assistant replies whose call arguments were
    # cleared with them, and the tokens this took off the request (Anthropic's response reports
    # the same two figures as cleared_tool_uses and cleared_input_tokens).
    cleared: tuple[str, ...] = ()
    inputs_cleared: tuple[str, ...] = ()
    cleared_tokens: int = 0
    # clear-tool-results left the request as it was: clearing every result it may clear would
    # have taken off only this many tokens, fewer than clear_at_least.
    held_back: int = 0
    # by-layer: the retrieved documents compressed (message ids), and the overflow notice's id
    # when the levels were not enough (the notice is added once and stays).
    compressed: tuple[str, ...] = ()
    notice: str | None = None
    notice_added: bool = False
    # Still above the aim, with pinned messages outside KEEP: only they were left to cut.
    pinned_kept: tuple[str, ...] = ()
    # Tokens of messages sent unchanged before and after, but now behind a new summary: the
    # prompt cache held them and must write them again.
    rewritten: int = 0
    # Summaries a harness rejected (Gemini CLI keeps the history when its summary is no smaller).
    rejected: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.truncated or self.dropped or self.summarized or self.cleared or self.compressed or self.notice_added)

    @property
    def saved_share(self) -> float:
        return (self.tokens_before - self.tokens_after) / self.tokens_before if self.tokens_before else 0.0



@dataclass
class Context:
    """What a strategy needs besides the history."""

    settings: Settings
    strategy: Strategy  # the record of settings.strategy
    counter: Counter
    floor_units: int
    summarizer: Summarizer
    facts: list[Fact] = field(default_factory=list)
    fetch_once_tools: frozenset[str] = frozenset()
    digests: dict[int, str] = field(default_factory=dict)
    pinned: frozenset[str] = frozenset()
    # The pinned messages this compaction would have cut, had they not been pinned: when it
    # stops above its aim, they are what stopped it (a pinned message no level of the strategy
    # would touch, such as a user message for truncate, is not in its way).
    passed_over: set[str] = field(default_factory=set)
    summaries_made: int = 0
    # Where a level's last scan of old tool results settled, by level: history[:n] then held
    # nothing it would change nor a pinned message it passed over, and a later scan starts
    # there while the block at n - 1 is still in place (a drop or a summary moves it, and the
    # scan starts from the beginning again). Without it, a long chat rescans every old block
    # at every call.
    settled: dict[Level, tuple[int, Block]] = field(default_factory=dict)
    # What a harness remembers between calls (Gemini CLI: a summary was rejected once).
    memory: dict[str, Any] = field(default_factory=dict)
    # How the session's recorded counts correct the counter's, from the last recorded call
    # (recorded.Calibration); None: the counter's count as it is.
    calibration: Calibration | None = None

    def tokens(self, units: int) -> int:
        """The request of `units` history units as the loop counts it: the counter's count,
        corrected by the session's recorded counts where it has them."""
        counted = self.counted(units)
        return counted if self.calibration is None else self.calibration.tokens(counted)

    def counted(self, units: int) -> int:
        """The same request as the counter alone counts it."""
        return self.counter.request_tokens(self.floor_units + units)

    def above_line(self, units: int) -> bool:
        """Whether a request this size must be compacted: it is above the red line."""
        return self.tokens(units) > self.settings.limit

    def must_compact(self, history: list[Block], units: int) -> bool:
        """Whether the strategy acts before this call: above the line, or as its product's
        trigger says (past a number of messages, or before every call)."""
        trigger = self.strategy.trigger
        if trigger is not None and (trigger.every_call or (trigger.messages is not None and len(history) > trigger.messages)):
            return True
        if trigger is not None and trigger.last_request:
            return self._last_request_at_line(history)
        return self.above_line(units)

    def _last_request_at_line(self, history: list[Block]) -> bool:
        """Whether the last request sent (the history before the last reply) reached the line;
        never before a first reply, as no request was counted yet."""
        last_reply = next((index for index in range(len(history) - 1, -1, -1) if history[index].role == "assistant"), None)
        if last_reply is None:
            return False
        return self.tokens(sum(block.units for block in history[:last_reply])) >= self.settings.limit

    def fits(self, units: int) -> bool:
        """Whether compaction may stop: at or below its aim (the target, else the line)."""
        return self.tokens(units) <= self.settings.aim

    def keep_start(self, history: list[Block]) -> int:
        """Where KEEP starts: as the harness defines it, else as the settings count it."""
        rule = self.strategy.keep_rule
        if rule is not None:
            return rule(history, self)
        return keep_start(history, self.settings.keep, self.settings.keep_unit)

    def scan_start(self, step: Level, history: list[Block]) -> int:
        """Where `step`'s scan of `history` may start (`settled`). The check is the block at
        end - 1 alone: a level that removes blocks before it moves it, and the one change that
        would not (a summary folding one block in its place) is made by no strategy that also
        scans tool results."""
        found = self.settled.get(step)
        if found is not None:
            end, last = found
            if end <= len(history) and history[end - 1] is last:
                return end
        return 0

    def settle(self, step: Level, history: list[Block], end: int) -> None:
        """`step` found nothing to change in history[:end], as it now is; the next scan starts
        there, or at the first pinned message this compaction passed over, so that a later
        compaction passes over it again and reports it (`pinned_kept`)."""
        if self.passed_over:
            end = next((index for index in range(end) if history[index].id in self.passed_over), end)
        if end > 0:
            self.settled[step] = (end, history[end - 1])

    def kept(self, block: Block) -> bool:
        """Never compacted: a pinned message, the overflow notice, and for by-layer long-term
        memory (the manual's levels never compress it). Asked only of a block a level would cut."""
        if block.id in self.pinned:
            self.passed_over.add(block.id)
            return True
        return block.state == "notice" or (block.layer == "memory" and self.strategy.by_layer)

    def block(self, template: Block, message: Message, **changes) -> Block:
        return Block(
            id=changes.pop("id", template.id),
            message=message,
            units=self.counter.measure(message),
            request=changes.pop("request", template.request),
            layer=changes.pop("layer", template.layer),
            group=changes.pop("group", template.group),
            **changes,
        )

    def kept_with_partners(self, history: list[Block], start: int, end: int) -> set[int]:
        """Indexes in history[start:end] that stay when the rest goes: the kept blocks, and
        those a kept block cannot be sent without (the reply that made its tool call, the
        other results of that reply, a kept reply's results)."""
        if not self.pinned and not self.strategy.by_layer:
            return set()  # only by-layer keeps memory and its notice: nothing else to look for
        kept = {index for index in range(start, end) if self.kept(history[index])}
        for index in list(kept):
            block = history[index]
            if block.tool_call_ids:
                caller = index
            elif block.role == "tool":
                caller = caller_of(history, index, block.message.get("tool_call_id"))
            else:
                continue
            if caller is None or caller < start:
                continue
            kept.add(caller)
            ids = set(history[caller].tool_call_ids)
            position = caller + 1
            while position < end and history[position].role == "tool" and history[position].message.get("tool_call_id") in ids:
                kept.add(position)
                position += 1
        return kept



@dataclass
class Work:
    """A compaction under way: the history, its units, and what was done so far."""

    history: list[Block]
    units: int
    truncated: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    summarized: list[str] = field(default_factory=list)
    levels: list[str] = field(default_factory=list)
    destroyed: list[str] = field(default_factory=list)
    summary_id: str | None = None
    summarizer_input: int = 0
    summarizer_output: int = 0
    cleared: list[str] = field(default_factory=list)
    inputs_cleared: list[str] = field(default_factory=list)
    cleared_tokens: int = 0
    held_back: int = 0
    compressed: list[str] = field(default_factory=list)
    notice: str | None = None
    notice_added: bool = False
    rejected: bool = False


@dataclass(frozen=True)
class Level:
    """One step of a strategy: it changes the work under way and says whether it did anything.
    Its name, given once by `@level`, is what a compaction's record and the event log call it."""

    name: str
    run: Callable[[Work, Context], bool]
    summarizes: bool = False  # it calls the summarizer, so "keep facts" changes what it does


def level(name: str, *, summarizes: bool = False) -> Callable[[Callable[[Work, Context], bool]], Level]:
    """Makes a level function the `Level` called `name` (a decorator)."""

    def named(run: Callable[[Work, Context], bool]) -> Level:
        return Level(name, run, summarizes)

    return named


# Where a product's KEEP starts in a history: the part it never compacts. A rule never starts
# KEEP on a tool result (pair safety, which the playground asks of every product).
KeepRule = Callable[[list[Block], Context], int]


@dataclass(frozen=True)
class ProductConfig:
    """A product's own configuration for the settings on the page, as code to paste."""

    language: str  # toml, json, shell or python: how the page labels and highlights it
    write: Callable[[Settings], str]


@dataclass(frozen=True)
class Citation:
    """Where a figure of a harness comes from: its product's source or documentation, at the
    version read (docs/harnesses.md tells the same in words)."""

    figure: str  # "trigger" (its line in triggers.py), or a name the harness's module defines
    source: str  # the repository or package: "openai/codex", "langchain (PyPI)"
    version: str  # the commit, tag or release read
    where: str  # the file (and the name in it), or the document's address
    status: str = "verified"  # or "secondary" (through a quotation or a mirror), "unverified"


@dataclass(frozen=True)
class Strategy:
    """A strategy as the engine runs it: its levels in order, until the request fits or, when
    `until_fits` is off, every one (a product that runs its steps whatever the request), and
    what sets it apart. A
    harness (engine/harnesses/) brings its product's name, KEEP rule, summary prompt, its
    configuration as code and the citations of its figures; its trigger is on the ground floor,
    where the settings read it (triggers.py)."""

    name: str
    description: str  # marked for translation; the web layer says it in the page's language
    levels: tuple[Level, ...] = ()
    # It may separate a tool call from its results, on purpose or as its product does (Ollama):
    # a comparison never recommends it, even on a chat where its requests happened to stay valid.
    breaks_pairs: bool = False
    # The manual's budget by layer: it keeps long-term memory whole, and the page shows the
    # layers' strip whatever the chat holds.
    by_layer: bool = False
    # The settings only this strategy reads: offered with it, carried along otherwise.
    options: tuple[str, ...] = ()
    until_fits: bool = True
    product: str = ""  # the product's own name, as it spells it (not translated): a harness
    keep_rule: KeepRule | None = None  # None: KEEP as the settings count it (keep, keep_unit)
    prompt: SummaryStyle = TEXTBOOK  # the summarizer's instructions and the summary's frame
    config: ProductConfig | None = None
    citations: tuple[Citation, ...] = ()
    # The transcript formats (inputs/formats/) this product writes its sessions in: a session
    # read from one was compacted by this harness, and the comparison shows it beside the panel.
    formats: tuple[str, ...] = ()

    @property
    def trigger(self) -> Trigger | None:
        """The product's default line (None: the settings' own)."""
        return TRIGGERS[self.name]

    @property
    def harness(self) -> bool:
        return bool(self.product)

    @property
    def family(self) -> str:
        """"harness": what a product does; "textbook": the pattern page's and the manual's
        levels (the comparison shows each family apart)."""
        return "harness" if self.harness else "textbook"

    @property
    def summarizes(self) -> bool:
        """It calls the summarizer, so "keep facts" changes what it does."""
        return any(step.summarizes for step in self.levels)

    @property
    def level_names(self) -> tuple[str, ...]:
        return tuple(step.name for step in self.levels)
