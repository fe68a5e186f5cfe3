"""Where the scenarios live (the built-in ones and the user's own), and opening one by id or
by path."""

from __future__ import annotations

import os
from pathlib import Path

from ...resources import data_folder
from .scenarios import TRANSCRIPT_SUFFIXES, Library, ScenarioError, load_file, load_library
from ..model import Scenario

SCENARIOS_DIR = data_folder("scenarios")


def user_scenario_folders() -> list[Path]:
    """The folders named by the SCENARIOS_DIR environment variable (several joined with the
    system's path separator, like PATH): their scenarios are added to the built-in ones."""
    return [Path(part).expanduser() for part in os.environ.get("SCENARIOS_DIR", "").split(os.pathsep) if part]


def scenario_library() -> Library:
    """The built-in scenarios and the user's own."""
    return load_library(SCENARIOS_DIR, *user_scenario_folders())


def open_scenario(name: str) -> Scenario:
    """A scenario by id (built-in or from SCENARIOS_DIR), or a .toml scenario or a .json / .traj
    transcript by path."""
    path = Path(name)
    if path.suffix in {".toml", *TRANSCRIPT_SUFFIXES} and path.exists():
        return load_file(path)
    library = scenario_library()
    scenario = library.get(name)
    if scenario is not None:
        return scenario
    broken = [str(error) for error in library.errors if Path(error.source).stem == name]
    if broken:
        raise ScenarioError(name, [("", broken[0])])
    known = ", ".join(library.scenarios) or "none"
    raise ScenarioError(name, [("", f"no such scenario or file; scenarios: {known}")])
