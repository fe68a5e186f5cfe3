"""A session's recorded usage reconciled with the replay (engine/recorded.py,
analysis/usage.py): the floor's unlogged part, each call's recorded figure on every view, the
ratio fit, the harness's compaction at its call, and the settings taken from the file."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings as hypothesis_settings
from hypothesis import strategies as st

from webapp.cli import main
from webapp.core.analysis.usage import fit_ratio
from webapp.core.engine.recorded import recorded_compactions, recorded_usage
from webapp.core.engine.replay import replay
from webapp.core.inputs.library import load_file
from webapp.core.model import Origin, RecordedUsage, Scenario, ScriptMessage
from webapp.core.settings import Settings

SESSIONS = Path(__file__).parent / "fixtures" / "sessions"
CLAUDE = SESSIONS / "claude-code" / "vibecodingtracker-claude-code-v1.0.95.jsonl"
SPOTTER = SESSIONS / "claude-code" / "spotter-ae4a77f8-lines-1300-1700-compaction.jsonl"


def _open(client, path: Path) -> str:
    """The play page's link of a session uploaded as a file."""
    response = client.post("/transcripts", data={"file": (io.BytesIO(path.read_bytes()), path.name)}, content_type="multipart/form-data")
    assert response.status_code == 303
    return response.headers["Location"]


def test_the_first_call_of_a_claude_code_session_counts_what_the_log_leaves_out(client):
    link = _open(client, CLAUDE)
    data = client.get(link.replace("/play/", "/play/", 1).split("?")[0] + ".json").get_json()
    recorded = data["recorded_usage"]
    assert data["current"]["recorded"]["input_tokens"] == 15_257
    # The floor holds the unlogged part, so call 1 counts exactly what Claude recorded.
    assert data["current"]["tokens"] == 15_257 and recorded["measured_at_call"] == 1
    assert recorded["unlogged_tokens"] > 14_000 and data["floor_tokens"] >= recorded["unlogged_tokens"]
    assert 1 < recorded["ratio"] < 2 and 0 < recorded["error"] < 0.5 and recorded["fit_calls"] == 31
    page = client.get(link).get_data(as_text=True)
    assert "Recorded by the provider for this call: 15,257 tokens" in page
    assert "Not in the log: " in page and "from the usage recorded at call 1" in page
    assert "off by" in page and "not applied to the counts" in page
    # The model's window came from the file, and the page says so.
    assert data["settings"]["window"] == 200_000
    assert "the model the file names" in page


def test_the_cli_table_and_json_show_the_recorded_figure(capsys):
    assert main(["replay", str(CLAUDE)]) == 0
    out = capsys.readouterr().out
    assert "recorded" in out.splitlines()[next(i for i, line in enumerate(out.splitlines()) if line.startswith("call"))]
    assert "not in the log: " in out and "from the usage recorded at call 1" in out
    row = next(line for line in out.splitlines() if line.strip().startswith("1 "))
    assert row.rstrip().endswith("15,257")
    assert main(["replay", str(CLAUDE), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["calls"][0]["recorded"]["input_tokens"] == data["calls"][0]["tokens"] == 15_257
    assert data["calls"][-1]["recorded"] is None  # the script ends on a request the log never answered
    assert data["read_as"]["settings_from_file"] == ["window", "counter"]


def test_recorded_calls_are_numbered_as_the_replay_numbers_them():
    # The spotter file starts mid-session: 21 assistant messages sit in the prefix, and are no calls.
    scenario = load_file(SPOTTER)
    assert sum(1 for message in scenario.prefix if message.get("role") == "assistant") == 21
    usage = recorded_usage(scenario)
    # 19 replies after it, each one call however many lines it is written on.
    assert min(usage) == 1 and usage[1].call == 22 and max(usage) == scenario.call_count == 19
    assert list(recorded_compactions(scenario)) == [1]


def test_the_harness_compaction_is_in_the_event_log_at_its_call(client):
    link = _open(client, SPOTTER)
    data = client.get(link.split("?")[0] + ".json").get_json()
    events = [event for event in data["current"]["events"] if event["kind"] == "recorded_compaction"]
    assert events and events[0]["before"] == 142_431 and events[0]["summary"] > 1000
    assert data["settings"]["keep_unit"] == "tool_results" and data["settings"]["window"] == 200_000  # claude-opus-4-6 as Claude Code runs it
    page = client.get(link).get_data(as_text=True)
    assert "the harness compacted here, as its log records: 142,431" in page
    assert "KEEP counts tool results" in page


def test_the_cli_verdict_says_why_no_strategy_is_safe(capsys):
    assert main(["compare", str(CLAUDE), "--window", "8000"]) == 0
    out = capsys.readouterr().out
    verdict = out.split("verdict:")[1].splitlines()[1]
    assert verdict.startswith("  No strategy is safe at these settings. Overflowing the window: none, truncate")


def test_the_ratio_fit_recovers_a_known_ratio_and_its_error():
    points = [(1000 + 100 * k, 1000 + 130 * k) for k in range(6)]
    ratio, error = fit_ratio(points)
    assert ratio == pytest.approx(1.3) and error == pytest.approx(0, abs=1e-12)
    noisy = [(1000, 1000), (1100, 1140), (1200, 1250), (1300, 1400)]
    ratio, error = fit_ratio(noisy)
    assert 1.3 < ratio < 1.4 and 0 < error < 0.05


def test_the_ratio_fit_refuses_when_the_request_never_grew():
    assert fit_ratio([(500, 900)]) is None
    assert fit_ratio([(500, 900), (500, 950)]) is None


def _chat(texts: list[str]) -> list[ScriptMessage]:
    script = []
    for index, text in enumerate(texts):
        role = "user" if index % 2 == 0 else "assistant"
        script.append(ScriptMessage(f"m{index + 1}", {"role": role, "content": text}))
    return script


@hypothesis_settings(max_examples=40, deadline=None)
@given(
    texts=st.lists(st.text(min_size=1, max_size=200), min_size=2, max_size=8),
    recorded=st.integers(min_value=1, max_value=200_000),
    counter=st.sampled_from(["estimate", "cl100k_base", "o200k_base"]),
    window=st.integers(min_value=100, max_value=1_000_000),
)
def test_the_unlogged_part_never_leaves_call_1_below_its_recorded_count(texts, recorded, counter, window):
    usage = (RecordedUsage(1, recorded, None, None, "line 1"),)
    scenario = Scenario("s", {"en": "s"}, {"en": ""}, (), [], _chat(texts), kind="transcript", origin=Origin("claude-code", usage=usage))
    result = replay(scenario, Settings(counter=counter, window=window, strategy="none"))
    first = result.calls[0]
    assert first.recorded is not None and first.tokens >= recorded
    # And it adds no more than is missing: a count already above the recorded one gets nothing.
    assert result.unlogged.tokens == 0 or first.tokens == recorded


def test_the_well_says_the_harness_compacted_at_its_call_with_the_recorded_figures(client):
    """At the call the harness compacted, the well's top band says so, before → after as the
    log records them (its own count before, the provider's count of the request after); other
    calls say nothing of it."""
    link = _open(client, SPOTTER).split("?")[0]
    data = client.get(link + ".json").get_json()
    recorded = data["current"]["recorded"]["input_tokens"]
    well = client.get(link, headers={"HX-Request": "true", "HX-Target": "well"}).get_data(as_text=True)
    assert f"the harness compacted here: 142,431 → {recorded:,} tokens, as recorded" in well
    assert "the harness compacted here" not in client.get(link + "?call=2").get_data(as_text=True).split('class="log"')[0]
