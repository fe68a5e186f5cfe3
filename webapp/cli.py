"""Command line: replay a scenario or a transcript and print what each call sends."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .core.library import SCENARIOS_DIR, open_scenario
from .core.replay import Replay, replay
from .core.scenarios import ScenarioError
from .core.serialize import replay_json
from .core.settings import SettingsError, parse_settings

SETTING_FLAGS = ("strategy", "window", "threshold", "keep", "counter", "preview")


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line, like every other error of this command."""

    def error(self, message: str):
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m webapp", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    play = commands.add_parser("replay", help="replay one scenario call by call")
    play.add_argument("scenario", help="a scenario id from scenarios/, or a path to a .toml scenario or .json transcript")
    for flag in SETTING_FLAGS:
        play.add_argument(f"--{flag}")
    play.add_argument("--keep-facts", action="store_true", default=None, help="tell the summarizer the critical facts")
    play.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    commands.add_parser("list", help="list the built-in scenarios")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            return _list()
        scenario = open_scenario(args.scenario)
        values = {flag: getattr(args, flag) for flag in SETTING_FLAGS}
        values["keep_facts"] = args.keep_facts
        settings = parse_settings(values, scenario.settings)
        result = replay(scenario, settings)
    except (ScenarioError, SettingsError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.json:
        json.dump(replay_json(result), sys.stdout, ensure_ascii=False, indent=1)
        print()
    else:
        print(table(result))
    return 0


def _list() -> int:
    from .core.scenarios import load_library

    library = load_library(SCENARIOS_DIR)
    for scenario in library.scenarios.values():
        print(f"{scenario.id:24} {scenario.text('title')}: {scenario.text('lesson')}")
    for error in library.errors:
        print(f"error: {error}", file=sys.stderr)
    return 0


def table(result: Replay) -> str:
    s = result.settings
    lines = [
        f"{result.scenario.text('title')} · strategy {s.strategy} · window {s.window:,} · "
        f"line {s.threshold:.0%} ({s.limit:,.0f}) · keep {s.keep} · counter {s.counter}",
        f"{'call':>4} {'req':>3} {'tokens':>7} {'window':>6}  {'compaction':<46} {'sent so far':>11}",
    ]
    for call in result.calls:
        lines.append(
            f"{call.number:>4} {call.request_number:>3} {call.tokens:>7,} {call.tokens / s.window:>6.0%}  "
            f"{describe_compaction(call)[:46]:<46} {call.sent_total:>11,}"
        )
    lines += [f"warning: {w}" for w in result.warnings]
    return "\n".join(lines)


def describe_compaction(call) -> str:
    notes = []
    c = call.compaction
    if c is not None:
        done = []
        if c.truncated:
            done.append(f"truncated {len(c.truncated)}")
        if c.dropped:
            done.append(f"dropped {len(c.dropped)}")
        if c.summarized:
            done.append(f"summarized {len(c.summarized)}")
        notes.append(f"{c.tokens_before:,}→{c.tokens_after:,} " + (", ".join(done) if done else "nothing to compact"))
    if call.overflow:
        notes.append("OVERFLOW")
    return "; ".join(notes) or "-"
