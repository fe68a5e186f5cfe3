"""Real Claude Code sessions replay one call per model request: every line of one API response
(one `message.id`) is one call, whatever is written between its lines, and a request the user
interrupted is none. The expected calls come from a reader written here, walking the raw file
as Claude Code resumes it, never from the app's reader. Also: the claude-code policy's line is
Claude Code's own auto-compact line, and it fires where the real session compacted."""

from __future__ import annotations

import lzma
import json
from pathlib import Path

import pytest

from webapp.core.engine.recorded import recorded_compactions
from webapp.core.engine.replay import replay
from webapp.core.inputs.library import load_file
from webapp.core.settings import Settings, parse_settings, starting_point

FIXTURES = Path(__file__).parent / "fixtures"
CLAUDE_CODE = FIXTURES / "sessions" / "claude-code"
# Whole sessions of 2.7 and 3.2 MB, kept xz-compressed (byte for byte once unpacked): each
# auto-compacted, and no contiguous cut under 400 KB holds both a user request and the calls
# before its compaction. The second one's compact_boundary names a logical parent never written.
AUTO_COMPACTED = FIXTURES / "compressed" / "claude-code-spotter-258c7280-auto-compaction.jsonl.xz"
UNLINKED = FIXTURES / "compressed" / "claude-code-spotter-4d5611e5-compaction-unlinked.jsonl.xz"
INTERRUPTIONS = ("[Request interrupted by user]", "[Request interrupted by user for tool use]")


def _unpacked(path: Path, folder: Path) -> Path:
    if path.suffix != ".xz":
        return path
    target = folder / path.stem
    target.write_bytes(lzma.decompress(path.read_bytes()))
    return target


def _model_calls(path: Path) -> list[int | None]:
    """Each model call's recorded input, in order, read straight from the file: the chain from
    the last message back by parentUuid (logicalParentUuid across a compaction), the replies on
    it grouped by message.id (a reply's lines may sit off the chain), each counted once with the
    usage of its last line; a request left after the last reply is one more call (None: nothing
    recorded) unless the user interrupted it."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    own = any("uuid" in record and not record.get("isSidechain") for record in records)
    lines = [record for record in records if "uuid" in record and not (own and record.get("isSidechain"))]
    by_uuid = {record["uuid"]: record for record in lines}
    leaf = [record for record in lines if record.get("type") in ("user", "assistant", "system")][-1]
    chain = set()
    while leaf is not None and leaf["uuid"] not in chain:
        chain.add(leaf["uuid"])
        parent = by_uuid.get(leaf.get("parentUuid") or leaf.get("logicalParentUuid"))
        if parent is None and leaf.get("subtype") == "compact_boundary":  # its logical parent never written
            parent = next((r for r in reversed(lines[: lines.index(leaf)]) if r.get("type") in ("user", "assistant")), None)
        leaf = parent
    replies = [record["message"]["id"] for record in lines if record["uuid"] in chain and record.get("type") == "assistant"]
    usage = {record["message"]["id"]: record["message"]["usage"] for record in lines if record.get("type") == "assistant"}
    calls = [sum(usage[reply].get(key) or 0 for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")) for reply in dict.fromkeys(replies)]
    ordered = [record for record in lines if record["uuid"] in chain and record.get("type") in ("user", "assistant")]
    last = ordered[-1]
    if last["type"] == "user" and not last.get("isCompactSummary"):
        content = last["message"]["content"]
        texts = [content] if isinstance(content, str) else [block.get("text") for block in content]
        calls += [] if any(text in INTERRUPTIONS for text in texts) else [None]
    return calls


def _replayed(path: Path, **settings) -> list:
    scenario = load_file(path)
    return replay(scenario, scenario.settings.model_copy(update={"strategy": "none", **settings})).calls


SESSIONS = [
    # A reply split by the results of tools that ran while it streamed (lines 34 and 37, the
    # result at 36 between), a parallel call and its result on a branch of their own (lines 30
    # and 32), an interrupted request in the middle (18) and one at the end (39).
    CLAUDE_CODE / "spotter-tool_heavy.jsonl",
    # Claude Code 2.0.76, a request interrupted while it ran (line 17 here).
    CLAUDE_CODE / "cctrace-v2.0.76-lines-208-303-interrupted.jsonl",
    CLAUDE_CODE / "vibecodingtracker-claude-code-v1.0.95.jsonl",
    AUTO_COMPACTED,
    UNLINKED,
]


@pytest.mark.parametrize("fixture", SESSIONS, ids=lambda path: path.name)
def test_each_model_call_the_file_records_is_one_replayed_call_with_its_recorded_input(fixture, tmp_path):
    path = _unpacked(fixture, tmp_path)
    expected = _model_calls(path)
    calls = _replayed(path)
    assert [call.recorded.input_tokens if call.recorded else None for call in calls] == expected


def test_a_reply_with_a_line_and_a_result_off_the_chain_is_one_call_with_both_its_tools():
    calls = _replayed(CLAUDE_CODE / "spotter-tool_heavy.jsonl")
    # The reply of lines 27-30 calls a web search (line 29) and a glob (line 30, whose line and
    # result, 32, hang on a branch of their own): one call, and both results go with the next.
    assert len(calls) == 4
    reply = [block.message for block in calls[3].blocks if block.role == "assistant"][-1]
    names = [call["function"]["name"] for call in reply["tool_calls"]]
    results = {block.message["tool_call_id"] for block in calls[3].blocks if block.role == "tool"}
    assert names == ["WebSearch", "Glob"] and {call["id"] for call in reply["tool_calls"]} <= results


def test_a_compaction_whose_logical_parent_was_never_written_keeps_the_history_before_it(tmp_path):
    scenario = load_file(_unpacked(UNLINKED, tmp_path))
    assert [values for message, values in scenario.origin.notes if "logicalParentUuid" in message] == [{"count": 1}]
    assert not scenario.prefix and scenario.call_count == 139  # 61 calls before the compaction (line 754), 78 after
    assert list(recorded_compactions(scenario)) == [62]


def test_an_interrupted_request_is_said_and_not_replayed():
    scenario = load_file(CLAUDE_CODE / "spotter-tool_heavy.jsonl")
    notes = [values for message, values in scenario.origin.notes if "interrupted" in message]
    assert notes == [{"count": 1, "line": 18}, {"line": 39, "count": 2}]
    assert scenario.call_count == 4


# Claude Code 2.1.21 and later (checked in the published cli.js of 2.1.21, 2.1.22, 2.1.30):
# auto-compact at the window minus min(the model's max output, 20,000) minus a 13,000-token
# buffer. Sonnet 4.5's max output is min(CLAUDE_CODE_MAX_OUTPUT_TOKENS' default 32,000, its cap
# 64,000); 2.0.0 to 2.1.20 (2.0.76 among them) reserved that whole 32,000: 155,000.
WINDOW = 200_000
MAX_OUTPUT_SONNET_4_5 = min(32_000, 64_000)


def test_the_claude_code_line_is_its_auto_compact_threshold_at_200000_tokens():
    line = round(starting_point(Settings(), "claude-code", WINDOW).limit)
    assert line == WINDOW - min(MAX_OUTPUT_SONNET_4_5, 20_000) - 13_000 == 167_000


def _version(path: Path) -> tuple[int, ...]:
    """The Claude Code version the file's last line that names one names, read straight from it."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    version = [record["version"] for record in records if isinstance(record.get("version"), str)][-1]
    return tuple(int(part) for part in version.split("."))


