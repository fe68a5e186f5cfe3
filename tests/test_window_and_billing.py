"""A session's window and bill from the session itself: the window its file records, else its
model's (counting/windows.py), else the page asks for it; the bill at its provider's prices
(analysis/provider_prices.py) unless the URL says otherwise; and "Read as" notes that say what
the well draws of what the log leaves out."""

from __future__ import annotations

import html
import io
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webapp.cli import main
from webapp.core.counting.windows import SEPARATORS, WINDOWS, model_window
from webapp.core.inputs.transcripts import parse_transcript, with_file_settings

SESSIONS = Path(__file__).parent / "fixtures" / "sessions"
CLAUDE = SESSIONS / "claude-code" / "vibecodingtracker-claude-code-v1.0.95.jsonl"
CODEX = SESSIONS / "codex" / "vibecodingtracker-codex-rollout.jsonl"
GEMINI = SESSIONS / "gemini-cli" / "vibecodingtracker-session.json"


def claude_code_session(model: str, words: int = 2000, growth: int = 3000) -> str:
    """A small Claude Code log of three turns naming `model`, each recording `growth` more input
    tokens than the one before (a redacted file records far more than its text holds)."""
    lines, parent = [], None
    for n in range(3):
        lines.append({"parentUuid": parent, "isSidechain": False, "type": "user", "sessionId": "s", "uuid": f"u{n}",
                      "message": {"role": "user", "content": f"question {n} " + "word " * words}})
        usage = {"input_tokens": 20_000 + n * growth, "output_tokens": 10}
        lines.append({"parentUuid": f"u{n}", "isSidechain": False, "type": "assistant", "sessionId": "s", "uuid": f"a{n}",
                      "message": {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": model,
                                  "content": [{"type": "text", "text": f"answer {n}"}], "usage": usage}})
        parent = f"a{n}"
    return "".join(json.dumps(line) + "\n" for line in lines)


def upload(client, name: str, content: bytes) -> str:
    """The play page's link of a session uploaded as a file."""
    response = client.post("/transcripts", data={"file": (io.BytesIO(content), name)}, content_type="multipart/form-data")
    assert response.status_code == 303, response.get_data(as_text=True)[:500]
    return response.headers["Location"].split("?")[0]


# --- The window -------------------------------------------------------------------------------


def test_a_session_naming_claude_sonnet_4_5_gets_its_window_and_says_so(client):
    link = upload(client, "s.jsonl", claude_code_session("claude-sonnet-4-5-20250929").encode())
    data = client.get(link + ".json").get_json()
    assert data["settings"]["window"] == 200_000
    assert data["window"] == {"tokens": 200_000, "from": "model", "source": model_window("claude-sonnet-4-5").source, "unknown": None}
    assert "litellm 1.110.2" in data["window"]["source"]
    page = client.get(link).get_data(as_text=True)
    assert "Window: 200,000 tokens, the context window of claude-sonnet-4-5-20250929" in page
    assert 'id="window-unknown"' not in page


def test_a_window_the_file_records_wins_over_the_model_and_is_said():
    scenario = parse_transcript(claude_code_session("claude-sonnet-4-5"), "s.jsonl")
    recorded = replace(scenario.origin, window=150_000, window_source="line 2, model_context_window", notes=())
    scenario = with_file_settings(replace(scenario, origin=recorded), [])
    assert scenario.settings.window == 150_000 and scenario.origin.window_from == "file"
    assert scenario.origin.notes[0] == ("Window: %(window)s tokens, as the file records it (%(source)s).", {"window": 150_000, "source": "line 2, model_context_window"})
    from webapp.core.output.serialize import window_json

    assert window_json(scenario, scenario.settings) == {"tokens": 150_000, "from": "file", "source": "line 2, model_context_window", "unknown": None}


def test_an_unknown_model_gets_no_small_window_and_the_page_asks_for_one(client):
    link = upload(client, "s.jsonl", claude_code_session("acme-coder-7", words=20).encode())
    data = client.get(link + ".json").get_json()
    assert data["settings"]["window"] == 8_000  # the playground's own, not a small chat's
    assert data["window"]["from"] == "default" and "acme-coder-7" in data["window"]["unknown"]
    page = client.get(link).get_data(as_text=True)
    warning = re.search(r'<p id="window-unknown"[^>]*>(.*?)</p>', page, re.S)
    assert warning and "The window is not known" in warning.group(1) and "acme-coder-7" in warning.group(1)
    # At the top, before the notes and the well; the settings' window field one click away.
    assert page.index('id="window-unknown"') < page.index('id="read-as"') < page.index('id="well"')
    assert 'href="#f-window"' in warning.group(1) and 'id="f-window"' in page
    # Once the user sets a window, the page stops asking.
    assert 'id="window-unknown"' not in client.get(link + "?window=32000").get_data(as_text=True)
    in_french = html.unescape(client.get(link + "?lang=fr").get_data(as_text=True))
    assert "La fenêtre n'est pas connue" in in_french and "Régler la fenêtre" in in_french


