"""A long, realistic agent transcript for benchmarks and load tests, the same on every run.

Each request is a user message (English, French, Chinese, emoji), then zero to three tool
turns of one to three parallel calls, each answered by a tool result whose size ranges from a
line to a large JSON dump, then usually a final answer. The result is an OpenAI
chat-completions transcript (an object with "messages" and "tools") with exactly the number
of messages asked for, valid for the scenario loader.
"""

from __future__ import annotations

import json
import random

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "What to look for"}}},
        },
    }
    for name, description in [
        ("get_order", "Everything about one order."),
        ("search_parts", "Search the parts catalog."),
        ("read_file", "Read a file of the repository."),
        ("run_tests", "Run the test suite and return its output."),
    ]
]
REQUESTS = [
    "My order #{n} came with a bent front wheel. Can you help?",
    "Is that same wheel in stock, and what does it cost?",
    "Ma commande n°{n} est arrivée avec une roue voilée. Pouvez-vous m'aider ?",
    "Le même modèle est-il disponible en noir ? Merci d'avance 🙏",
    "我的订单 {n} 的前轮是弯的，能帮我换一个吗？",
    "Please read src/parser.py and tell me why test_{n} fails.",
    "Run the tests again after the fix and summarize the failures, if any.",
]
ANSWERS = [
    "Done: I opened return R-{n} and the replacement ships tomorrow.",
    "Oui, la roue est en stock (12 pièces) à 139,00 €. Voulez-vous que je la réserve ?",
    "已为您创建退货单 R-{n}，新车轮明天发货。",
    "The failure comes from an off-by-one in `tokenize()`; the fix is on line {n}.",
]
WORDS = "wheel rim spoke hub tyre roue jante rayon moyeu 车轮 轮辋 辐条 naïve café déjà-vu ✓ 🚲 <tag> & \"quoted\"".split()


def _result(rng: random.Random, number: int) -> str:
    """A tool result: mostly small, sometimes a large dump, as real tools return."""
    size = rng.choice([1, 1, 2, 4, 8, 16, 40, 120])
    rows = [
        {"id": f"{number}-{i}", "name": " ".join(rng.choices(WORDS, k=4)), "qty": rng.randint(0, 99), "price": round(rng.uniform(1, 500), 2)}
        for i in range(size)
    ]
    return json.dumps({"status": "ok", "rows": rows}, ensure_ascii=False, indent=2)


def generate_transcript(count: int = 2000, seed: int = 7) -> dict:
    rng = random.Random(seed)
    messages: list[dict] = [{"role": "system", "content": "You are a careful support and coding assistant. Use the tools; never guess."}]
    request = 0
    while len(messages) - 1 < count:
        request += 1
        exchange = [{"role": "user", "content": rng.choice(REQUESTS).format(n=4000 + request)}]
        for turn in range(rng.choice([0, 1, 1, 2, 3])):
            calls = [
                {
                    "id": f"call_{request}_{turn}_{i}",
                    "type": "function",
                    "function": {
                        "name": rng.choice(TOOLS)["function"]["name"],
                        "arguments": json.dumps({"query": " ".join(rng.choices(WORDS, k=3))}, ensure_ascii=False),
                    },
                }
                for i in range(rng.choice([1, 1, 2, 3]))
            ]
            exchange.append({"role": "assistant", "content": rng.choice([None, "Let me check."]), "tool_calls": calls})
            exchange += [{"role": "tool", "tool_call_id": call["id"], "content": _result(rng, request)} for call in calls]
        if rng.random() < 0.9:
            exchange.append({"role": "assistant", "content": rng.choice(ANSWERS).format(n=request)})
        room = count - (len(messages) - 1)
        if len(exchange) > room:
            # Cut only where a call is never separated from its results: after the request
            # alone, or after a plain answer to it.
            exchange = [exchange[0], {"role": "assistant", "content": rng.choice(ANSWERS).format(n=request)}][:room]
        messages += exchange
    return {"messages": messages, "tools": TOOLS}


def pasteable_transcript(count: int = 1000, characters: int = 950_000, seed: int = 7) -> dict:
    """The generated transcript of `count` messages in all (its system prompt and `count` - 1
    others), its tool results cut by one share so that its messages and tools written as JSON
    hold about `characters` characters: what a paste may hold (the store keeps at most
    1,000,000 such characters and 1,000 messages) for the longest chat the playground takes."""
    chat = generate_transcript(count - 1, seed)
    results = [message for message in chat["messages"] if message["role"] == "tool"]
    for _ in range(3):  # the JSON's escapes make the share a little off: twice more, closer
        size = len(json.dumps(chat, ensure_ascii=False))
        in_results = sum(len(json.dumps(message["content"], ensure_ascii=False)) for message in results)
        share = min(1.0, max(0.0, 1 - (size - characters) / max(1, in_results)))
        for message in results:
            message["content"] = message["content"][: max(1, int(len(message["content"]) * share))]
    return chat