@pytest.mark.parametrize(
    ("fixture", "line"),
    [("cctrace-v2.0.76-lines-208-303-interrupted.jsonl", 155_000), ("spotter-tool_heavy.jsonl", 167_000)],
    ids=["2.0.76", "2.1.38"],
)
def test_the_claude_code_line_is_that_of_the_version_that_wrote_the_session(fixture, line):
    """2.0.0 to 2.1.20 reserve the whole max output (CLAUDE_CODE_MAX_OUTPUT_TOKENS' default 32,000,
    under the 64,000 cap of Sonnet 4.5 and of Opus 4.5, the 2.0.76 session's model), 2.1.21 and
    later at most 20,000: the page starts from the line of the Claude Code that wrote the session."""
    path = CLAUDE_CODE / fixture
    reserve = MAX_OUTPUT_SONNET_4_5 if (2, 0, 0) <= _version(path) < (2, 1, 21) else min(MAX_OUTPUT_SONNET_4_5, 20_000)
    scenario = load_file(path)
    settings = parse_settings({"strategy": "claude-code", "window": WINDOW}, scenario.settings)
    assert settings.limit == WINDOW - reserve - 13_000 == line
    assert ("output_reserve" in scenario.origin.settings_from_file) == (reserve != 20_000)
    chosen = parse_settings({"strategy": "claude-code", "window": WINDOW, "output_reserve": "25000"}, scenario.settings)
    assert chosen.limit == WINDOW - 25_000 - 13_000


def test_a_session_of_an_older_claude_code_says_the_strategy_follows_its_line():
    scenario = load_file(CLAUDE_CODE / "cctrace-v2.0.76-lines-208-303-interrupted.jsonl")
    older = [values for message, values in scenario.origin.notes if message.startswith("Written by Claude Code")]
    assert older == [{"version": "2.0.76", "reserve": 32_000, "buffer": 13_000, "current": 20_000}]
    assert scenario.settings.output_reserve == 32_000
    assert not any(message.startswith("Written by") for message, _ in load_file(CLAUDE_CODE / "spotter-tool_heavy.jsonl").origin.notes)


# The provider's count of each reply's request in the synthetic session below: it passes
# 155,000 (2.0.76's line at 200,000) with the fifth reply, and never reaches 167,000 (2.1.30's).
SYNTHETIC_INPUTS = (100_000, 120_000, 140_000, 150_000, 160_000, 161_000, 162_000)


