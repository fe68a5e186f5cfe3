"""The page state: everything a page shows, read from its URL and written back into links.

One `PageState` holds the state of the play page, the comparison panel and their JSON and
download twins: the scenario (in the path, found by scenario_lookup.py), the call, the replay
settings, the bill's pricing, the selected block, autoplay and its speed, and the language.
`read_state` parses a query string into it, or raises `StateError` (400 with one readable line
per bad parameter, in the page's language; 404 or 410 for a scenario not there);
`PageState.url` writes it back, with changes, leaving out every value that is its default,
so a link reads `/play/bike-shop?call=5`. Every link, form and hidden field of those pages is
written from here, so no page spells a parameter by hand.

One set of defaults: the replay settings default to the scenario's own (`Scenario.settings`),
the pricing to the session's provider's (`session_basis` in the core: Anthropic's for a Claude
session, Google's for a Gemini one, else `Pricing()`), which the command line and the JSON
twins use too; the page's own parameters to the defaults of the fields below.

Adding a URL parameter is a change in one place:
- a replay setting: add the field to `Settings` (webapp/core/settings.py), with its type and
  bounds; it is then read, checked (its 400 message says what it accepts), written into
  every link and carried by every form's hidden fields. Offer it in a form by adding its
  input to templates/_settings_fields.html.
- a pricing value: add the field to `Pricing` in the core, likewise.
- anything else the page shows (a view mode, a zoom): add one field to `PageState` below with
  its default and `metadata=param(reader)`, where the reader turns the URL's text into the
  value or raises `Refused`. `flag`, `one_of` and `whole` cover most needs, e.g.
  `projector: bool = field(default=False, metadata=param(flag))`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import Any, Callable, Mapping
from urllib.parse import quote, urlencode

from flask import Blueprint, redirect, request, url_for
from flask_babel import gettext as _
from pydantic import BaseModel

from ..core.analysis.pricing import Pricing, parse_pricing
from ..core.analysis.provider_prices import session_basis
from ..core.analysis.sweep import KEEP_HIGH, LINE_FROM, LINE_HIGH, LINE_LOW, LINE_STEP, LINE_TO, MOST_KEEPS, STEP_HIGH, parse_keeps
from ..core.model import LANGUAGES, Scenario
from ..core.settings import ACCEPTED_NUMBERS, Settings, SettingsError, accepted_message, changed_from, parse_settings, with_strategy
from .scenario_lookup import find_scenario
from .state_error import StateError

SPEEDS = {"0.5": 4000, "1": 2200, "2": 1100}  # autoplay speed -> milliseconds per call
BLOCK_ID = re.compile(r"^(floor|[msn][0-9]{1,6})$")  # a message, a summary, an overflow notice
PRICING = Pricing()  # the bill's defaults for a scenario of the library, the same as the command line's


class Refused(ValueError):
    """A parameter's text that its reader does not accept; `accepted` says what it would."""

    def __init__(self, accepted: str):
        self.accepted = accepted
        super().__init__(accepted)


def _accepted(message: str, **values: Any) -> str:
    return _(message) % values if values else _(message)


def flag(text: str, scenario: Scenario) -> bool:
    if text in {"0", "false", "off"}:
        return False
    if text in {"1", "true", "on"}:
        return True
    raise Refused(_accepted("on or off (1/0, true/false)"))


def one_of(*choices: str) -> Callable[[str, Scenario], str]:
    def read(text: str, scenario: Scenario) -> str:
        if text not in choices:
            raise Refused(_accepted("one of %(values)s", values=", ".join(choices)))
        return text

    return read


def whole(low: int, high: Callable[[Scenario], int]) -> Callable[[str, Scenario], int]:
    """A whole number from `low` to `high(scenario)`."""

    def read(text: str, scenario: Scenario) -> int:
        top = high(scenario)
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= top:
            raise Refused(_accepted(ACCEPTED_NUMBERS[(True, "from")], low=low, high=top))
        return value

    return read


def block_id(text: str, scenario: Scenario) -> str:
    if not BLOCK_ID.match(text):
        raise Refused(_("a block id such as m3, s1 or floor"))
    return text


def keep_values(text: str, scenario: Scenario) -> str:
    """The sweep's KEEP values, "1,2,4", as written back (sorted, no repeats)."""
    try:
        values = parse_keeps(text)
    except ValueError:
        values = ()
    if not values or len(values) > MOST_KEEPS or not all(1 <= value <= KEEP_HIGH for value in values):
        raise Refused(_("up to %(most)s whole numbers from 1 to %(high)s, separated by commas", most=MOST_KEEPS, high=KEEP_HIGH))
    return ",".join(str(value) for value in sorted(set(values)))


