"""`StateError`: a URL the app cannot answer, in the reader's words. Raised where a URL is
read (scenario_lookup.py finds its scenario, state.py reads its parameters, a page checks what
only it knows), answered by errors.py; a room of its own so that neither reader imports the
other."""

from __future__ import annotations


class StateError(Exception):
    """A URL that names no page (404), a page that was there (410) or a bad value (400), with
    what was wrong and what is accepted."""

    def __init__(self, status: int, problems: list[str]):
        self.status = status
        self.problems = problems
        super().__init__("; ".join(problems))