def synthetic_session(version: str) -> str:
    """A Claude Code session of plain requests and replies on claude-sonnet-4-5, each reply with
    its usage, as Claude Code writes them (one line per record, chained by parentUuid)."""
    lines, parent = [], None
    for number, tokens in enumerate(SYNTHETIC_INPUTS, start=1):
        for role, content, extra in (
            ("user", f"request {number}", {}),
            ("assistant", [{"type": "text", "text": f"reply {number}"}],
             {"id": f"msg_{number}", "model": "claude-sonnet-4-5-20250929",
              "usage": {"input_tokens": 3, "cache_creation_input_tokens": 1_000, "cache_read_input_tokens": tokens - 1_003, "output_tokens": 40}}),
        ):
            uuid = f"{role}-{number}"
            lines.append(json.dumps({
                "parentUuid": parent, "isSidechain": False, "sessionId": "s", "version": version, "type": role, "uuid": uuid,
                "message": {"role": role, "content": content, **extra},
            }))
            parent = uuid
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("version", ["2.0.76", "2.1.30"])
def test_the_claude_code_policy_compacts_where_the_sessions_version_would(version, tmp_path):
    """Before each call Claude Code compares the last reply's recorded input (input, cache writes
    and reads) plus what came since with its line: 2.0.76 at 155,000 compacts before the call
    after the first reply past it; 2.1.30 at 167,000 never does here."""
    path = tmp_path / "session.jsonl"
    path.write_text(synthetic_session(version), encoding="utf-8")
    line = WINDOW - (32_000 if version == "2.0.76" else 20_000) - 13_000
    records = [json.loads(text) for text in path.read_text(encoding="utf-8").splitlines()]
    recorded = [sum(r["message"]["usage"][key] for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")) for r in records if r["type"] == "assistant"]
    expected = next((number + 1 for number, tokens in enumerate(recorded, start=1) if tokens > line), None)
    assert expected == (6 if version == "2.0.76" else None)
    scenario = load_file(path)
    calls = replay(scenario, parse_settings({"strategy": "claude-code"}, scenario.settings)).calls
    assert next((call.number for call in calls if call.compaction is not None), None) == expected


@pytest.mark.parametrize(("fixture", "tokens"), [(AUTO_COMPACTED, 167_094), (UNLINKED, 170_251)], ids=["258c7280", "4d5611e5"])
def test_the_claude_code_policy_compacts_within_one_call_of_the_real_auto_compaction(fixture, tokens, tmp_path):
    """Claude Code 2.1.39 on claude-opus-4-6 (a 200,000-token window without the 1M beta)
    auto-compacted: 258c7280 before call 103 at 167,094 tokens (call 102's recorded 166,759,
    its 301 output tokens and the 34 of the result after it). Counted with characters / 4 from
    the messages alone, the replay stays near 134,000 and never reaches the line."""
    scenario = load_file(_unpacked(fixture, tmp_path))
    (real, compaction), = recorded_compactions(scenario).items()
    assert (compaction.trigger, compaction.tokens_before) == ("auto", tokens)
    settings = starting_point(scenario.settings, "claude-code", WINDOW)
    first = next((call.number for call in replay(scenario, settings).calls if call.compaction is not None), None)
    assert first is not None and abs(first - real) <= 1, (first, real)


def test_the_play_page_starts_from_the_sessions_reserve_and_the_urls_wins(tmp_path):
    from webapp import create_app

    client = create_app({"TESTING": True, "TRANSCRIPT_DIR": str(tmp_path)}).test_client()
    text = (CLAUDE_CODE / "cctrace-v2.0.76-lines-208-303-interrupted.jsonl").read_text(encoding="utf-8")
    page = client.post("/transcripts", data={"transcript": text}).headers["Location"].split("?")[0]
    own = client.get(f"{page}.json?strategy=claude-code").get_json()["settings"]
    assert (own["output_reserve"], own["threshold"]) == (32_000, 0.775)  # 155,000 of 200,000
    chosen = client.get(f"{page}.json?strategy=claude-code&output_reserve=20000").get_json()["settings"]
    assert (chosen["output_reserve"], chosen["threshold"]) == (20_000, 0.835)  # 167,000
    html = client.get(f"{page}?strategy=claude-code").get_data(as_text=True)
    assert 'name="output_reserve" type="number"' in html and 'value="32000"' in html
    assert "output_reserve=" not in html, "links leave the session's own reserve out"
    assert "output_reserve=20000" in client.get(f"{page}?strategy=claude-code&output_reserve=20000").get_data(as_text=True)
    refused = client.get(f"{page}?strategy=claude-code&output_reserve=-5")
    assert refused.status_code == 400
    assert "output_reserve: got &#39;-5&#39;, expected a whole number from 0 to 10000000" in refused.get_data(as_text=True)