def test_the_cli_prints_the_same_line_for_an_unknown_window(tmp_path, capsys):
    path = tmp_path / "s.jsonl"
    path.write_text(claude_code_session("acme-coder-7", words=20))
    assert main(["replay", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("warning: The window is not known") and "acme-coder-7" in line for line in lines)
    assert main(["replay", str(path), "--window", "32000"]) == 0
    assert "The window is not known" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("name", "window"),
    [
        ("claude-sonnet-4-5-20250929", 200_000),
        ("anthropic/claude-sonnet-4-5", 200_000),
        ("openrouter/anthropic/claude-3.5-sonnet", 200_000),
        ("us.anthropic.claude-3-7-sonnet-20250219-v1:0", 200_000),
        ("claude-opus-4-5-20251101", 200_000),
        ("claude-haiku-4-5-20251001", 200_000),
        ("claude-sonnet-4-6", 1_000_000),
        ("models/gemini-2.5-pro", 1_048_576),
        ("gemini-3-pro-preview", 1_048_576),
        ("gemini-3-flash", 1_048_576),
        ("gemini-3.1-pro-preview", 1_048_576),
        ("gpt-5.1-codex", 272_000),
        ("gpt-5.2-codex", 272_000),
        ("gpt-5.3-codex", 272_000),
        ("gpt-5-codex", 272_000),
        ("gpt-5.4", 1_050_000),  # its own window, not gpt-5's
        ("GPT-4o-mini", 128_000),
        ("gpt-4.1-mini", 1_047_576),
        ("gpt-4-0613", 8_192),
        ("o1", 200_000),
        ("o1-mini", 128_000),
        ("o3-mini", 200_000),
        ("meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8", 1_000_000),
        ("llama-4-scout-17b-16e-instruct", 10_000_000),
        ("llama3.1:latest", 131_072),
        ("Qwen/Qwen3.5-397B-A17B", 262_144),
        ("qwen2.5-coder:7b", 32_768),
        ("qwen3:8b", 131_072),
        ("deepseek/deepseek-chat", 131_072),
        ("mistral/devstral-small-latest", 256_000),
        ("devstral-small-2505", 131_072),
        # Look-alikes the table does not know: no window, never a neighbour's.
        ("gpt-5.9", None),
        ("gpt-5x", None),
        ("gpt-50", None),
        ("o10", None),
        ("qwen3.7", None),
        ("lm_studio/qwen3.6-35b-a3b-uncensored", 262_144),
        ("openai/openrouter-llama-4-maverick", 1_000_000),
        ("llama3.2", 131_072),
        ("gpt-5.5", 1_050_000),
        ("aide-gpt-5", None),
        ("claude", None),
        ("", None),
        (None, None),
    ],
)
def test_the_model_table_matches_names_as_hosts_write_them(name, window):
    found = model_window(name)
    assert (found.window if found else None) == window


@given(
    entry=st.sampled_from(WINDOWS),
    separator=st.sampled_from(SEPARATORS),
    tail=st.text("abcdefghijklmnopqrstuvwxyz0123456789", max_size=12),
    host=st.sampled_from(["", "openrouter/", "together_ai/org/", "models/"]),
)
def test_a_known_name_with_a_suffix_or_a_host_path_keeps_at_least_its_entry(entry, separator, tail, host):
    found = model_window(host + entry.prefix.upper() + separator + tail)
    # Its own entry, or a longer one that names the same model more closely (gpt-4 → gpt-4-turbo).
    assert found is not None and found.prefix.startswith(entry.prefix)


# --- The bill ---------------------------------------------------------------------------------


