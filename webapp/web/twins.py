"""A page's figures as JSON and CSV beside its HTML: one data function per page, one renderer
per format (datasette's views/base.py idea). A page names its data function once, in a
`Twins`, and decorates a renderer for each format; each twin reads the page state from its URL
as the HTML page does (the same 400s and 404s), asks the data function once and renders what
it returns. The pages' other downloads (a call's request, a pasted transcript) are
`attachment`s too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar

from flask import Blueprint, Response, jsonify, request

from ..core.output.serialize import csv_text
from .state import PageState, read_state

Data = TypeVar("Data")


@dataclass(frozen=True)
class Table:
    """A CSV download: its file's name and its flat rows (one dict a row, the same keys)."""

    name: str
    rows: list[dict[str, Any]]


def attachment(body: str | bytes, mimetype: str, name: str) -> Response:
    """A download, saved under `name`."""
    return Response(body, mimetype=mimetype, headers={"Content-Disposition": f'attachment; filename="{name}"'})


class Twins(Generic[Data]):
    """The twins of the page at `rule` (`/compare/<scenario_id>`) on `blueprint`: `@twins.json`
    makes a renderer (state, data) -> dict the answer of `rule.json` (endpoint "json"),
    `@twins.csv` one (state, data) -> Table the download of `rule.csv` ("csv")."""

    def __init__(self, blueprint: Blueprint, rule: str, data: Callable[[PageState], Data]):
        self.blueprint = blueprint
        self.rule = rule
        self.data = data

    def json(self, render: Callable[[PageState, Data], dict]) -> Callable[[PageState, Data], dict]:
        self._add("json", lambda view, found: jsonify(render(view, found)))
        return render

    def csv(self, render: Callable[[PageState, Data], Table]) -> Callable[[PageState, Data], Table]:
        def download(view: PageState, found: Data) -> Response:
            table = render(view, found)
            return attachment(csv_text(table.rows), "text/csv", table.name)

        self._add("csv", download)
        return render

    def _add(self, extension: str, answer: Callable[[PageState, Data], Response]) -> None:
        def route(scenario_id: str) -> Response:
            view = read_state(scenario_id, request.args, request.endpoint)
            return answer(view, self.data(view))

        self.blueprint.add_url_rule(f"{self.rule}.{extension}", extension, route)
