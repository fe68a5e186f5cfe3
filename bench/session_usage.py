"""The table of docs/transcripts.md, "Sessions as they come off disk": each fixture of
tests/fixtures/sessions/ read or not, its calls, the first call as the playground counts it
(default settings and counter) beside what the provider recorded, and the median per-call
difference (counted - recorded) over the calls that recorded usage.

    python -m bench.session_usage
"""

from __future__ import annotations

import statistics
from pathlib import Path

from webapp.core.engine.replay import replay
from webapp.core.inputs.library import load_file
from webapp.core.inputs.scenarios import ScenarioError
from webapp.core.settings import parse_settings

SESSIONS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "sessions"


def row(path: Path) -> str:
    name = path.relative_to(SESSIONS)
    try:
        scenario = load_file(path)
    except ScenarioError as error:
        return f"| `{name}` | no: {str(error).split(': ', 1)[1][:90]} | | | |"
    result = replay(scenario, parse_settings({}, scenario.settings))
    counted = {call.number: call.tokens for call in result.calls}
    recorded = {usage.call: usage.input_tokens for usage in scenario.origin.usage if usage.call in counted}
    if not recorded:
        return f"| `{name}` | yes ({scenario.origin.format}) | {len(result.calls)} | {counted.get(1, 0):,} counted, none recorded | |"
    first = min(recorded)
    median = statistics.median(counted[call] - recorded[call] for call in recorded)
    return (
        f"| `{name}` | yes ({scenario.origin.format}) | {len(result.calls)} | call {first}: {counted[first]:,} counted vs "
        f"{recorded[first]:,} recorded | {median:+,.0f} over {len(recorded)} calls |"
    )


def main() -> None:
    print("| fixture | read | calls | first call: counted vs recorded | median per-call difference |")
    print("|---|---|---|---|---|")
    for path in sorted(SESSIONS.glob("*/*")):
        if path.suffix in (".json", ".jsonl", ".md"):
            print(row(path))


if __name__ == "__main__":
    main()
