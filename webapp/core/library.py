"""Where the built-in scenarios live, and opening one by id or by path."""

from __future__ import annotations

from pathlib import Path

from .scenarios import Scenario, ScenarioError, load_file, load_library

SCENARIOS_DIR = Path(__file__).resolve().parents[2] / "scenarios"


def open_scenario(name: str, directory: Path = SCENARIOS_DIR) -> Scenario:
    """A built-in scenario by id, or a .toml / .json file by path."""
    path = Path(name)
    if path.suffix in {".toml", ".json"} and path.exists():
        return load_file(path)
    library = load_library(directory)
    scenario = library.get(name)
    if scenario is not None:
        return scenario
    broken = [str(error) for error in library.errors if Path(error.source).stem == name]
    if broken:
        raise ScenarioError(name, [("", broken[0])])
    known = ", ".join(library.scenarios) or "none"
    raise ScenarioError(name, [("", f"no such scenario or file; built-in scenarios: {known}")])
