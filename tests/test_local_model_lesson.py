"""Lesson 12, Your local model (scenarios/local-model.toml): the figures its narration states, at
the calls they are stated for; the fact Ollama's num_ctx leaves out and the agent's own
compaction on the true window keeps; the real Ollama counts it cites, read from the fixtures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from webapp.core.counter_catalog import OPEN_NAMES, missing
from webapp.core.engine.calls import chat_counter, script_blocks
from webapp.core.engine.replay import replay
from webapp.core.inputs.library import scenario_library
from webapp.core.inputs.transcripts import parse_transcript
from webapp.core.settings import parse_settings

LESSON = scenario_library().scenarios["local-model"]
FACT = "pg-staging-03"
OLLAMA_LOGS = Path(__file__).parent / "fixtures" / "sessions" / "ollama"
# The open models' counters come with the open-models extra and fetch-vocab (scripts/test installs both).
needs_the_extra = pytest.mark.skipif(any(missing(name) for name in OPEN_NAMES), reason="needs the open-models extra and fetch-vocab")


def run(**values: str):
    return replay(LESSON, parse_settings(values, LESSON.settings))


def fact_at_last_call(result):
    (status,) = [status for status in result.calls[-1].facts if status.fact.text == FACT]
    return status


def test_the_agent_believes_32768_tokens_and_ollama_runs_at_its_default_4096():
    settings = LESSON.settings
    assert (settings.strategy, settings.window, settings.num_ctx, settings.counter, settings.keep) == ("ollama", 32_768, 4_096, "o200k_base", 1)
    result = run()
    assert any("below the 32,768-token window the agent believes it has" in warning for warning in result.warnings)


def test_the_first_request_counts_differently_under_each_built_in_counter_as_call_1_says():
    counts = {counter: run(counter=counter).calls[0].tokens for counter in ("o200k_base", "cl100k_base", "estimate")}
    assert counts == {"o200k_base": 250, "cl100k_base": 259, "estimate": 134}
    said = LESSON.narration[1][0].texts["en"]
    assert "250 tokens with o200k_base" in said and "259 with cl100k_base" in said and "134 by characters / 4" in said


@needs_the_extra
def test_and_under_five_open_models_tokenizers_and_their_templates():
    counts = {counter: run(counter=counter).calls[0].tokens for counter in ("qwen2.5", "llama3", "mistral-tekken", "gemma3", "deepseek-v3")}
    assert counts == {"qwen2.5": 460, "llama3": 548, "mistral-tekken": 376, "gemma3": 387, "deepseek-v3": 372}
    template = chat_counter(LESSON, "qwen2.5").template_tokens(LESSON.prefix, LESSON.tools)
    said = LESSON.narration[1][0].texts["en"]
    assert f"460 with qwen2.5, the model this agent runs, {template} of them the template's own text" in said
    assert all(f"{tokens} with {counter}" in said for counter, tokens in counts.items())


def test_the_real_ollama_counts_call_1_cites_are_the_fixtures():
    """The narration's figures are what Ollama answered in the logs kept as fixtures."""
    counts = {}
    for model in ("qwen2.5vl:3b", "mistral:7b-instruct", "granite3.3:8b"):
        path = OLLAMA_LOGS / f"ollama-bash-lib-{model.replace(':', '-')}-chat.jsonl"
        session = parse_transcript(path.read_text(encoding="utf-8"), model)
        assert session.origin.model == model
        counts[model] = [usage.input_tokens for usage in session.origin.usage]
    (q1, q2), (m1, m2), (g1, g2) = counts.values()
    said = LESSON.narration[2][0].texts["en"]
    assert f"{q1} tokens for qwen2.5vl:3b, {m1} for mistral:7b-instruct and {g1} for granite3.3:8b, and the next request {q2}, {m2} and {g2}" in said


def test_under_ollama_the_fact_leaves_with_the_first_request_at_call_8_by_o200k_base():
    result = run()
    cut = result.calls[7].compaction
    assert (cut.tokens_before, cut.tokens_after, len(cut.dropped)) == (4_745, 1_682, 7)
    assert "m1" in cut.dropped  # the first request
    assert all(call.compaction is None for call in result.calls[:7])  # the agent never compacts
    status = fact_at_last_call(result)
    assert status.needed and not status.present and status.lost_from == 8


