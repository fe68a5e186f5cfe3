"""The settings of one replay: what a user can change, with the ranges accepted."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from .counter_catalog import BUILT_IN, COUNTER_NAMES, INSTALL, OPEN, OPEN_NAMES, missing, not_installed, runnable
from .i18n import N_
from .triggers import CLAUDE_CODE_OUTPUT_RESERVE, OLLAMA_DEFAULT_NUM_CTX, OLLAMA_NUM_CTX_BY_MEMORY, STRATEGY_NAMES, TRIGGERS

# What KEEP counts: user requests (the seed's keep_recent_turns), tool results, or turns (an
# assistant reply and the tool results that answer it). One request with a hundred tool calls
# is all KEEP when KEEP counts requests; an agent run needs one of the other two.
KEEP_UNITS = {
    "requests": N_("requests"),
    "tool_results": N_("tool results"),
    "turns": N_("turns"),
}
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
# A message id of the script (m3), pinned, or unpinned with a leading minus (-m3).
PIN = re.compile(r"^-?m[1-9][0-9]{0,6}$")
# The lists a URL may carry, and how many entries each accepts. Every link of a page carries
# the state, so a list's length multiplies into the page's size (docs/hardening.md, "What one
# URL can cost"): 50 pins and 10 tools are far more than a lesson or a session needs.
MOST_PINS = 50
MOST_EXCLUDED_TOOLS = 10
# The num_ctx Ollama picks by the GPU memory it finds (triggers.py), smallest first, offered in the
# form with the memory each assumes.
NUM_CTX_CHOICES = tuple(
    zip(
        (tokens for _memory, tokens in reversed(OLLAMA_NUM_CTX_BY_MEMORY)),
        (N_("Ollama's default under 24 GiB of GPU memory"), N_("Ollama's default from 24 to 48 GiB"), N_("Ollama's default from 48 GiB")),
    )
)


def offered(label: str, **extra: Any) -> dict[str, Any]:
    """Field metadata that puts a setting in the settings form (web/settings_form.py), under
    `label` (marked for translation), with `extra` where the form's input differs from what
    the field's type and bounds say (`low`: the smallest value the input offers; `suggest`:
    values the input proposes, each with its words, marked for translation)."""
    return {"form": {"label": label, **extra}}


class Settings(BaseModel):
    """Everything that shapes a replay. Frozen, so it can key a cache."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    strategy: str = Field("truncate-drop", description="how the loop compacts: " + ", ".join(STRATEGY_NAMES))
    window: int = Field(
        8000, ge=100, le=10_000_000, description="the model's context window, in tokens", json_schema_extra=offered(N_("Window (tokens)"))
    )
    model_window: int = Field(
        0,
        ge=0,
        le=10_000_000,
        description="the window the model really has, when the compactor was told another (0: the same as window)",
        json_schema_extra=offered(N_("Model's window (0: same)")),
    )
    threshold: float = Field(
        0.8,
        gt=0,
        le=1,
        description="compact when a request passes this share of the window",
        # The smallest line a form offers: a share above 0, to a hundredth.
        json_schema_extra=offered(N_("Red line (share of the window)"), low=0.01),
    )
    alert: float = Field(
        0,
        ge=0,
        lt=1,
        description="the alert line: a request above this share of the window logs a warning (0: no alert line); below threshold",
        json_schema_extra=offered(N_("Alert line (share; 0: off)")),
    )
    target: float = Field(
        0,
        ge=0,
        lt=1,
        description="compaction aims below this share of the window (0: just below threshold, as the reference compact() does); below threshold",
        json_schema_extra=offered(N_("Target after compaction (share; 0: the red line)")),
    )
    keep: int = Field(
        2,
        ge=1,
        le=1000,
        description="how much recent history the compactor never touches (KEEP), counted in keep_unit",
        json_schema_extra=offered(N_("KEEP (how many)")),
    )
    keep_unit: Literal["requests", "tool_results", "turns"] = Field(
        "requests", description="what keep counts: " + ", ".join(KEEP_UNITS), json_schema_extra=offered(N_("Keep counts"))
    )
    counter: str = Field(
        "estimate",
        description=f"how tokens are counted: {', '.join(BUILT_IN)}; the open-models extra adds {', '.join(OPEN_NAMES)} ({INSTALL})",
        json_schema_extra=offered(N_("Token counter")),
    )
    preview: int = Field(
        150,
        ge=0,
        le=10_000,
        description="characters of a truncated result kept as a preview",
        json_schema_extra=offered(N_("Preview of a truncated result (characters)")),
    )
    keep_facts: bool = Field(False, description="tell the summarizer which facts must survive")
    clear_at_least: int = Field(
        0,
        ge=0,
        le=10_000_000,
        description="clear-tool-results: clear at least this many tokens each time it acts, or clear nothing",
        json_schema_extra=offered(N_("Clear at least (tokens)")),
    )
    exclude_tools: str = Field(
        "",
        max_length=MOST_EXCLUDED_TOOLS * 65,  # names of at most 64 characters, and their commas
        description="clear-tool-results: tools whose results are never cleared, comma-separated",
        json_schema_extra=offered(N_("Never clear (tools)")),
    )
    clear_tool_inputs: bool = Field(
        False,
        description="clear-tool-results: also clear the arguments of the calls whose results are cleared",
        json_schema_extra=offered(N_("Clear the calls' arguments too")),
    )
    output_reserve: int = Field(
        CLAUDE_CODE_OUTPUT_RESERVE,
        ge=0,
        le=10_000_000,
        description="claude-code: the output Claude Code reserves for the model, in tokens; its line is the window less this and a 13,000-token buffer",
        json_schema_extra=offered(N_("Claude Code's output reserve (tokens)")),
    )
    num_ctx: int = Field(
        OLLAMA_DEFAULT_NUM_CTX,
        ge=4,
        le=10_000_000,
        description=(
            "ollama: the context Ollama runs the model at (num_ctx), in tokens; past it Ollama drops the oldest "
            "messages. Its default depends on the GPU memory: 4096 under 24 GiB, 32768 from 24, 262144 from 48"
        ),
        json_schema_extra=offered(N_("Ollama's num_ctx (tokens)"), suggest=NUM_CTX_CHOICES),
    )
    pin: str = Field(
        "",
        max_length=MOST_PINS * 10,  # ids of at most 9 characters (-m1234567), and their commas
        description="messages no strategy may touch, by id (m3), comma-separated, besides those the scenario pins; -m3 unpins one",
    )

    @field_validator("strategy")
    @classmethod
    def known_strategy(cls, value: str) -> str:
        if value not in TRIGGERS:
            raise ValueError("unknown strategy")
        return value

    @field_validator("counter")
    @classmethod
    def known_counter(cls, value: str) -> str:
        if value not in COUNTER_NAMES:
            raise ValueError("unknown counter")
        if value in OPEN and missing(value):
            raise ValueError(f"{value} needs the open-models extra")
        return value

    @field_validator("exclude_tools")
    @classmethod
    def tool_names(cls, value: str) -> str:
        return _comma_list(value, TOOL_NAME, "not a list of tool names", MOST_EXCLUDED_TOOLS)

    @field_validator("pin")
    @classmethod
    def pin_ids(cls, value: str) -> str:
        return _comma_list(value, PIN, "not a list of message ids", MOST_PINS)

    @field_validator("alert", "target")
    @classmethod
    def below_the_line(cls, value: float, info: ValidationInfo) -> float:
        threshold = info.data.get("threshold")
        if value and threshold is not None and value >= threshold:
            raise ValueError("must be below the line (threshold)")
        return value

    @property
    def pinned_changes(self) -> tuple[frozenset[str], frozenset[str]]:
        """The ids `pin` pins, and those it unpins (given as -m3)."""
        ids = [item for item in self.pin.split(",") if item]
        return frozenset(i for i in ids if not i.startswith("-")), frozenset(i[1:] for i in ids if i.startswith("-"))

    def pins_outside(self, known: Collection[str]) -> list[str]:
        """The entries of `pin`, as written (m9, or -m9 to unpin), that name none of the
        `known` message ids: a typo, or another chat's id. `pin` itself only checks the form."""
        return [entry for entry in self.pin.split(",") if entry and entry.lstrip("-") not in known]

    def pinned(self, by_scenario: frozenset[str] = frozenset()) -> frozenset[str]:
        """The messages pinned: the scenario's, with `pin`'s additions and removals."""
        added, removed = self.pinned_changes
        return (by_scenario | added) - removed

    @property
    def aim(self) -> float:
        """Where compaction stops: below the target when one is set, else below the red line."""
        return self.window * self.target if self.target else self.limit

    @property
    def alert_line(self) -> float | None:
        """Above it a request is logged as a warning; None when there is no alert line."""
        return self.window * self.alert if self.alert else None

    @property
    def excluded_tools(self) -> frozenset[str]:
        return frozenset(name for name in self.exclude_tools.split(",") if name)

    @property
    def limit(self) -> float:
        """The red line: a request above it is compacted. A product that only lets its line be
        lowered (Codex, Claude Code) compacts at its own default when set higher; one whose line
        is a setting's tokens (Ollama's num_ctx) compacts there, whatever the threshold."""
        trigger = TRIGGERS[self.strategy]
        if trigger is not None and trigger.line_setting:
            return float(trigger.line_tokens(self.window, self))
        return self.window * self.effective_threshold

    @property
    def effective_threshold(self) -> float:
        trigger = TRIGGERS[self.strategy]
        if trigger is not None and trigger.line_setting:
            return trigger.share_of(self.window, self) or self.threshold
        if trigger is not None and trigger.lower_only:
            return min(self.threshold, trigger.share_of(self.window, self) or self.threshold)
        return self.threshold

    @property
    def own_window(self) -> int:
        """The model's own window, whatever the strategy: what a comparison of strategies draws
        them against (the real window under Ollama is its num_ctx, the strategy's)."""
        return self.model_window or self.window

    @property
    def real_window(self) -> int:
        """What the model reads: a request above it is rejected, or cut. Under a server that runs
        the model at a context of its own (Ollama's num_ctx), that context, at most the model's
        window."""
        trigger = TRIGGERS[self.strategy]
        if trigger is not None and trigger.line_setting:
            return trigger.line_tokens(self.window, self)
        return self.own_window


