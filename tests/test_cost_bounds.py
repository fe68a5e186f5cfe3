"""What bounds the cost of one request whatever a visitor pastes (issue 15): summaries that
stay short, caches bounded by bytes. Checked on the hostile transcripts of bench/."""

from __future__ import annotations

import json
import re
import tracemalloc

import pytest

from bench.hostile_transcripts import long_tool_names
from bench.transcript import generate_transcript
from webapp.core.engine.replay import replay
from webapp.core.inputs.transcripts import parse_transcript
from webapp.core.engine.summarizer import MAX_SUMMARY_CHARS, SUMMARY_HEADER
from webapp.core.counting.tokens import O200K_FORMAT, TiktokenCounter
from webapp.core.engine.replays import replay_bytes


@pytest.fixture(scope="module")
def long_names_summarized():
    scenario = parse_transcript(long_tool_names(rounds=120), "long-names")
    return replay(scenario, scenario.settings.model_copy(update={"strategy": "summarize"}))


def summaries(result) -> list[str]:
    return [block.text for call in result.calls for block in call.blocks if block.state == "summary"]


def test_summaries_stay_short_whatever_names_they_quote(long_names_summarized):
    texts = summaries(long_names_summarized)
    assert len(texts) > 50, "the chat is compacted by summary, again and again"
    longest = max(texts, key=len)
    assert len(longest) <= MAX_SUMMARY_CHARS, longest[:300]
    # Names are quoted cut, not whole: no 2,760-letter word reaches a summary.
    assert max(len(word) for word in longest.split()) < 100


def test_a_bounded_summary_still_accounts_for_every_exchange(long_names_summarized):
    """The newest exchanges keep their lines; the oldest are counted, none vanish unsaid."""
    last_call = long_names_summarized.calls[-1]
    [summary] = [block for block in last_call.blocks if block.state == "summary"]
    lines = summary.text.splitlines()
    assert lines[0] == SUMMARY_HEADER
    left_out = int(re.fullmatch(r"- \((\d+) earlier exchanges left out\)", lines[1]).group(1))
    listed = lines[2:]
    # Request n asked "Step n-1". The first request's own message is sent whole; its tool call
    # and every later request up to the first one sent whole are summarized, one line each.
    first_whole = min(block.request for block in last_call.blocks if block.role == "user" and block.request > 1)
    summarized = range(1, first_whole)
    assert left_out + len(listed) == len(summarized)
    # The lines kept are the newest, in order, up to the first request still sent whole.
    assert [line.split(";")[0] for line in listed] == [f"- User asked: Step {n - 1}." for n in summarized[left_out:]]


def retained_bytes(action) -> int:
    """Bytes still allocated after `action`, by tracemalloc."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = action()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del kept
    return after - before


def test_the_token_count_cache_is_bounded_by_bytes():
    counter = TiktokenCounter("o200k_base", "o200k_base", O200K_FORMAT, long_cache_bytes=1_000_000)
    texts = [f"{number} " + "word " * 40_000 for number in range(25)]  # 200 KB each, 5 MB in all
    retained = retained_bytes(lambda: [counter.text_tokens(text) for text in texts])
    info = counter.long_tokens.cache_info()
    assert info.bytes <= 1_000_000 and info.entries < len(texts)
    assert retained < 2_000_000
    assert counter.text_tokens(texts[-1]) == counter._count_text(texts[-1])  # the newest are kept


def test_a_replays_weight_follows_its_real_size():
    scenario = parse_transcript(json.dumps(generate_transcript(400)), "weighed")
    for strategy in ("none", "truncate-drop", "summarize"):
        settings = scenario.settings.model_copy(update={"strategy": strategy})
        replay(scenario, settings)  # its texts counted and cached: measure the replay alone
        result = []
        retained = retained_bytes(lambda: result.append(replay(scenario, settings)))  # noqa: B023 - called at once
        weight = replay_bytes(result[0])
        assert retained / 2 <= weight <= retained * 2, (strategy, weight, retained)


def test_the_replay_cache_is_bounded_by_bytes(tmp_path):
    from webapp import create_app

    # Each comparison computed in the request (not a job, past 200 messages), in this process's cache.
    app = create_app({"TESTING": True, "TRANSCRIPT_DIR": str(tmp_path), "REPLAY_CACHE_MAX_BYTES": 8_000_000, "JOB_MESSAGES": 10_000})
    client = app.test_client()
    cache = app.extensions["replay_cache"]
    for seed in range(3):
        text = json.dumps(generate_transcript(300, seed=seed))
        link = client.post("/transcripts", data={"transcript": text}).headers["Location"].split("?")[0]
        assert client.get(link.replace("/play/", "/compare/") + ".csv").status_code == 200
        info = cache.cache.info()
        assert info.bytes <= 8_000_000
    assert len(cache) < 3 * 7, "fewer replays than the entry count alone would keep"


def test_a_replays_weight_counts_what_the_pages_derive_from_it(tmp_path):
    """The play page keeps on a replay what every step would recompute (each block's versions,
    tool names, the bill's increments, the chat…): the replay cache weighs that too, measured
    against what tracemalloc sees those values hold."""
    from webapp import create_app

    app = create_app({"TESTING": True, "TRANSCRIPT_DIR": str(tmp_path)})
    client = app.test_client()
    link = client.post("/transcripts", data={"transcript": json.dumps(generate_transcript(300, seed=1))}).headers["Location"].split("?")[0]
    cache = app.extensions["replay_cache"]
    client.get(link)
    [(key, made)] = [(key, cache.cache.info().bytes) for key in cache.cache._items]
    result = cache.cache.get(key)
    for number in range(1, len(result.calls) + 1, 5):
        client.get(f"{link}?call={number}")
    client.get(f"{link}?call=6&block=floor")
    derived = [function for function in result.derived if function.__name__ != "made_bytes"]  # the weight itself
    assert len(derived) >= 6
    # What the derived values hold, made again (a copy of each, by the function that made it).
    retained = retained_bytes(lambda: [function(result) for function in derived])
    grown = cache.cache.info().bytes - made
    # An estimate (shared texts count again), within a factor of three; the old one counted 0.
    assert retained / 3 <= grown <= retained * 3, (grown, retained)