@needs_the_extra
def test_by_qwens_own_count_ollama_cuts_at_call_4_as_its_narration_says():
    result = run(counter="qwen2.5")
    cut = result.calls[3].compaction
    assert (cut.tokens_before, len(cut.dropped)) == (4_313, 3) and "m1" in cut.dropped
    assert fact_at_last_call(result).lost_from == 4
    log = {counter: next(block for block in script_blocks(LESSON, counter) if block.id == "m7") for counter in ("qwen2.5", "o200k_base")}
    assert {counter: round(chat_counter(LESSON, counter).block_tokens(block.units)) for counter, block in log.items()} == {"qwen2.5": 3_352, "o200k_base": 2_542}
    said = next(note for note in LESSON.narration[4] if note.when.counters == {"qwen2.5"}).texts["en"]
    assert "3,352 tokens, where o200k_base counts 2,542. The request is 4,313 tokens" in said and "the 3 oldest messages" in said


@pytest.mark.parametrize(
    "values",
    [
        {"strategy": "truncate-drop", "window": "4096"},
        {"strategy": "drop", "window": "4096"},
        {"strategy": "summarize", "window": "4096"},
        {"strategy": "summarize", "window": "4096", "keep_facts": "1"},
        {"num_ctx": "32768"},
    ],
)
def test_the_agents_own_compaction_on_the_true_window_keeps_it_and_so_does_a_larger_num_ctx(values):
    result = run(**values)
    assert_kept(result, values)


@needs_the_extra
@pytest.mark.parametrize("counter", ["qwen2.5", "llama3", "mistral-tekken", "gemma3", "deepseek-v3"])
def test_under_every_open_models_count_too(counter):
    for values in ({"strategy": "truncate-drop", "window": "4096"}, {"strategy": "summarize", "window": "4096"}, {"num_ctx": "32768"}):
        assert_kept(run(**values, counter=counter), values)
    assert not fact_at_last_call(run(counter=counter)).present  # and Ollama at num_ctx 4,096 loses it


def assert_kept(result, values):
    status = fact_at_last_call(result)
    assert status.present and not status.lost
    assert max(call.tokens for call in result.calls) <= 4_096 or values == {"num_ctx": "32768"}
    assert not any(call.overflow for call in result.calls)


def test_the_last_call_tells_which_side_the_learner_is_on(client):
    lost = client.get("/play/local-model?call=10").get_data(as_text=True)
    assert "was in the first request, which Ollama left out" in lost
    kept = client.get("/play/local-model?call=10&strategy=truncate-drop&window=4096").get_data(as_text=True)
    assert "The agent compacted by itself, on the window it really has" in kept
    larger = client.get("/play/local-model?call=10&num_ctx=32768").get_data(as_text=True)
    assert "num_ctx holds the whole chat" in larger
    chinese = client.get("/play/local-model?call=10&lang=zh").get_data(as_text=True)
    assert "那个数据库 pg-staging-03 在第一个请求里，而 Ollama 把它丢掉了" in chinese


def test_the_cut_is_told_at_call_8_only_at_the_lessons_own_num_ctx_and_counter(client):
    told = client.get("/play/local-model?call=8").get_data(as_text=True)
    assert "Ollama leaves out the 7 oldest messages" in told
    for other in ("num_ctx=3000", "counter=cl100k_base"):  # written for 4,096 and o200k_base: the generated story tells it
        assert "Ollama leaves out the 7 oldest messages" not in client.get(f"/play/local-model?call=8&{other}").get_data(as_text=True)


def test_the_home_page_lists_it_last_and_the_harnesses_lead_to_it(client):
    home = client.get("/").get_data(as_text=True)
    lessons = re.findall(r'href="/play/([a-z0-9-]+)"', home)
    assert lessons.index("local-model") > lessons.index("harnesses")
    assert "Your local model" in home
    last_of_harnesses = client.get("/play/harnesses?call=27").get_data(as_text=True)
    assert '<a id="next-lesson" class="btn primary" href="/play/local-model">Next: lesson 12, Your local model' in last_of_harnesses
