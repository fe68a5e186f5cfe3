"""Where the scenarios live (the built-in ones and the user's own), the library a folder's
files load into, and opening one by id or by path."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ...resources import data_folder
from ..model import Scenario
from .scenarios import ScenarioError
from .transcripts import parse_transcript

SCENARIOS_DIR = data_folder("scenarios")
# A transcript file: JSON, a SWE-agent trajectory (*.traj), an agent's JSON Lines session
# (Claude Code, Codex, Gemini CLI, OpenHands' output.jsonl) or aider's markdown history.
TRANSCRIPT_SUFFIXES = (".json", ".traj", ".jsonl", ".md")
# FILE#2: the second run of a file holding several (an evaluation's output.jsonl).
RUN_SUFFIX = re.compile(r"^(?P<path>.+)#(?P<run>[0-9]+)$")


@dataclass
class Library:
    """The scenarios that loaded, by their `order` then file name, and the errors of those
    that did not."""

    scenarios: dict[str, Scenario]
    errors: list[ScenarioError]

    def get(self, scenario_id: str) -> Scenario | None:
        return self.scenarios.get(scenario_id)

    @property
    def lessons(self) -> list[Scenario]:
        """The path: the scenarios written as lessons (not transcripts), in teaching order."""
        return [scenario for scenario in self.scenarios.values() if scenario.kind == "scenario"]

    def lesson_number(self, scenario_id: str) -> int | None:
        """1 for the first lesson; None for a transcript."""
        return next((index for index, lesson in enumerate(self.lessons, 1) if lesson.id == scenario_id), None)

    def next_lesson(self, scenario_id: str) -> Scenario | None:
        number = self.lesson_number(scenario_id)
        lessons = self.lessons
        return lessons[number] if number is not None and number < len(lessons) else None


def load_file(path: Path, run: int = 1) -> Scenario:
    source = path.name if run == 1 else f"{path.name}#{run}"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ScenarioError(source, [("", f"cannot be read: {error}")]) from None
    if path.suffix in TRANSCRIPT_SUFFIXES:
        return parse_transcript(text, source, scenario_id=path.stem, title=path.stem.replace("-", " ").capitalize(), run=run)
    from .lessons import parse_scenario_toml  # here: a transcript's replay needs none of the lessons' models

    return parse_scenario_toml(text, source)


def load_library(*directories: Path) -> Library:
    """Every scenario of the folders, in their `order`; a broken file, a missing folder or an
    id used twice is reported and the other scenarios still load."""
    scenarios: dict[str, Scenario] = {}
    errors: list[ScenarioError] = []
    paths = []
    for directory in directories:
        if not directory.is_dir():
            errors.append(ScenarioError(str(directory), [("", "no such folder")]))
            continue
        paths += sorted(directory.glob("*"))
    for path in paths:
        if path.suffix not in {".toml", *TRANSCRIPT_SUFFIXES}:
            continue
        try:
            scenario = load_file(path)
        except ScenarioError as error:
            errors.append(error)
            continue
        if scenario.id in scenarios:
            errors.append(ScenarioError(path.name, [("id", f"{scenario.id!r} is already used by {scenarios[scenario.id].source}")]))
            continue
        scenarios[scenario.id] = scenario
    ordered = sorted(scenarios.values(), key=lambda scenario: scenario.order)  # stable: file name breaks ties
    return Library({scenario.id: scenario for scenario in ordered}, errors)


def user_scenario_folders() -> list[Path]:
    """The folders named by the SCENARIOS_DIR environment variable (several joined with the
    system's path separator, like PATH): their scenarios are added to the built-in ones."""
    return [Path(part).expanduser() for part in os.environ.get("SCENARIOS_DIR", "").split(os.pathsep) if part]


def scenario_library() -> Library:
    """The built-in scenarios and the user's own."""
    return load_library(SCENARIOS_DIR, *user_scenario_folders())


def open_scenario(name: str) -> Scenario:
    """A scenario by id (built-in or from SCENARIOS_DIR), or a .toml scenario or a transcript
    (.json, .traj, .jsonl, .md) by path; FILE#2 is the second run of a file holding several."""
    chosen = RUN_SUFFIX.match(name)
    path, run = (Path(chosen["path"]), int(chosen["run"])) if chosen else (Path(name), 1)
    if path.suffix in {".toml", *TRANSCRIPT_SUFFIXES} and path.exists():
        return load_file(path, run)
    library = scenario_library()
    scenario = library.get(name)
    if scenario is not None:
        return scenario
    broken = [str(error) for error in library.errors if Path(error.source).stem == name]
    if broken:
        raise ScenarioError(name, [("", broken[0])])
    known = ", ".join(library.scenarios) or "none"
    raise ScenarioError(name, [("", f"no such scenario or file; scenarios: {known}")])
