"""Ollama as a harness (webapp/core/engine/harnesses/ollama.py, docs/harnesses.md): past num_ctx
its server leaves out the oldest messages, keeping the system messages and the latest one; the
playground keeps a tool call with its results. `num_ctx` is a setting whose default is Ollama's
on a machine with under 24 GiB of GPU memory, offered with the strategy, warned about when it is
below the window the agent believes it has; Ollama's logged /api/chat exchanges are read and
reconciled call by call against prompt_eval_count."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings as hypothesis_settings
from hypothesis import strategies as st

from webapp.core.counter_catalog import missing
from webapp.core.engine.calls import chat_counter, script_blocks
from webapp.core.engine.history import TOOL_RESULT_ROLES
from webapp.core.engine.replay import replay
from webapp.core.inputs.formats import FormatError, detect, import_transcript, parse
from webapp.core.inputs.library import open_scenario
from webapp.core.inputs.transcripts import parse_transcript
from webapp.core.settings import Settings, SettingsError, parse_settings
from webapp.core.triggers import OLLAMA_DEFAULT_NUM_CTX, OLLAMA_NUM_CTX_BY_MEMORY

from .generators import layered_scenarios, scenarios
from .test_agent_runs import agent_runs

EXAMPLES = hypothesis_settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SESSIONS = Path(__file__).parent / "fixtures" / "sessions" / "ollama"


def ollama_settings():
    return st.builds(
        Settings,
        strategy=st.just("ollama"),
        window=st.integers(2_000, 40_000),
        num_ctx=st.integers(300, 12_000),
        counter=st.sampled_from(["estimate", "o200k_base"]),
    )


def unpinned(scenario):
    """The chat with no message pinned: a pinned message stays whatever its age (tested apart)."""
    return replace(scenario, script=[replace(item, pinned=False) for item in scenario.script])


CHATS = st.one_of(scenarios(), agent_runs(), layered_scenarios().map(unpinned))


def history_at(result, number: int) -> list:
    """The history at call `number` before Ollama's cut: what the call before sent, its reply,
    then every script message since (Replay.history_before leaves out those cut at once)."""
    script = result.scenario.script
    replies = [index for index, item in enumerate(script) if item.role == "assistant"]
    start = replies[number - 2] + 1 if number > 1 else 0
    end = replies[number - 1] if number <= len(replies) else len(script)
    previous = result.calls[number - 2] if number > 1 else None
    before = [*previous.blocks, *([previous.reply] if previous.reply else [])] if previous else []
    return before + list(script_blocks(result.scenario, result.settings.counter)[start:end])


def sent_tokens(result, blocks) -> int:
    """What a request of `blocks` counts, as the replay counts it (no recorded usage here)."""
    counter = chat_counter(result.scenario, result.settings.counter)
    return counter.request_tokens(result.floor_units + sum(block.units for block in blocks))


@EXAMPLES
@given(CHATS, ollama_settings())
def test_ollama_keeps_the_system_messages_and_the_latest_message_and_never_orphans_a_tool_result(scenario, chosen):
    result = replay(scenario, chosen)
    for call in result.calls:
        before = history_at(result, call.number)
        sent = [block.id for block in call.blocks]
        assert call.valid, call.problems  # no tool result without its call
        assert before and sent[-1] == before[-1].id  # the latest message, whatever its size
        assert {block.id for block in before if block.role == "system"} <= set(sent)
        # What it leaves out is the oldest: every message it keeps but the system messages
        # comes after every message it left out, in the order they were written.
        left_out = [index for index, block in enumerate(before) if block.id not in sent]
        kept = [index for index, block in enumerate(before) if block.id in sent and block.role != "system"]
        assert not left_out or not kept or max(left_out) < min(kept)
        assert [block.id for block in call.blocks] == [block.id for block in before if block.id in sent]


@EXAMPLES
@given(CHATS, ollama_settings())
def test_ollama_sends_a_request_that_fits_num_ctx_whenever_one_can_and_leaves_out_no_more_than_needed(scenario, chosen):
    result = replay(scenario, chosen)
    line = min(chosen.num_ctx, chosen.window)
    assert result.settings.limit == line == result.settings.real_window
    for call in result.calls:
        before = history_at(result, call.number)
        systems = [block for block in before if block.role == "system"]
        # The least it can send: the system messages and the latest message with the call it answers.
        start = keep_start_of_last_turn(before)
        least = [block for block in before[:start] if block.role == "system"] + before[start:]
        if sent_tokens(result, least) <= line:
            assert call.tokens <= line
        else:
            assert [block.id for block in call.blocks] == [block.id for block in least]
            assert any(event.kind == "pitfall" and event.detail["kind"] == "beyond" for event in call.events)
        if call.compaction is None or not call.compaction.dropped:
            assert call.tokens <= line or len(call.blocks) == len(least)
            continue
        # Back to the place before where a cut may be (never a tool result), and it would not fit.
        sent = {block.id for block in call.blocks}
        first_kept = next((index for index, block in enumerate(before) if block.id in sent and block.role != "system"), len(before))
        places = [index for index in range(first_kept) if before[index].role not in (*TOOL_RESULT_ROLES, "system")]
        if places:
            wider = [block for block in systems if before.index(block) < places[-1]] + before[places[-1] :]
            assert sent_tokens(result, wider) > line


def keep_start_of_last_turn(history) -> int:
    index = len(history) - 1
    while 0 < index and history[index].role in TOOL_RESULT_ROLES:
        index -= 1
    return index


def test_its_line_is_num_ctx_whatever_the_threshold_and_at_most_the_models_window():
    chosen = parse_settings({"strategy": "ollama", "threshold": "0.5"}, Settings(window=32_768))
    assert (chosen.num_ctx, chosen.limit, chosen.real_window) == (4_096, 4_096, 4_096)
    assert parse_settings({"strategy": "ollama", "num_ctx": "65536"}, Settings(window=32_768)).limit == 32_768
    assert parse_settings({"strategy": "ollama", "num_ctx": "65536"}, Settings(window=131_072, model_window=40_000)).real_window == 40_000
    # The textbook strategies are not Ollama's: num_ctx is carried along and changes nothing.
    assert parse_settings({"strategy": "drop", "num_ctx": "1000"}, Settings(window=8_000)).limit == 6_400


def test_the_default_num_ctx_is_ollamas_on_a_machine_with_under_24_gib():
    assert Settings().num_ctx == OLLAMA_DEFAULT_NUM_CTX == 4_096
    assert OLLAMA_NUM_CTX_BY_MEMORY == ((47, 262_144), (23, 32_768), (0, 4_096))  # server/routes.go, Serve(), v0.32.15


@pytest.mark.parametrize("value", ["2", "0", "-5", "4096.5", "lots", "20000000"])
def test_a_bad_num_ctx_is_refused_with_what_it_accepts(value):
    with pytest.raises(SettingsError) as raised:
        parse_settings({"strategy": "ollama", "num_ctx": value})
    assert "num_ctx" in str(raised.value) and "4 to 10000000" in str(raised.value)


def test_bike_shop_under_ollama_loses_the_first_request_where_drop_keeps_it():
    """Ollama leaves out the oldest messages, the first request too; the textbook drop keeps it."""
    ollama = replay(bike_shop(), parse_settings({"strategy": "ollama", "num_ctx": "3000", "counter": "o200k_base"}, bike_shop().settings))
    dropped = [call for call in ollama.calls if call.compaction and call.compaction.dropped]
    assert dropped and "m1" in dropped[0].compaction.dropped
    assert ollama.calls[-1].blocks[-1].id == ollama.history_before(len(ollama.calls))[-1].id


@EXAMPLES
@given(layered_scenarios(), ollama_settings())
def test_a_pinned_message_stays_under_ollama_with_what_it_cannot_be_sent_without(scenario, chosen):
    result = replay(scenario, chosen)
    for call in result.calls:
        assert call.valid, call.problems
        sent = {block.id for block in call.blocks}
        assert {block.id for block in history_at(result, call.number) if block.id in scenario.pinned} <= sent


def bike_shop():
    return open_scenario("bike-shop")


# --- The page: the setting, its warning, its 400 ------------------------------------------------


def test_the_play_page_offers_num_ctx_only_with_ollama_and_says_which_memory_it_assumes(client):
    html = client.get("/play/bike-shop?strategy=ollama").get_data(as_text=True)
    field = re.search(r'<input id="f-num-ctx"[^>]*>', html).group(0)
    assert 'type="number"' in field and 'value="4096"' in field and 'list="f-num-ctx-list"' in field
    assert "Ollama&#39;s num_ctx (tokens)" in html
    assert "(num_ctx is 4,096 on a machine with under 24 GiB of GPU memory)" in html  # the strategy's description, under the form
    options = re.findall(r'<option value="(\d+)" label="([^"]+)"', html)
    assert [(value, words.replace("&#39;", "'")) for value, words in options if value in ("4096", "32768", "262144")] == [
        ("4096", "Ollama's default under 24 GiB of GPU memory"),
        ("32768", "Ollama's default from 24 to 48 GiB"),
        ("262144", "Ollama's default from 48 GiB"),
    ]
    other = client.get("/play/bike-shop?strategy=drop").get_data(as_text=True)
    assert 'id="f-num-ctx"' not in other and '<input type="hidden" name="num_ctx" value="4096">' in other


def test_the_page_warns_when_num_ctx_is_below_the_window_the_agent_believes_it_has(client):
    below = client.get("/play/bike-shop?strategy=ollama").get_data(as_text=True)
    assert "Ollama runs the model at num_ctx = 4,096 tokens, below the 8,000-token window the agent believes it has" in below
    equal = client.get("/play/bike-shop?strategy=ollama&num_ctx=8000").get_data(as_text=True)
    assert "below the 8,000-token window" not in equal
    chinese = client.get("/play/bike-shop?strategy=ollama&lang=zh").get_data(as_text=True)
    assert "低于智能体以为自己拥有的 8,000 token 窗口" in chinese
    data = client.get("/play/bike-shop.json?strategy=ollama").get_json()
    assert data["settings"]["num_ctx"] == 4_096
    assert any("below the 8,000-token window" in warning for warning in data["warnings"])


@pytest.mark.parametrize("value", ["2", "lots", "99999999"])
def test_a_bad_num_ctx_in_the_url_is_a_400_naming_it(client, value):
    answer = client.get(f"/play/bike-shop?strategy=ollama&num_ctx={value}")
    assert answer.status_code == 400
    text = re.sub(r"<[^>]+>", " ", answer.get_data(as_text=True))
    assert "num_ctx" in text and "a whole number from 4 to 10000000" in text


def test_the_comparison_shows_ollama_beside_the_others_with_its_warning(client):
    html = client.get("/compare/bike-shop").get_data(as_text=True)
    assert "Ollama" in html and "below the 8,000-token window the agent believes it has" in html
    rows = {row["strategy"]: row for row in client.get("/compare/bike-shop.json").get_json()["strategies"]}
    assert rows["ollama"]["family"] == "harness"


# --- Ollama's /api/chat exchanges, reconciled call by call -----------------------------------


def exchanges(name: str) -> str:
    return (SESSIONS / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("name", "counts"),
    [
        ("ollama-bash-lib-qwen2.5vl-3b-chat.jsonl", (44, 63)),
        ("ollama-bash-lib-mistral-7b-instruct-chat.jsonl", (37, 71)),
        ("ollama-bash-lib-granite3.3-8b-chat.jsonl", (44, 79)),
    ],
)
def test_real_exchanges_are_read_and_each_call_carries_ollamas_prompt_eval_count(name, counts):
    scenario = parse_transcript(exchanges(name), "s")
    assert scenario.origin.format == "ollama-exchanges"
    assert [message["role"] for message in (*scenario.prefix, *(item.message for item in scenario.script))] == ["system", "user", "assistant", "user", "assistant"]
    result = replay(scenario, scenario.settings)
    assert tuple(call.recorded.input_tokens for call in result.calls) == counts
    # Reconciled call by call: each count within 11% of Ollama's (o200k_base against the model's
    # own tokenizer and template), the first one equal where Ollama counted more than the log
    # holds (the unlogged part joins the floor: its chat template's tokens).
    assert all(abs(call.tokens - call.recorded.input_tokens) <= 0.11 * call.recorded.input_tokens for call in result.calls)
    assert result.calls[0].tokens == counts[0] or result.calls[0].counted > counts[0]


@pytest.mark.skipif(any(missing(name) for name in ("qwen2.5", "mistral-v3")), reason="needs the open-models extra")
@pytest.mark.parametrize(("name", "counter", "counts"), [("qwen2.5vl-3b", "qwen2.5", (44, 63)), ("mistral-7b-instruct", "mistral-v3", (37, 70))])
def test_the_models_own_counter_finds_ollamas_count_again(name, counter, counts):
    """Ollama counted these requests 44 and 63, 37 and 71: the open models' counters, alone
    (not built on the recorded counts), give 44 and 63, 37 and 70."""
    scenario = parse_transcript(exchanges(f"ollama-bash-lib-{name}-chat.jsonl"), "s")
    result = replay(scenario, parse_settings({"counter": counter}, scenario.settings))
    assert tuple(call.counted for call in result.calls) == counts


def test_streamed_exchanges_add_up_their_chunks_pair_the_tool_call_and_set_num_ctx():
    imported = import_transcript(parse(exchanges("generated-exchanges-streamed-tools.jsonl")))
    roles = [message["role"] for message in imported.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    call = imported.messages[2]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"sku": "RB-BLUE", "size": 56}
    assert imported.messages[3]["tool_call_id"] == call["id"]
    assert imported.messages[4]["content"] == "Yes: two blue road bikes in size 56, at the Lyon store."
    assert [(usage.call, usage.input_tokens, usage.output_tokens) for usage in imported.usage] == [(1, 214, 31), (2, 268, 14)]
    assert imported.harness_settings == {"num_ctx": 8_192}
    notes = [note % values for note, values in imported.notes]
    assert any(note.startswith("Requests answered with an error or not at all: 1.") for note in notes)
    # The client sent the reply back without its thinking: the history is what it sent.
    assert not any("call get_stock" in str(message.get("content")) for message in imported.messages)
    scenario = parse_transcript(exchanges("generated-exchanges-streamed-tools.jsonl"), "s")
    assert scenario.settings.num_ctx == 8_192 and "num_ctx" in scenario.origin.settings_from_file


def test_counts_of_new_tokens_only_are_left_out_and_said():
    imported = import_transcript(parse(exchanges("generated-exchanges-new-tokens-only.json")))
    assert imported.usage == ()
    assert any("did not hold" in note % values for note, values in imported.notes)


def test_a_request_that_does_not_continue_the_one_before_is_the_agents_compaction():
    system = {"role": "system", "content": "Be brief."}
    first = [system, {"role": "user", "content": "The code is 7731."}]
    answer = {"role": "assistant", "content": "Noted."}
    second = [system, {"role": "user", "content": "Summary: a code was given."}, {"role": "assistant", "content": "Ok."}, {"role": "user", "content": "Which code?"}]
    lines = [
        {"model": "llama3.2", "messages": first},
        {"message": answer, "done": True, "prompt_eval_count": 30, "eval_count": 3},
        {"model": "llama3.2", "messages": second},
        {"message": {"role": "assistant", "content": "I do not know."}, "done": True, "prompt_eval_count": 40, "eval_count": 5},
    ]
    imported = import_transcript(parse("\n".join(json.dumps(line) for line in lines)))
    (compaction,) = imported.compactions
    assert compaction.before_call == 2 and "Summary: a code was given." in compaction.summary
    assert [message["content"] for message in imported.messages] == ["Be brief.", "The code is 7731.", "Noted.", "Which code?", "I do not know."]
    assert [usage.input_tokens for usage in imported.usage] == [30, 40]


def test_the_pairs_form_reads_as_the_lines_form():
    lines = [json.loads(line) for line in exchanges("ollama-bash-lib-qwen2.5vl-3b-chat.jsonl").splitlines()]
    pairs = [{"request": lines[i], "response": lines[i + 1]} for i in (0, 2)]
    assert detect(pairs).name == "ollama-exchanges"
    as_pairs, as_lines = import_transcript(pairs), import_transcript(parse(exchanges("ollama-bash-lib-qwen2.5vl-3b-chat.jsonl")))
    assert as_pairs.messages == as_lines.messages and [u.input_tokens for u in as_pairs.usage] == [u.input_tokens for u in as_lines.usage]


def test_a_value_that_is_neither_a_request_nor_a_response_is_named_by_its_line():
    text = exchanges("ollama-bash-lib-qwen2.5vl-3b-chat.jsonl").rstrip("\n") + "\n{\"note\": \"not an exchange\"}\n"
    with pytest.raises(FormatError) as raised:
        import_transcript(parse(text))
    assert raised.value.problems[0][0] == "line 5"


def test_a_request_body_that_sets_num_ctx_sets_the_setting():
    body = {"model": "llama3.2", "messages": [{"role": "user", "content": "hi"}], "options": {"num_ctx": 16_384}}
    assert import_transcript(body).harness_settings == {"num_ctx": 16_384}
    assert import_transcript({**body, "options": {"num_ctx": 1}}).harness_settings == {}
