"""The one way to get a replay (core/engine/replays.py): keyed by the chat's content, the
settings and the summarizer, the same key in every process, the exact replay apart from the
sweep's, and every replay weighed while it is kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from webapp.core.analysis.sweep import SweepRange, sweep
from webapp.core.engine.remote_summarizer import OpenAICompatibleSummarizer, SummarizerConfig
from webapp.core.engine.replay import replay
from webapp.core.engine.replays import Replays, chat_hash, replay_bytes
from webapp.core.inputs.library import open_scenario
from webapp.core.inputs.transcripts import parse_transcript

ROOT = Path(__file__).resolve().parents[1]
CHAT = ROOT / "tests" / "fixtures" / "transcripts" / "chat-tool-call.json"


def test_a_replay_is_kept_by_what_the_chat_holds_not_by_which_object_holds_it():
    text = CHAT.read_text()
    first, again = parse_transcript(text, "a.json"), parse_transcript(text, "a.json")
    assert first is not again and chat_hash(first) == chat_hash(again)
    replays = Replays()
    replays.get(first, first.settings)
    replays.get(again, again.settings)
    assert replays.made == 1
    changed = json.loads(text)
    changed["messages"][-1]["content"] += " Anything else?"
    other = parse_transcript(json.dumps(changed), "a.json")
    assert chat_hash(other) != chat_hash(first)
    replays.get(other, other.settings)
    assert replays.made == 2


def test_the_key_is_the_same_in_every_process_and_never_holds_the_api_key():
    """A store several servers share (the jobs' results, web/jobs.py `job_key`) keys a result by
    the chat's hash and the summarizer's name: neither may depend on the process's string
    hashing (the receipt's fetch-once tools are a set), nor hold the API key."""
    summarizer = OpenAICompatibleSummarizer(SummarizerConfig("http://127.0.0.1:9/v1", "llama3.1", api_key="sk-secret"))
    key = Replays(summarizer=summarizer).key(open_scenario("receipt"), open_scenario("receipt").settings)
    assert key.summarizer == "llama3.1 at http://127.0.0.1:9/v1" and "sk-secret" not in repr(key)
    script = (
        "from webapp.core.engine.remote_summarizer import OpenAICompatibleSummarizer, SummarizerConfig\n"
        "from webapp.core.engine.replays import Replays\n"
        "from webapp.core.inputs.library import open_scenario\n"
        "s = OpenAICompatibleSummarizer(SummarizerConfig('http://127.0.0.1:9/v1', 'llama3.1', api_key='other'))\n"
        "key = Replays(summarizer=s).key(open_scenario('receipt'), open_scenario('receipt').settings)\n"
        "print(key.chat, key.summarizer)\n"
    )
    for seed in ("1", "2"):
        run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        assert run.stdout.split() == [key.chat, *key.summarizer.split()]
    assert Replays().key(open_scenario("receipt"), open_scenario("receipt").settings).summarizer != key.summarizer


def test_the_replay_of_exact_settings_is_never_the_sweeps_made_from_another():
    """The sweep's replay of these settings takes "none"'s first calls, drawn at "none"'s
    KEEP; the play page's must be their own, whichever was asked first."""
    bike = open_scenario("bike-shop")
    settings = bike.settings.model_copy(update={"strategy": "truncate", "keep": 1})
    replays = Replays()
    replays.sending(bike, settings.model_copy(update={"keep": 3}))  # "none" is made at KEEP 3
    sent = replays.sending(bike, settings)
    own = replays.get(bike, settings)
    fresh = replay(bike, settings)
    assert [call.keep_start for call in own.calls] == [call.keep_start for call in fresh.calls]
    assert [call.keep_start for call in sent.calls] != [call.keep_start for call in fresh.calls]  # what the test tells apart
    assert [call.blocks for call in sent.calls] == [call.blocks for call in fresh.calls] and sent.calls[-1].sent_total == fresh.calls[-1].sent_total
    assert replays.made == 4  # "none", the sweep's at KEEP 3 and at 1, the exact one


def test_what_a_sweep_derives_from_its_replays_is_weighed_once_it_is_done():
    replays = Replays()
    sweep(open_scenario("bike-shop"), span=SweepRange(70, 80, 10, (2,)), replays=replays)
    kept = [replays.cache.get(key) for key in list(replays.cache._items)]
    assert kept and all(result.of_calls for result in kept)  # the prompt cache's hits, at least
    assert replays.info().bytes == sum(replay_bytes(result) for result in kept)


def test_a_sweeps_replays_weigh_what_they_hold_the_calls_they_share_once():
    """Most of the sweep's replays take their first calls from "none"'s (`replay_from`), the
    same objects: counted in each, the coding agent's sweep weighed 1.8 times what it holds,
    and a session's sweep passed the cache's bytes, so a new price replayed it."""
    import tracemalloc

    scenario, span = open_scenario("coding-agent"), SweepRange(keeps=(2,))
    sweep(scenario, span=span)  # the chat's counts and findings made: measure the replays alone
    replays = Replays()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        sweep(scenario, span=span, replays=replays)
        retained = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert sum(result.taken for result in (replays.cache.get(key) for key in list(replays.cache._items))) > 0
    assert retained / 1.25 <= replays.info().bytes <= retained * 1.25, (replays.info().bytes, retained)