def param(read: Callable[[str, Scenario], Any]) -> dict:
    """Field metadata that makes a `PageState` field a URL parameter of the same name."""
    return {"read": read}


@dataclass(frozen=True)
class PageState:
    """The whole state of a page. Fields with `param` metadata are URL parameters of the same
    name; `settings` and `pricing` spread their own fields into the URL. The field order is
    the parameters' order in a URL."""

    scenario: Scenario
    call: int = field(default=1, metadata=param(whole(1, lambda scenario: scenario.call_count)))
    settings: Settings = field(default_factory=Settings)
    pricing: Pricing = PRICING
    block: str | None = field(default=None, metadata=param(block_id))
    play: bool = field(default=False, metadata=param(flag))
    speed: str = field(default="1", metadata=param(one_of(*SPEEDS)))
    # Projector mode, for a teacher: large type, high contrast, the stepper, the well and the story only.
    projector: bool = field(default=False, metadata=param(flag))
    # The sweep's range (core/analysis/sweep.py): lines in percent of the window, and the KEEP
    # values ("": half, the same and double the current KEEP).
    line_from: int = field(default=LINE_FROM, metadata=param(whole(LINE_LOW, lambda scenario: LINE_HIGH)))
    line_to: int = field(default=LINE_TO, metadata=param(whole(LINE_LOW, lambda scenario: LINE_HIGH)))
    line_step: int = field(default=LINE_STEP, metadata=param(whole(1, lambda scenario: STEP_HIGH)))
    keeps: str = field(default="", metadata=param(keep_values))
    lang: str | None = field(default=None, metadata=param(one_of(*LANGUAGES)))

    @classmethod
    def first(cls, scenario: Scenario, **changes: Any) -> PageState:
        """The state a scenario opens in: its own settings and prices, at its first call."""
        return cls(scenario, settings=scenario.settings, pricing=session_basis(scenario).pricing).but(**changes)

    @property
    def delay_ms(self) -> int:
        return SPEEDS[self.speed]

    @property
    def price(self) -> float:
        """Dollars per million input tokens, for the play page's bill."""
        return self.pricing.price

    def but(self, **changes: Any) -> PageState:
        """This state with `changes`, each named as its URL parameter (call=…, strategy=…,
        cache=…, block=None…), or `settings=` / `pricing=` whole."""
        settings_changes = {name: changes.pop(name) for name in list(changes) if name in Settings.model_fields}
        pricing_changes = {name: changes.pop(name) for name in list(changes) if name in Pricing.model_fields}
        state = replace(self, **changes) if changes else self
        if "strategy" in settings_changes:  # a harness starts from its own defaults
            strategy = settings_changes.pop("strategy")
            state = replace(state, settings=with_strategy(state.settings, state.scenario.settings, strategy))
        if settings_changes:
            state = replace(state, settings=state.settings.model_copy(update=settings_changes))
        if pricing_changes:
            state = replace(state, pricing=state.pricing.model_copy(update=pricing_changes))
        return state

    def params(self, **changes: Any) -> dict[str, str]:
        """The URL parameters of this state with `changes`, defaults left out."""
        if not changes:
            return dict(self._params)
        if changes.keys() <= _PAGE_DEFAULTS.keys():
            # The common case (a page has dozens of links that change the call or the block):
            # no new state, just these parameters, in their place.
            out = {name: value for name, value in self._params.items() if name not in changes}
            out.update({name: url_text(value) for name, value in changes.items() if value != _PAGE_DEFAULTS[name]})
            return {name: out[name] for name in _ORDER if name in out}
        return dict(self.but(**changes)._params)

    @cached_property
    def _params(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for each in fields(PageState):
            value = getattr(self, each.name)
            if each.name == "settings":
                changed = changed_from(value, self.scenario.settings)
                out.update({name: url_text(changed[name]) for name in SETTING_PARAMS if name in changed})
            elif each.name == "pricing":
                out.update(_differences(value, session_basis(self.scenario).pricing))
            elif "read" in each.metadata and value != each.default:
                out[each.name] = url_text(value)
        return out

    def url(self, endpoint: str = "play.page", *, relative: bool = False, **changes: Any) -> str:
        """The URL of this state (with `changes`) on `endpoint`, defaults left out (the call
        too when it is the one that page opens at). On the play page the replay's settings,
        prices and projector mode are a path segment (`/play/bike-shop/strategy=drop;pin=m1`),
        the rest the query. `relative`: only the query (`?call=5`), for the many links of a
        page to itself, which keep that segment from the page's address (or its `<base>`);
        the whole URL when `changes` change the segment."""
        params = self.page_params(endpoint, **changes)
        segment = _segment(params) if endpoint == SEGMENT_ENDPOINT else ""
        query = query_text(params)
        if relative and query and segment == self.segment:
            return f"?{query}"
        path = url_for(endpoint, scenario_id=self.scenario.id, **({"settings": segment} if segment else {}))
        return f"{path}?{query}" if query else path

    @cached_property
    def segment(self) -> str:
        """The play page's path segment of this state: its settings, prices and projector
        mode where they differ from the defaults ('' when none do)."""
        return _segment(self.page_params(SEGMENT_ENDPOINT))

    def link_to(self, name: str, **fixed: Any) -> Callable[[Any], str]:
        """`value -> url(relative=True, **{name: value}, **fixed)`, for the many links of a page
        that differ in one parameter (the well's blocks, the request chips): the query around
        that parameter is written once, not once per link, and holds only the page's own
        parameters (the rest is the page's path segment). Its values must need no escaping
        (numbers, block ids)."""
        params = self.params(**fixed)
        _segment(params)
        params.pop(name, None)
        at = _ORDER.index(name)
        before = query_text({key: value for key, value in params.items() if _ORDER.index(key) < at})
        after = query_text({key: value for key, value in params.items() if _ORDER.index(key) > at})
        head, tail = f"?{before}&{name}=" if before else f"?{name}=", f"&{after}" if after else ""
        default = _PAGE_DEFAULTS[name]

        def link(value: Any) -> str:
            if value == default:  # left out of the URL, which may then be the bare path
                return self.url(relative=True, **{name: value}, **fixed)
            return f"{head}{url_text(value)}{tail}"

        return link

    def page_params(self, endpoint: str, **changes: Any) -> dict[str, str]:
        """`params` for a page of `endpoint`, whose URL leaves out the call that page opens
        at (`opening_call`) rather than call 1."""
        params = self.params(**changes)
        opening = opening_call(endpoint, self.scenario)
        if opening == 1:
            return params
        call = changes.get("call", self.call)
        params.pop("call", None)
        return params if call == opening else {"call": str(call), **params}

    def hidden(self, *shown: str, endpoint: str = "play.page", **changes: Any) -> list[tuple[str, str]]:
        """(name, value) of the hidden fields a form of `endpoint` needs to keep this state:
        every parameter that differs from its default, except the fields the form shows."""
        return [(name, value) for name, value in self.page_params(endpoint, **changes).items() if name not in shown]


def opening_call(endpoint: str, scenario: Scenario) -> int:
    """The call a page opens at when its URL names none. The play page steps through the chat
    from its first call; the comparison opens at the last, where the strategies differ most
    (at call 1 every one sends the same request)."""
    return scenario.call_count if endpoint.startswith("compare.") else 1


def _differences(model: BaseModel, defaults: BaseModel) -> dict[str, str]:
    return {
        name: url_text(value)
        for name, value in model.model_dump().items()
        if value != getattr(defaults, name)
    }


def query_text(params: Mapping[str, str]) -> str:
    """A query string, its lists' commas left as they are (a query may hold them): a page
    writes the state into hundreds of links, and `%2C` made a list of pins thrice longer."""
    return urlencode(params, safe=",")


def url_text(value: Any) -> str:
    """A value as a URL (or a form field) writes it."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _segment(params: dict[str, str]) -> str:
    """Takes the segment's parameters out of `params`; returns them as the play page's path
    segment, `name=value` joined by `;`."""
    return ";".join(f"{name}={quote(params.pop(name), safe=',')}" for name in [name for name in params if name in SEGMENT_PARAMS])


def segment_values(segment: str) -> dict[str, str]:
    """The parameters of a play page's path segment, or StateError 404 when it is not one."""
    values = {}
    for part in segment.split(";") if segment else []:
        name, equals, value = part.partition("=")
        if not equals or name not in SEGMENT_PARAMS:
            raise StateError(404, [_("There is no page at this address: %(part)r is not a setting of the play page.", part=part)])
        values[name] = value
    return values


PAGE_PARAMS = tuple(each.name for each in fields(PageState) if "read" in each.metadata)
_PAGE_DEFAULTS = {each.name: each.default for each in fields(PageState) if "read" in each.metadata}
SETTING_PARAMS = tuple(Settings.model_fields)
PRICING_PARAMS = tuple(Pricing.model_fields)
URL_PARAMS = (*PAGE_PARAMS, *SETTING_PARAMS, *PRICING_PARAMS)
# What the URL says of how a page is shown, not of what it computes (a job's key leaves it out).
PRESENTATION_PARAMS = ("lang", "projector", "call", "block", "play", "speed")
# On the play page, what its many links to itself keep from its address instead of carrying
# it each (docs/hardening.md, "What one URL can cost"): the replay's settings, the prices and
# projector mode, in a path segment. The call, the block, autoplay and the language, which
# those links change or are few, stay in the query.
SEGMENT_ENDPOINT = "play.page"
SEGMENT_PARAMS = frozenset((*SETTING_PARAMS, *PRICING_PARAMS, "projector"))
# The parameters in URL order: the page state's fields, settings and pricing spread in place.
_ORDER = tuple(
    name
    for each in fields(PageState)
    for name in {"settings": SETTING_PARAMS, "pricing": PRICING_PARAMS}.get(each.name, (each.name,) if "read" in each.metadata else ())
)


def read_state(scenario_id: str, args: Mapping[str, Any], endpoint: str = "play.page", segment: str = "") -> PageState:
    """The page state a URL of `endpoint` names: the scenario by id, the rest from the play
    page's path `segment` and the query args (a parameter in the query, a form's field, wins
    over the segment's); without a call, the call that page opens at.

    An empty value means the default. A repeated parameter takes its last value, so that a
    form can send a hidden "0" before a checkbox's "1". Every bad parameter is reported at
    once.
    """
    scenario = find_scenario(scenario_id)
    in_path = segment_values(segment)
    values = {name: _last(args, name) if name in args or name not in in_path else in_path[name] or None for name in URL_PARAMS}
    problems: list[str] = []
    settings = scenario.settings
    try:
        settings = parse_settings({name: values[name] for name in SETTING_PARAMS}, scenario.settings)
    except SettingsError as error:
        problems += [problem(name, got, Settings) for name, got in error.bad] or error.problems
    problems += unknown_pins(settings, scenario)
    pricing = session_basis(scenario).pricing
    try:
        pricing = parse_pricing({name: values[name] for name in PRICING_PARAMS}, pricing)
    except SettingsError as error:
        problems += [problem(name, got, Pricing) for name, got in error.bad] or error.problems
    page: dict[str, Any] = {"call": opening_call(endpoint, scenario)}
    for each in fields(PageState):
        text = values.get(each.name)
        if "read" not in each.metadata or text is None:
            continue
        try:
            page[each.name] = each.metadata["read"](text, scenario)
        except Refused as refused:
            problems.append(_refusal(each.name, text, refused.accepted))
    if problems:
        raise StateError(400, problems)
    return PageState(scenario, settings=settings, pricing=pricing, **page)


def unknown_pins(settings: Settings, scenario: Scenario) -> list[str]:
    """A pinned (or unpinned, -m3) id that names no message of this scenario, refused."""
    unknown = settings.pins_outside({item.id for item in scenario.script})
    if not unknown:
        return []
    return [_refusal("pin", ",".join(unknown), _("ids of this chat's messages, m1 to m%(last)s", last=len(scenario.script)))]


def problem(name: str, got: Any, model: type[BaseModel] = Settings) -> str:
    """A bad setting or price in the page's language: what it got and what it accepts."""
    message, values = accepted_message(name, model)
    return _refusal(name, got, _(message) % values)


def _refusal(name: str, got: Any, accepted: str) -> str:
    return _("%(name)s: got %(got)r, expected %(accepted)s", name=name, got=got, accepted=accepted)


def _last(args: Mapping[str, Any], name: str) -> str | None:
    getlist = getattr(args, "getlist", None)
    items = getlist(name) if getlist else ([args[name]] if name in args else [])
    value = items[-1].strip() if items else ""
    return value or None


def add_segment_spelling(blueprint: Blueprint, page: str) -> None:
    """Answers `/<page>/<scenario_id>/<settings>`, the play page's spelling
    (`/compare/bike-shop/projector=1`), with a redirect to the same page at its own address,
    its state in the query (a parameter of the query wins over the segment's)."""
    endpoint = f"{page}.page"

    def segment(scenario_id: str, settings: str):
        return redirect(read_state(scenario_id, request.args, endpoint, settings).url(endpoint), 301)

    blueprint.add_url_rule(f"/{page}/<scenario_id>/<settings>", "segment", segment)