def _comma_list(value: str, item: re.Pattern, problem: str, most: int) -> str:
    """A comma-separated list of at most `most` items, each matching `item`, tidied: no
    blanks, no repeats."""
    items = list(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
    if not all(item.match(part) for part in items):
        raise ValueError(problem)
    if len(items) > most:
        raise ValueError(f"more than {most} items")
    return ",".join(items)


class SettingsError(ValueError):
    """Bad settings, with one readable line per problem, and each bad field with what it got
    (so the web can say the same in the reader's language)."""

    def __init__(self, problems: list[str], bad: list[tuple[str, Any]] | None = None):
        self.problems = problems
        self.bad = bad or []
        super().__init__("; ".join(problems))


ACCEPTED_NUMBERS = {
    (True, "from"): N_("a whole number from %(low)s to %(high)s"),
    (True, "above"): N_("a whole number above %(low)s to %(high)s"),
    (False, "from"): N_("a number from %(low)s to %(high)s"),
    (False, "above"): N_("a number above %(low)s to %(high)s"),
}


# Fields whose accepted values are a list of names rather than their type's.
CHOICES = {"strategy": STRATEGY_NAMES, "keep_unit": tuple(KEEP_UNITS)}
# What the counter accepts when some open counters are not installed: those it accepts, and how
# to add the others.
COUNTERS_TO_ADD = N_("one of %(values)s; the open-models extra adds %(extra)s (%(command)s)")
FLAGS = ("keep_facts", "clear_tool_inputs")


def accepted_message(field: str, model: type[BaseModel] | None = None) -> tuple[str, dict[str, Any]]:
    """What a field of `model` (the settings, or another model such as the pricing) accepts,
    as a catalog message and its values, read from the field's own type and bounds."""
    if field == "counter":
        extra = not_installed()
        if extra:
            return COUNTERS_TO_ADD, {"values": ", ".join(runnable()), "extra": ", ".join(extra), "command": missing(extra[0])}
        return N_("one of %(values)s"), {"values": ", ".join(runnable())}
    if field in CHOICES:
        return N_("one of %(values)s"), {"values": ", ".join(CHOICES[field])}
    if field in FLAGS:
        return N_("on or off (1/0, true/false)"), {}
    if field == "exclude_tools":
        return N_("at most %(most)s tool names separated by commas (letters, digits, _ . : -)"), {"most": MOST_EXCLUDED_TOOLS}
    if field == "pin":
        return N_("at most %(most)s message ids separated by commas (m3, m7), -m3 to unpin one"), {"most": MOST_PINS}
    if field in ("alert", "target"):
        return N_("0 (off), or a number above 0 and below the line (threshold)"), {}
    info = (model or Settings).model_fields[field]
    kind = info.annotation
    if get_origin(kind) is Literal:
        return N_("one of %(values)s"), {"values": ", ".join(map(str, get_args(kind)))}
    if kind is bool:
        return N_("on or off (1/0, true/false)"), {}
    bounds = {type(m).__name__: m for m in info.metadata}
    low = bounds.get("Ge") or bounds.get("Gt")
    side = "above" if "Gt" in bounds else "from"
    message = ACCEPTED_NUMBERS[(kind is int, side)]
    return message, {"low": getattr(low, "ge", getattr(low, "gt", None)), "high": bounds["Le"].le}


def accepted(field: str) -> str:
    """What a field accepts, in words, for error messages and docs."""
    message, values = accepted_message(field)
    return message % values


# The settings a product's line is drawn from (a Trigger's `reserve_setting` or `line_setting`).
LINE_SETTINGS = frozenset(name for trigger in TRIGGERS.values() if trigger for name in (trigger.reserve_setting, trigger.line_setting) if name)


def starting_point(base: Settings, strategy: str, window: int, line_from: Mapping[str, Any] | None = None) -> Settings:
    """The settings a page starts from with `strategy` on a `window`-token model: `base` (the
    scenario's own), with the product's defaults when `strategy` is a harness that `base` does
    not already set up on that window. The product's line is drawn from `base`, or from
    `line_from`'s values of the settings it reads (LINE_SETTINGS) where it has them: a page that
    sets Claude Code's output reserve starts from the line that reserve gives, while the
    reserve itself stays `base`'s here. The alert line and the target give way when they would
    no longer be below the product's line."""
    drawn = base.model_copy(update={name: value for name, value in (line_from or {}).items() if name in LINE_SETTINGS})
    if (strategy == base.strategy and window == base.window and drawn == base) or strategy not in TRIGGERS:
        return base
    update: dict[str, Any] = {"strategy": strategy, "window": window}
    trigger = TRIGGERS[strategy]
    own = trigger.share_of(window, drawn) if trigger else None
    if own is not None:
        update["threshold"] = own
    update.update(giving_way(base, update.get("threshold", base.threshold)))
    return base.model_copy(update=update)


def giving_way(settings: Settings, line: float) -> dict[str, float]:
    """The alert line and the target of `settings` that would no longer be below `line`, turned
    off (0): what a page does when a product starts at its own line, or a sweep at another."""
    return {name: 0.0 for name in ("alert", "target") if getattr(settings, name) >= line}


def changed_from(settings: Settings, base: Settings) -> dict[str, Any]:
    """The fields of `settings` that a link writes: those that differ from where a page with its
    strategy, window and line's own settings starts (`starting_point`), and the strategy and
    window themselves when they are not `base`'s."""
    start = starting_point(base, settings.strategy, settings.window, settings.model_dump(include=LINE_SETTINGS))
    changed = {name: value for name, value in settings.model_dump().items() if value != getattr(start, name)}
    for name in ("strategy", "window"):
        if getattr(settings, name) != getattr(base, name):
            changed[name] = getattr(settings, name)
    return changed


def with_strategy(settings: Settings, base: Settings, strategy: str, fixed: Collection[str] = ()) -> Settings:
    """`settings` with another strategy: what was set by hand stays (and the fields named in
    `fixed`, even where they equal `base`'s), the rest starts over from that strategy's own
    starting point (a harness's defaults)."""
    kept = {**changed_from(settings, base), **{name: getattr(settings, name) for name in fixed}}
    if "threshold" not in kept:
        # The strategy starts at its own line: an alert line or a target set by hand gives way
        # where it would not be below that line, as on a page that starts the product there.
        line_from = {name: value for name, value in kept.items() if name in LINE_SETTINGS}
        line = starting_point(base, strategy, kept.get("window", base.window), line_from).threshold
        kept.update(giving_way(settings, line))
    return parse_settings({**kept, "strategy": strategy}, base)


def parse_settings(values: dict[str, Any], defaults: Settings | None = None) -> Settings:
    """Settings from loose values (query strings, CLI flags, scenario defaults). What `values`
    leaves out comes from `defaults` (the scenario's), or from a harness's own defaults when
    `values` picks one (`starting_point`).

    Raises SettingsError naming each bad field, what it got and what it accepts.
    """
    given = {k: v for k, v in values.items() if v is not None}
    start = defaults or Settings()
    base = start.model_dump()
    unknown = sorted(set(values) - set(base))
    if unknown:
        raise SettingsError([f"unknown setting {name!r}; accepted: {', '.join(base)}" for name in unknown])
    window = _whole(given.get("window", start.window), start.window)
    # A harness's line drawn from the reserve given with it (reported below when bad).
    line_from = {name: _whole(given[name], getattr(start, name)) for name in LINE_SETTINGS if name in given}
    base = starting_point(start, str(given.get("strategy", start.strategy)), window, line_from).model_dump()
    merged = {**base, **given}
    for flag in FLAGS:
        if isinstance(merged.get(flag), str):
            merged[flag] = _flag(merged[flag])
    try:
        return Settings(**merged)
    except ValidationError as error:
        raise invalid(error, {field: accepted(field) for field in base}) from None


def invalid(error: ValidationError, accepts: dict[str, str]) -> SettingsError:
    """A model's validation error as a SettingsError: each bad field, what it got and what it
    accepts (`accepts`, in English; the web says it again in the reader's language)."""
    problems, bad = [], []
    for item in error.errors():
        field = str(item["loc"][0]) if item["loc"] else "settings"
        got = item.get("input")
        problems.append(f"{field}: got {got!r}, expected {accepts.get(field, item['msg'])}")
        if field in accepts:
            bad.append((field, got))
    return SettingsError(problems, bad if len(bad) == len(problems) else None)


def _whole(value: Any, fallback: int) -> int:
    """`value` as a whole number, or `fallback` when it is none (the field's own check then
    reports it)."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return fallback


def _flag(text: str) -> bool | str:
    lowered = text.strip().lower()
    if lowered in {"1", "true", "on", "yes"}:
        return True
    if lowered in {"0", "false", "off", "no", ""}:
        return False
    return text  # pydantic reports it
