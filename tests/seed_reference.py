"""The seed's reference `compact()` loop, loaded at run time from the seed file.

The project keeps no copy of the seed's code: this module reads the ```python block that
follows the "**Python**" heading of 000_fd8adbc93eaf3a52.txt, executes only its imports and
the functions `estimate_tokens`, `keep_from` and `compact` (the rest talks to a model), with
`SYSTEM` and `WINDOW` injected, and drives the seed's loop over a script. Both the
differential tests and the benchmark use it, so "the engine sends what the seed sends" is
checked against the seed itself.

The seed directory is ../shared/seeds relative to the repository root, or $SEEDS_DIR.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SEED_FILE = "000_fd8adbc93eaf3a52.txt"
SEED_FUNCTIONS = ("estimate_tokens", "keep_from", "compact")
# The seed truncates with a fixed 150-character preview; the engine's `preview` default.
SEED_PREVIEW = 150

Message = dict[str, Any]


class SeedMissing(RuntimeError):
    """The seed file, its Python block or one of its functions cannot be found."""


def seed_path() -> Path:
    directory = Path(os.environ.get("SEEDS_DIR") or ROOT.parent / "shared" / "seeds")
    return directory / SEED_FILE


def seed_python_source(path: Path | None = None) -> str:
    """The ```python block that follows the "**Python**" heading."""
    path = path or seed_path()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise SeedMissing(f"cannot read the seed {path} (set SEEDS_DIR): {error}") from None
    heading = text.find("**Python**")
    block = re.compile(r"^```python\n(.*?)^```", re.S | re.M).search(text, heading if heading >= 0 else len(text))
    if heading < 0 or block is None:
        raise SeedMissing(f'{path}: no ```python block after the "**Python**" heading')
    return block.group(1)


def load_seed_compact(
    *,
    system: str,
    window: int = 8000,
    threshold: float = 0.8,
    keep: int = 2,
    path: Path | None = None,
    levels: tuple[int, ...] = (1, 2),
) -> SimpleNamespace:
    """The seed's `estimate_tokens`, `keep_from` and `compact`, bound to these settings.

    `levels` keeps only some of `compact()`'s two levels: its `for` loop is level 1
    (truncate old tool results), its `while` loop level 2 (drop old exchanges), so (1,) is the
    seed's truncation alone and (2,) its dropping alone.
    Returns a namespace with those three functions, plus SYSTEM and WINDOW as injected.
    """
    tree = ast.parse(seed_python_source(path))
    _keep_levels(tree, levels)
    wanted = [
        node
        for node in tree.body
        if isinstance(node, (ast.Import, ast.ImportFrom))
        or (isinstance(node, ast.FunctionDef) and node.name in SEED_FUNCTIONS)
    ]
    found = {node.name for node in wanted if isinstance(node, ast.FunctionDef)}
    missing = [name for name in SEED_FUNCTIONS if name not in found]
    if missing:
        raise SeedMissing(f"the seed's Python block has no function {', '.join(missing)}")
    namespace: dict[str, Any] = {
        "SYSTEM": system,
        "WINDOW": {"max_tokens": window, "threshold": threshold, "keep_recent_turns": keep},
    }
    exec(compile(ast.Module(body=wanted, type_ignores=[]), str(path or seed_path()), "exec"), namespace)
    return SimpleNamespace(
        SYSTEM=namespace["SYSTEM"],
        WINDOW=namespace["WINDOW"],
        **{name: namespace[name] for name in SEED_FUNCTIONS},
    )


def _keep_levels(tree: ast.Module, levels: tuple[int, ...]) -> None:
    level_of = {ast.For: 1, ast.While: 2}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "compact":
            kept = [s for s in node.body if level_of.get(type(s), levels[0]) in levels]
            if sum(type(s) in level_of for s in node.body) != 2:
                raise SeedMissing("the seed's compact() no longer has one for loop (level 1) and one while loop (level 2)")
            node.body = kept


def seed_requests(script: list[Message], seed: SimpleNamespace) -> list[list[Message]]:
    """Drive the seed's loop over `script` (plain chat messages, no system prompt) and return
    each request as sent: the system prompt, then the history.

    Like the seed's `ask()`: before every model call the history is compacted and the
    compacted history replaces the old one; the model's reply is the script's next assistant
    message. A last call is made when the script ends on a user or tool message.
    """
    messages: list[Message] = []
    requests: list[list[Message]] = []

    def model_call() -> None:
        messages[:] = seed.compact(messages)
        requests.append([{"role": "system", "content": seed.SYSTEM}, *messages])

    for message in script:
        if message.get("role") == "assistant":
            model_call()
        messages.append(message)
    if script and script[-1].get("role") != "assistant":
        model_call()
    return requests
