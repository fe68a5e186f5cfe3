"""What the drawings look up about a block over the whole replay, computed once per replay
(`per_replay`): each block's forms call by call, and each tool call's function name.
"""

from __future__ import annotations

import bisect

from ..counting.tokens import call_names
from ..engine.history import Block
from ..engine.calls import Replay, per_replay


@per_replay
def tool_names(replay: Replay) -> dict[str, str]:
    """tool_call_id -> function name, over the whole script."""
    return call_names(item.message for item in replay.scenario.script)


@per_replay
def _versions(replay: Replay) -> dict[str, tuple[list[int], list[Block]]]:
    """Per block id, the calls where it was first sent or received in a new form, and that
    form: a block's story over the whole replay, walked once."""
    versions: dict[str, tuple[list[int], list[Block]]] = {}
    for call in replay.calls:
        for block in (*call.blocks, *([call.reply] if call.reply else [])):
            numbers, forms = versions.setdefault(block.id, ([], []))
            if not forms or forms[-1] is not block:
                numbers.append(call.number)
                forms.append(block)
    return versions


def first_version(replay: Replay, block_id: str) -> Block | None:
    """A block as it first entered the history (before any truncation)."""
    found = _versions(replay).get(block_id)
    return found[1][0] if found else None


def latest_version(replay: Replay, block_id: str, number: int) -> Block | None:
    """A block in its latest form sent or received up to call `number`; None if it had not
    entered the history by then."""
    found = _versions(replay).get(block_id)
    if not found:
        return None
    at = bisect.bisect_right(found[0], number)
    return found[1][at - 1] if at else None

