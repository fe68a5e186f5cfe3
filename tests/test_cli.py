"""The replay command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from webapp.cli import main
from webapp.core.inputs.library import open_scenario
from webapp.core.engine.replay import replay

ROOT = Path(__file__).resolve().parents[1]


def test_the_table_shows_each_call_and_the_bill(capsys):
    assert main(["replay", "bike-shop", "--strategy", "truncate"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert "strategy truncate" in lines[0] and "window 8,000" in lines[0]
    rows = [line for line in lines if line.strip()[:1].isdigit()]
    assert len(rows) == open_scenario("bike-shop").call_count
    assert "truncated 1" in rows[4] and "→" in rows[4]


def test_json_gives_each_request_exactly_as_sent(capsys):
    assert main(["replay", "bike-shop", "--counter", "o200k_base", "--keep", "1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    scenario = open_scenario("bike-shop")
    expected = replay(scenario, scenario.settings.model_copy(update={"counter": "o200k_base", "keep": 1}))
    assert data["settings"]["keep"] == 1
    assert [c["tokens"] for c in data["calls"]] == [c.tokens for c in expected.calls]
    assert [c["request"] for c in data["calls"]] == [c.request(scenario.prefix) for c in expected.calls]
    assert data["calls"][0]["request"][0] == {"role": "system", "content": scenario.system}


def test_a_transcript_file_replays(tmp_path, capsys):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([{"role": "system", "content": "s"}, {"role": "user", "content": "hello"}]))
    assert main(["replay", str(path), "--json"]) == 0
    calls = json.loads(capsys.readouterr().out)["calls"]
    assert calls[0]["request"] == [{"role": "system", "content": "s"}, {"role": "user", "content": "hello"}]


@pytest.mark.parametrize(
    "args, message",
    [
        (["replay", "no-such"], "no such scenario"),
        (["replay", "bike-shop", "--window", "abc"], "window: got 'abc', expected a whole number"),
        (["replay", "bike-shop", "--threshold", "7"], "threshold"),
        (["replay", "bike-shop", "--strategy", "magic"], "one of none, truncate"),
        (["replay", "bike-shop", "--counter", "gpt2"], "counter"),
        (["replay", "bike-shop", "--colour", "red"], "unrecognized arguments: --colour red"),
        (["replay"], "the following arguments are required: scenario"),
    ],
)
def test_bad_arguments_give_one_line_and_status_2(args, message):
    out = subprocess.run([sys.executable, "-m", "webapp", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("error: ")
    assert message in out.stderr
    assert "Traceback" not in out.stderr


def test_a_bad_file_names_file_and_field(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text('id = "x"\ntitle = "t"\nlesson = "l"\nsystem = "s"\n[[chat]]\nuser = 3\n')
    out = subprocess.run([sys.executable, "-m", "webapp", "replay", str(path)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "broken.toml" in out.stderr and "chat[0].user" in out.stderr


def test_agent_run_flags_reach_the_replay_and_the_table(capsys):
    trajectory = str(ROOT / "tests" / "fixtures" / "trajectories" / "swe-agent-ctf-i-got-id.json")
    flags = ["--window", "8000", "--counter", "o200k_base", "--keep", "3", "--keep-unit", "tool_results"]
    assert main(["replay", trajectory, *flags, "--strategy", "clear-tool-results", "--clear-at-least", "1000", "--exclude-tools", "create", "--clear-tool-inputs"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "strategy clear-tool-results" in line)
    assert "keep 3 tool results" in header and "clear at least 1,000, never create, inputs too" in header
    assert "cleared " in out and "OVERFLOW" not in out
    assert main(["replay", trajectory, *flags, "--strategy", "clear-tool-results", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["settings"]["keep_unit"] == "tool_results"
    edits = [edit for call in data["calls"] for edit in call["applied_edits"]]
    assert edits and all(edit["type"] == "clear_tool_uses_20250919" and edit["cleared_input_tokens"] > 0 for edit in edits)
    assert main(["compare", trajectory, *flags]) == 0
    assert "Cheapest safe choice" in capsys.readouterr().out


def test_the_output_reserve_flag_moves_claude_codes_line_and_the_header_says_it(capsys):
    session = str(ROOT / "tests" / "fixtures" / "sessions" / "claude-code" / "cctrace-v2.0.76-lines-208-303-interrupted.jsonl")
    assert main(["replay", session, "--strategy", "claude-code"]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if "strategy claude-code" in line)
    assert "line 78% (155,000)" in header and "output reserve 32,000" in header, "Claude Code 2.0.76's own reserve"
    assert main(["replay", session, "--strategy", "claude-code", "--output-reserve", "20000"]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if "strategy claude-code" in line)
    assert "(167,000)" in header and "output reserve 20,000" in header
    assert main(["replay", session, "--strategy", "claude-code", "--output-reserve", "-1"]) == 2
    assert "output_reserve: got '-1', expected a whole number from 0 to 10000000" in capsys.readouterr().err


def test_a_bad_keep_unit_is_named_with_what_is_accepted(capsys):
    assert main(["replay", "bike-shop", "--keep-unit", "messages"]) == 2
    assert "keep_unit: got 'messages', expected one of requests, tool_results, turns" in capsys.readouterr().err
    assert main(["replay", "bike-shop", "--exclude-tools", "rm -rf"]) == 2
    assert "exclude_tools: got 'rm -rf', expected at most 10 tool names separated by commas" in capsys.readouterr().err


def test_keep_is_said_in_its_unit_and_number(capsys):
    for flags, words in ((["--keep", "1"], "keep 1 request ·"), (["--keep", "2", "--keep-unit", "turns"], "keep 2 turns ·"), (["--keep", "1", "--keep-unit", "tool_results"], "keep 1 tool result ·")):
        assert main(["replay", "bike-shop", *flags]) == 0
        assert words in capsys.readouterr().out


def test_a_reader_that_stops_early_gets_no_traceback():
    """`replay … | head -1`: the output is cut short on purpose, which is not an error to report."""
    run = subprocess.Popen(
        [sys.executable, "-m", "webapp", "replay", "long-haul", "--json"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert run.stdout.readline().strip() == b"{"
    run.stdout.close()  # as `head -1` does once it has its line
    stderr = run.stderr.read().decode()
    run.wait(timeout=60)
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr
    assert run.returncode == 141  # what a shell reports for a command stopped by SIGPIPE


# What `replay` of a transcript does not need, and took a third of its start before issue 32:
# the web layer, the comparison and the sweep, the recorder, the lessons' models, and the
# libraries only an image (PIL), a long run of whitespace (regex) or a remote summarizer
# (http.client) use.
NOT_FOR_A_REPLAY = (
    "flask", "flask_babel", "jinja2", "werkzeug", "gunicorn", "webapp.web", "webapp.recorder",
    "webapp.core.analysis.compare", "webapp.core.analysis.sweep", "webapp.core.inputs.lessons",
    "PIL", "regex", "http.client",
)


def test_a_replay_imports_only_what_it_needs():
    script = "import sys\nfrom webapp.cli import main\nmain(['replay', sys.argv[1]])\nprint(' '.join(sys.modules), file=sys.stderr)"
    run = subprocess.run(
        [sys.executable, "-c", script, "tests/fixtures/transcripts/chat-tool-call.json"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert any(line.split()[:2] == ["call", "req"] for line in run.stdout.splitlines()), "the replay printed its table"
    loaded = run.stderr.splitlines()[-1].split()
    needless = [name for name in loaded if any(name == each or name.startswith(each + ".") for each in NOT_FOR_A_REPLAY)]
    assert not needless, f"replay imported {needless}"
