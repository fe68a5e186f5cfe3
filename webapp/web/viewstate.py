"""The view state of a page, read from and written to the URL.

Every page state (scenario, call, settings, price, selected block, autoplay, language) lives in
the query string, so any state is a link. `read_view` turns request args into a `ViewState` or
raises `StateError` (400 or 404) with one readable line per problem; `ViewState.url` writes a
state back, with any changes, so every link and form keeps the whole state.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any, Mapping

from flask import current_app, url_for
from flask_babel import gettext as _

from ..core.scenarios import ID_PATTERN, LANGUAGES, Scenario
from ..core.settings import Settings, SettingsError, accepted_message, parse_settings

SETTING_PARAMS = tuple(Settings.model_fields)
DEFAULT_PRICE = 3.0  # dollars per million input tokens, a mid-range hosted model
MAX_PRICE = 1000.0
SPEEDS = {"0.5": 4000, "1": 2200, "2": 1100}  # autoplay speed -> milliseconds per call
DEFAULT_SPEED = "1"
BLOCK_ID = re.compile(r"^(floor|[ms][0-9]{1,6})$")


class StateError(Exception):
    """A URL that names no page (404) or a bad value (400), with what was wrong and what is
    accepted."""

    def __init__(self, status: int, problems: list[str]):
        self.status = status
        self.problems = problems
        super().__init__("; ".join(problems))


@dataclass(frozen=True)
class ViewState:
    scenario: Scenario
    settings: Settings
    call: int
    price: float = DEFAULT_PRICE
    block: str | None = None
    playing: bool = False
    speed: str = DEFAULT_SPEED
    lang: str | None = None

    @property
    def delay_ms(self) -> int:
        return SPEEDS[self.speed]

    def params(self, **changes: Any) -> dict[str, str]:
        """The query parameters of this state with `changes` applied (None removes a key)."""
        settings_changes = changes.pop("settings_changes", None)
        state = replace(self, **changes)
        settings = state.settings
        if settings_changes:
            settings = settings.model_copy(update=settings_changes)
        values: dict[str, str] = {"call": str(state.call)}
        for name, value in settings.model_dump().items():
            values[name] = _text(value)
        values["price"] = _text(state.price)
        if state.block:
            values["block"] = state.block
        if state.playing:
            values["play"] = "1"
        if state.speed != DEFAULT_SPEED:
            values["speed"] = state.speed
        if state.lang:
            values["lang"] = state.lang
        return values

    def url(self, endpoint: str = "web.play", **changes: Any) -> str:
        """The URL of this state on `endpoint`, with `changes` (call=…, block=…, playing=…,
        settings=…, or settings_changes={field: value} for a few settings) applied."""
        return url_for(endpoint, scenario_id=self.scenario.id, **self.params(**changes))


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def find_scenario(scenario_id: str) -> Scenario:
    """A scenario of the app's library by id, or StateError 404."""
    library = current_app.extensions["scenario_library"]
    if not re.match(ID_PATTERN, scenario_id):
        raise StateError(
            404,
            [_("No scenario is named %(name)r: a scenario id has lowercase letters, digits and dashes only.", name=scenario_id)],
        )
    scenario = library.get(scenario_id)
    if scenario is None and scenario_id.startswith("t-"):
        scenario = current_app.extensions["transcript_store"].load(scenario_id)
        if scenario is None:
            from .transcripts import missing_transcript

            raise missing_transcript(scenario_id)
    if scenario is None:
        known = ", ".join(library.scenarios) or _("none")
        raise StateError(404, [_("No scenario is named %(name)r. Scenarios: %(known)s.", name=scenario_id, known=known)])
    return scenario


def read_view(scenario_id: str, args: Mapping[str, Any]) -> ViewState:
    """The view state named by a URL: the scenario by id, the rest from the query args.

    An empty value means the default. A repeated parameter takes its last value, so that a
    form can send a hidden "0" before a checkbox's "1".
    """
    scenario = find_scenario(scenario_id)
    values = {name: _last(args, name) for name in (*SETTING_PARAMS, "call", "price", "block", "play", "speed", "lang")}
    problems: list[str] = []
    settings = scenario.settings
    try:
        settings = parse_settings({name: values[name] for name in SETTING_PARAMS}, scenario.settings)
    except SettingsError as error:
        problems += [setting_problem(name, got) for name, got in error.bad] or error.problems

    calls = scenario.call_count
    call = _whole(values["call"], 1, 1, calls, "call", problems)
    price = _number(values["price"], DEFAULT_PRICE, 0, MAX_PRICE, "price", problems)
    block = values["block"]
    if block is not None and not BLOCK_ID.match(block):
        problems.append(_("block: got %(got)r, expected a block id such as m3, s1 or floor", got=block))
        block = None
    playing = _flag(values["play"], "play", problems)
    speed = values["speed"] or DEFAULT_SPEED
    if speed not in SPEEDS:
        problems.append(_("speed: got %(got)r, expected one of %(accepted)s", got=speed, accepted=", ".join(SPEEDS)))
        speed = DEFAULT_SPEED
    lang = values["lang"]
    if lang is not None and lang not in LANGUAGES:
        problems.append(_("lang: got %(got)r, expected one of %(accepted)s", got=lang, accepted=", ".join(LANGUAGES)))
        lang = None
    if problems:
        raise StateError(400, problems)
    return ViewState(scenario, settings, call, price, block, playing, speed, lang)


def setting_problem(name: str, got: Any) -> str:
    """A bad setting in the page's language: what it got and what it accepts."""
    message, values = accepted_message(name)
    return _("%(name)s: got %(got)r, expected %(accepted)s", name=name, got=got, accepted=_(message) % values)


def _last(args: Mapping[str, Any], name: str) -> str | None:
    getlist = getattr(args, "getlist", None)
    items = getlist(name) if getlist else ([args[name]] if name in args else [])
    value = items[-1].strip() if items else ""
    return value or None


def _whole(text: str | None, default: int, low: int, high: int, name: str, problems: list[str]) -> int:
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        problems.append(
            _("%(name)s: got %(got)r, expected a whole number from %(low)d to %(high)d", name=name, got=text, low=low, high=high)
        )
        return default
    return value


def _number(text: str | None, default: float, low: float, high: float, name: str, problems: list[str]) -> float:
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and low <= value <= high):
        problems.append(_("%(name)s: got %(got)r, expected a number from %(low)g to %(high)g", name=name, got=text, low=low, high=high))
        return default
    return value


def _flag(text: str | None, name: str, problems: list[str]) -> bool:
    if text is None or text in {"0", "false", "off"}:
        return False
    if text in {"1", "true", "on"}:
        return True
    problems.append(_("%(name)s: got %(got)r, expected 1 or 0", name=name, got=text))
    return False
