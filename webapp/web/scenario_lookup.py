"""Which scenario a URL names: a lesson of the library or a pasted transcript of the store,
found once per request; or the 404 that lists the scenarios there are, or the 404 or 410 that
says what happened to a transcript that is gone."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from flask import g
from flask_babel import format_date
from flask_babel import gettext as _

from ..core.inputs.store_rules import DELETED, ROOM, UNKNOWN
from ..core.model import ID_PATTERN, Scenario
from .services import library, store
from .state_error import StateError


def find_scenario(scenario_id: str) -> Scenario:
    """A scenario of the app's library or store by id, or StateError 404. Found once per
    request: the limits, the page and the page it came from all ask for it."""
    found = g.setdefault("scenarios", {})
    if scenario_id not in found:
        found[scenario_id] = _find(scenario_id)
    return found[scenario_id]


def _find(scenario_id: str) -> Scenario:
    scenarios = library()
    if not re.match(ID_PATTERN, scenario_id):
        raise StateError(
            404,
            [_("No scenario is named %(name)r: a scenario id has lowercase letters, digits and dashes only.", name=scenario_id)],
        )
    scenario = scenarios.get(scenario_id)
    if scenario is None and scenario_id.startswith("t-"):
        scenario = store().load(scenario_id)
        if scenario is None:
            raise missing_transcript(scenario_id)
    if scenario is None:
        known = ", ".join(scenarios.scenarios) or _("none")
        raise StateError(404, [_("No scenario is named %(name)r. Scenarios: %(known)s.", name=scenario_id, known=known)])
    return scenario


def missing_transcript(name: str) -> StateError:
    """The answer to a transcript link that finds nothing, saying what happened to it: 410
    when it was removed (to make room, or its file deleted on the server), else 404."""
    missing = store().missing(name)
    if missing.why == ROOM:
        problem = _(
            "The transcript %(name)s was removed on %(date)s to make room for newer ones. Paste it again: it gets the same link back.",
            name=name,
            date=format_date(datetime.fromtimestamp(missing.removed, UTC)),
        )
    elif missing.why == DELETED:
        problem = _("The transcript %(name)s was removed: its file was deleted from this server. Paste it again: it gets the same link back.", name=name)
    elif missing.why == UNKNOWN:
        problem = _("The transcript %(name)s cannot be found, and the server's store cannot say why right now. Check the link, or paste the transcript again.", name=name)
    else:
        problem = _("No transcript was ever stored as %(name)s on this server. Check the link, or paste the transcript again.", name=name)
    return StateError(410 if missing.why in (ROOM, DELETED) else 404, [problem])
