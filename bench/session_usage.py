"""The table of docs/transcripts.md, "Sessions as they come off disk": each fixture of
tests/fixtures/sessions/ read or not, its calls, the first call as the playground counts it
(the session's own settings, the estimate counter, strategy none) beside what the provider
recorded, and the median per-call difference (counted - recorded) over the calls that recorded
usage: before the reconciliation (no unlogged part in the floor) and after it, with the
ratio fit on the session's calls (analysis/usage.py). Calls are numbered as the replay numbers
them (engine/recorded.py).

    python -m bench.session_usage
"""

from __future__ import annotations

import statistics
from pathlib import Path

from webapp.core.analysis.usage import usage_fit
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
        return f"| `{name}` | no: {str(error).split(': ', 1)[1]} | | | |"
    result = replay(scenario, parse_settings({"strategy": "none"}, scenario.settings))
    recorded = {call.number: call.recorded.input_tokens for call in result.calls if call.recorded}
    if not recorded:
        return f"| `{name}` | yes ({scenario.origin.format}) | {len(result.calls)} | {result.calls[0].tokens:,} counted, none recorded | | |"
    missing = result.unlogged.tokens
    before = {call.number: call.tokens - missing for call in result.calls}  # the floor without the unlogged part
    after = {call.number: call.tokens for call in result.calls}
    first = min(recorded)
    fit = usage_fit(result)
    ratio = f"{fit.ratio:.2f} (±{fit.error:.0%}, {fit.fit_calls} calls)" if fit.ratio is not None else "no growth to fit"
    return (
        f"| `{name}` | yes ({scenario.origin.format}) | {len(result.calls)} | call {first}: {before[first]:,} → {after[first]:,} counted vs "
        f"{recorded[first]:,} recorded | {_median(before, recorded):+,.0f} → {_median(after, recorded):+,.0f} over {len(recorded)} calls | {ratio} |"
    )


def _median(counted: dict[int, int], recorded: dict[int, int]) -> float:
    return statistics.median(counted[call] - recorded[call] for call in recorded)


def main() -> None:
    print("| fixture | read | calls | first call: counted (before → after) vs recorded | median per-call difference (before → after) | ratio recorded ÷ counted |")
    print("|---|---|---|---|---|---|")
    for path in sorted(SESSIONS.glob("*/*")):
        if path.suffix in (".json", ".jsonl", ".md"):
            print(row(path))


if __name__ == "__main__":
    main()