def test_a_claude_session_is_billed_at_anthropics_prices_with_its_cache(client):
    link = upload(client, "s.jsonl", claude_code_session("claude-sonnet-4-5-20250929").encode())
    billing = client.get(link + ".json").get_json()["billing"]
    assert (billing["provider"], billing["cache"], billing["price"], billing["output_price"]) == ("anthropic", "anthropic", 3.0, 15.0)
    assert billing["cached_share"] == 0.1 and billing["session_default"]
    page = client.get(link).get_data(as_text=True)
    basis = re.search(r'<p id="bill-basis"[^>]*>(.*?)</p>', page, re.S).group(1)
    assert "Billed at Anthropic&#39;s prices for claude-sonnet-4-5-20250929, with its prompt cache" in basis
    assert "litellm 1.110.2" in basis
    # The comparison bills with Anthropic's cache too, and says so; its links leave the defaults out.
    compare = client.get(link.replace("/play/", "/compare/"))
    text = compare.get_data(as_text=True)
    assert '<option value="anthropic" selected' in text and 'id="bill-basis"' in text
    assert not re.search(r'href="[^"]*(cache=anthropic|price=3\b)', text)
    assert client.get(link.replace("/play/", "/compare/") + ".json").get_json()["billing"]["cache"] == "anthropic"


def test_the_urls_cache_wins_and_stays_in_the_links(client):
    link = upload(client, "s.jsonl", claude_code_session("claude-sonnet-4-5-20250929").encode())
    billing = client.get(link + ".json?cache=openai").get_json()["billing"]
    assert billing["cache"] == "openai" and billing["price"] == 3.0 and not billing["session_default"]
    compare = client.get(link.replace("/play/", "/compare/") + "?cache=openai").get_data(as_text=True)
    assert '<option value="openai" selected' in compare
    assert "Billed at the prices set for this page" in compare
    assert re.search(r'href="[^"]*cache=openai', compare)


def test_a_gemini_session_is_billed_at_googles_prices_and_a_scenario_as_before(client):
    link = upload(client, GEMINI.name, GEMINI.read_bytes())
    billing = client.get(link + ".json").get_json()["billing"]
    assert billing["provider"] == "google" and billing["price"] == 2.0 and billing["cache"] == "openai"
    assert "closest rule" in billing["says"]
    library = client.get("/play/bike-shop.json").get_json()["billing"]
    assert (library["provider"], library["cache"], library["price"]) == ("openai", "openai", 2.5)
    assert 'id="bill-basis"' not in client.get("/play/bike-shop").get_data(as_text=True)


# --- "Read as" against the well ---------------------------------------------------------------


@pytest.mark.parametrize("path", [CLAUDE, CODEX, GEMINI], ids=lambda path: path.parent.name)
def test_every_read_as_note_agrees_with_the_well(client, path):
    link = upload(client, path.name, path.read_bytes())
    data = client.get(link + ".json").get_json()
    unlogged = data["recorded_usage"]["unlogged_tokens"]
    assert unlogged > 0
    notes = data["read_as"]["notes"]
    assert not [note for note in notes if "not counted" in note]
    floor = [note for note in notes if note.startswith("Not in the log")]
    assert floor == [
        f"Not in the log: {unlogged:,} tokens, measured from the provider's count at call 1 (what it counted there "
        "beyond the count here), drawn in the floor and sent with every request."
    ]
    assert data["floor_tokens"] >= unlogged
    # The window and KEEP the notes name are those the well is drawn with.
    for note in notes:
        if note.startswith("Window: "):
            assert note.startswith(f"Window: {data['settings']['window']:,} tokens")
        if note.startswith("KEEP counts tool results"):
            assert data["settings"]["keep_unit"] == "tool_results"
    if data["window"]["unknown"]:
        assert not [note for note in notes if note.startswith("Window: ")]
    assert not [note for note in notes if "nothing is added ahead" in note]
    page = client.get(link).get_data(as_text=True)
    assert f"{unlogged:,} of it not in the log" in page  # the well's floor says the same figure


def test_a_session_whose_counts_grow_far_from_the_recorded_ones_is_warned(client):
    redacted = upload(client, "r.jsonl", claude_code_session("claude-sonnet-4-5", words=20, growth=3000).encode())
    notes = client.get(redacted + ".json").get_json()["read_as"]["notes"]
    assert any("cannot match the provider's" in note for note in notes)
    plain = upload(client, "p.jsonl", claude_code_session("claude-sonnet-4-5").encode())
    assert not any("cannot match" in note for note in client.get(plain + ".json").get_json()["read_as"]["notes"])
