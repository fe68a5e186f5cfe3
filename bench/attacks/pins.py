"""What one URL can cost (issue 26): the longest state the play page accepts, on a transcript
of 1,000 messages, written into every link of its page; and comparisons of chats under 200
messages at settings no request used before, from many threads at once.

- pins: the page of the worst URL accepted (every list at its cap, every setting at its
  longest, at the last call, where the page is largest) measured, then asked for by 16
  threads while the probe asks for the home page.
- small comparisons: 16 threads asking for the comparison of pasted 150-message chats, each
  time at a new window, so each one is computed afresh.
"""

from __future__ import annotations

import argparse
import itertools
import json
import tempfile
import threading
from collections import Counter
from pathlib import Path
from urllib.parse import urlencode

from bench.attacks import Attack, Row
from bench.attacks.cost import agent_transcript
from bench.attacks.probe import timed, under_load
from bench.server import get, paste, serve
from bench.transcript import generate_transcript
from webapp.core.settings import MOST_EXCLUDED_TOOLS, MOST_PINS

THREADS = 16


def worst_query(messages: int, calls: int) -> str:
    """The longest query the play page accepts on a chat of `messages` messages and `calls`
    model calls: every list at its cap (the longest ids, tool names of 64 characters), every
    setting and price away from its default at its longest, at the last call, the block
    selected, autoplay on."""
    pins = ",".join(f"m{messages - index}" for index in range(MOST_PINS))
    tools = ",".join(f"{index:02d}" + "t" * 62 for index in range(MOST_EXCLUDED_TOOLS))
    return urlencode({
        "call": calls, "strategy": "langchain-summarization", "window": 9_999_999, "model_window": 9_999_998,
        "threshold": 0.987654, "alert": 0.876543, "target": 0.765432, "keep": 999, "keep_unit": "tool_results",
        "counter": "estimate", "preview": 9999, "keep_facts": 1, "clear_at_least": 9_999_999, "exclude_tools": tools,
        "clear_tool_inputs": 1, "pin": pins, "price": 123.456789, "block": f"m{messages}", "speed": "0.5", "lang": "zh",
    }, safe=",")


def paste_long_chat(port: int) -> tuple[str, int, int]:
    """Pastes the cost attack's 1,000-message transcript; returns its id, messages and calls."""
    transcript = agent_transcript(7)
    scenario_id = paste(port, json.dumps(transcript))
    data = json.loads(get(port, f"/play/{scenario_id}.json")[1])
    return scenario_id, len(transcript["messages"]) - 1, data["calls"]


def pin_amplification(options: argparse.Namespace) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="attack-pins-") as folder, serve(
        workers=None, production=True, config={"TRANSCRIPT_DIR": str(Path(folder) / "transcripts")}, error_log=str(Path(folder) / "gunicorn.log")
    ) as (port, _):
        scenario_id, messages, calls = paste_long_chat(port)
        path = f"/play/{scenario_id}?{worst_query(messages, calls)}"
        status, body, _ = get(port, path, timeout=options.timeout)
        note = f"worst URL {len(path):,} B -> {status}, page {len(body):,} B"

        def ask(stop: threading.Event) -> Counter:
            statuses: Counter = Counter()
            while not stop.is_set():
                statuses[timed(port, path, timeout=options.timeout)[1]] += 1
            return statuses

        return [under_load("pins: worst URL, 16 threads", port, ask, duration=options.duration, idle=options.idle,
                           threads=THREADS, timeout=options.timeout, note=lambda: note)]


def small_comparisons(options: argparse.Namespace) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="attack-small-") as folder, serve(
        workers=None, production=True, config={"TRANSCRIPT_DIR": str(Path(folder) / "transcripts")}, error_log=str(Path(folder) / "gunicorn.log")
    ) as (port, _):
        ids = [paste(port, json.dumps(generate_transcript(150, seed=seed))) for seed in range(THREADS)]
        windows = itertools.count(3000)
        lock = threading.Lock()
        seen: Counter = Counter()

        def ask(stop: threading.Event) -> Counter:
            with lock:
                scenario_id = ids[len(seen) % len(ids)]
                seen[scenario_id] += 1
            statuses: Counter = Counter()
            while not stop.is_set():
                with lock:
                    window = next(windows)
                statuses[timed(port, f"/compare/{scenario_id}?window={window}", timeout=options.timeout)[1]] += 1
            return statuses

        return [under_load("comparisons of 150 messages, 16 threads", port, ask, duration=options.duration, idle=options.idle,
                           threads=THREADS, timeout=options.timeout)]


ATTACKS = [
    Attack("pins", "the longest accepted URL on a 1,000-message transcript: its page's size, and 16 threads asking for it", pin_amplification),
    Attack("small-comparisons", "16 threads comparing 150-message chats at fresh settings each time", small_comparisons),
]
