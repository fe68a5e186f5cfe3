"""The settings of one replay: what a user can change, with the ranges accepted."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .i18n import N_

STRATEGIES = {
    "none": N_("never compacts: watch the well overflow"),
    "truncate": N_("level 1: old tool results become a one-line note"),
    "drop": N_("level 2: old exchanges are dropped whole"),
    "truncate-drop": N_("level 1, then level 2 if that was not enough (the seed's compact())"),
    "summarize": N_("old exchanges become one summary message (costs a model call)"),
    "naive-drop": N_(
        "deliberately broken, for the lesson: drops one message at a time, oldest first, "
        "splitting tool calls from their results as some libraries do"
    ),
}
COUNTER_NAMES = ("estimate", "cl100k_base", "o200k_base")


class Settings(BaseModel):
    """Everything that shapes a replay. Frozen, so it can key a cache."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    strategy: str = Field("truncate-drop", description="how the loop compacts: " + ", ".join(STRATEGIES))
    window: int = Field(8000, ge=100, le=10_000_000, description="the model's context window, in tokens")
    model_window: int = Field(
        0,
        ge=0,
        le=10_000_000,
        description="the window the model really has, when the compactor was told another (0: the same as window)",
    )
    threshold: float = Field(
        0.8, gt=0, le=1, description="compact when a request passes this share of the window"
    )
    keep: int = Field(2, ge=1, le=1000, description="recent requests the compactor never touches (KEEP)")
    counter: Literal["estimate", "cl100k_base", "o200k_base"] = Field(
        "estimate", description="how tokens are counted: " + ", ".join(COUNTER_NAMES)
    )
    preview: int = Field(150, ge=0, le=10_000, description="characters of a truncated result kept as a preview")
    keep_facts: bool = Field(False, description="tell the summarizer which facts must survive")

    @field_validator("strategy")
    @classmethod
    def known_strategy(cls, value: str) -> str:
        if value not in STRATEGIES:
            raise ValueError("unknown strategy")
        return value

    @property
    def limit(self) -> float:
        """The red line: a request above it is compacted."""
        return self.window * self.threshold

    @property
    def real_window(self) -> int:
        """What the provider accepts: a request above it is rejected."""
        return self.model_window or self.window


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


def accepted_message(field: str) -> tuple[str, dict[str, Any]]:
    """What a field accepts, as a catalog message and its values."""
    if field in ("strategy", "counter"):
        return N_("one of %(values)s"), {"values": ", ".join(STRATEGIES if field == "strategy" else COUNTER_NAMES)}
    if field == "keep_facts":
        return N_("on or off (1/0, true/false)"), {}
    info = Settings.model_fields[field]
    bounds = {type(m).__name__: m for m in info.metadata}
    low = bounds.get("Ge") or bounds.get("Gt")
    side = "above" if "Gt" in bounds else "from"
    message = ACCEPTED_NUMBERS[(info.annotation is int, side)]
    return message, {"low": getattr(low, "ge", getattr(low, "gt", None)), "high": bounds["Le"].le}


def accepted(field: str) -> str:
    """What a field accepts, in words, for error messages and docs."""
    message, values = accepted_message(field)
    return message % values


def parse_settings(values: dict[str, Any], defaults: Settings | None = None) -> Settings:
    """Settings from loose values (query strings, CLI flags, scenario defaults).

    Raises SettingsError naming each bad field, what it got and what it accepts.
    """
    base = (defaults or Settings()).model_dump()
    unknown = sorted(set(values) - set(base))
    if unknown:
        raise SettingsError([f"unknown setting {name!r}; accepted: {', '.join(base)}" for name in unknown])
    merged = {**base, **{k: v for k, v in values.items() if v is not None}}
    if isinstance(merged.get("keep_facts"), str):
        merged["keep_facts"] = _flag(merged["keep_facts"])
    try:
        return Settings(**merged)
    except ValidationError as error:
        problems, bad = [], []
        for item in error.errors():
            field = str(item["loc"][0]) if item["loc"] else "settings"
            got = item.get("input")
            problems.append(f"{field}: got {got!r}, expected {accepted(field) if field in base else item['msg']}")
            if field in base:
                bad.append((field, got))
        raise SettingsError(problems, bad if len(bad) == len(problems) else None) from None


def _flag(text: str) -> bool | str:
    lowered = text.strip().lower()
    if lowered in {"1", "true", "on", "yes"}:
        return True
    if lowered in {"0", "false", "off", "no", ""}:
        return False
    return text  # pydantic reports it
