"""The table of docs/transcripts.md, "Real sessions, counted and recorded": each fixture of
tests/fixtures/sessions/ read or not, where it comes from (SOURCES.md), the model calls it
records and the calls the replay makes, the window and where it came from, and each call's
count at strategy none (the session's own settings) against the provider's recorded input:
the median and largest error over the calls that recorded usage before the harness's first
recorded compaction (after it, the harness sent a compacted history and the replay at strategy
none the whole one), as the replay counts them (built on the last recorded call,
engine/recorded.py) and as the counter alone counts them. The whole sessions kept compressed in
tests/fixtures/compressed/ are read too.

    python -m bench.session_usage
"""

from __future__ import annotations

import lzma
import re
import statistics
import tempfile
from pathlib import Path

from webapp.core.counting.windows import model_window
from webapp.core.engine.recorded import recorded_compactions
from webapp.core.engine.replay import replay
from webapp.core.inputs.library import load_file
from webapp.core.inputs.scenarios import ScenarioError
from webapp.core.settings import parse_settings

SESSIONS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "sessions"
COMPRESSED = SESSIONS.parent / "compressed"


def sources() -> dict[str, str]:
    """Each fixture's repository, from the table of SOURCES.md ("generated" for ours)."""
    out, source = {}, "?"
    for line in (SESSIONS / "SOURCES.md").read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        if not cells[2].startswith("same repository"):  # else the row above's
            source = "generated" if "generated" in cells[2] else cells[2].split(" @ ")[0].strip("* ")
        for name in re.findall(r"`([^`]+)`", cells[0]):
            out[name] = source
    return out


def _window(scenario) -> str:
    origin = scenario.origin
    if origin.window is not None and scenario.settings.window == origin.window:
        return f"{origin.window:,} (the file)"
    named = model_window(origin.model)
    if named is not None and scenario.settings.window == named.window:
        return f"{named.window:,} ({origin.model})"
    return f"{scenario.settings.window:,} (not known)"


def _errors(calls, attribute: str) -> str:
    shares = [abs(getattr(call, attribute) - call.recorded.input_tokens) / call.recorded.input_tokens for call in calls]
    return f"{statistics.median(shares):.1%} / {max(shares):.1%}"


def row(path: Path, source: str, name: str) -> str:
    try:
        scenario = load_file(path)
    except ScenarioError as error:
        return f"| `{name}` | {source} | no: {str(error).split(': ', 1)[1]} | | | | | |"
    result = replay(scenario, parse_settings({"strategy": "none"}, scenario.settings))
    harness = min(recorded_compactions(scenario), default=len(result.calls) + 1)
    recorded = [call for call in result.calls if call.recorded is not None and call.recorded.input_tokens and call.number < harness]
    usage = len(scenario.origin.usage) if scenario.origin else 0
    cells = [f"`{name}`", source, f"yes ({scenario.origin.format})", str(usage or "none"), str(len(result.calls)), _window(scenario)]
    if not recorded:
        return "| " + " | ".join([*cells, "", ""]) + " |"
    return "| " + " | ".join([*cells, _errors(recorded, "tokens"), _errors(recorded, "counted")]) + " |"


def main() -> None:
    print(
        "| fixture | source | read | calls recorded | calls replayed | window (from) "
        "| error, median / max | counter alone, median / max |"
    )
    print("|---|---|---|---:|---:|---|---|---|")
    known = sources()
    for path in sorted(SESSIONS.glob("*/*")):
        if path.suffix in (".json", ".jsonl", ".md"):
            name = str(path.relative_to(SESSIONS))
            print(row(path, known.get(name, "?"), name))
    with tempfile.TemporaryDirectory() as folder:
        for packed in sorted(COMPRESSED.glob("*.xz")):
            path = Path(folder) / packed.stem
            path.write_bytes(lzma.decompress(packed.read_bytes()))
            print(row(path, known.get(f"../compressed/{packed.name}", "?"), f"../compressed/{packed.name}"))


if __name__ == "__main__":
    main()
