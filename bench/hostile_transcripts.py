"""Transcripts built to be as costly as the limits allow (issue 15), for the hostile corpus in
tests/test_hostile_input.py and the worst-case benchmark. The same on every run for a seed."""

from __future__ import annotations

import json
import random
import string


def long_tool_names(rounds: int = 333, name_length: int = 2760, seed: int = 15) -> str:
    """`rounds` requests, each answered by one tool call to a tool whose name is `name_length`
    random letters: under 1 MB, it made every summary quote every earlier name."""
    rng = random.Random(seed)
    messages: list[dict] = [{"role": "system", "content": "You are a helpful agent."}]
    for number in range(rounds):
        messages.append({"role": "user", "content": f"Step {number}."})
        name = "".join(rng.choices(string.ascii_letters, k=name_length))
        call_id = f"c{number}"
        messages.append({"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}]})
        messages.append({"role": "tool", "tool_call_id": call_id, "content": "ok"})
    return json.dumps({"messages": messages}, separators=(",", ":"))
