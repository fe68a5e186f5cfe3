"""OpenHands' observation masking condenser (`openhands-masking`): before every call, tool
results older than the attention window become <MASKED>; no model call. In the playground a
message is an event. docs/harnesses.md tells it with the same sources as `HARNESS.citations`."""

from __future__ import annotations

from ...i18n import N_
from ...settings import Settings
from ..compaction import Citation, Context, ProductConfig, Strategy, Work, level
from ..history import TOOL_RESULT_ROLES, Block
from .common import before_results, clear

ATTENTION_WINDOW = 100  # the newest events left whole (the class's own default is 5)
MASK = "<MASKED>"  # what an observation before the window becomes


def attention_window(history: list[Block], context: Context) -> int:
    """KEEP at the attention window: the last `ATTENTION_WINDOW` events."""
    return before_results(history, max(0, len(history) - ATTENTION_WINDOW))


@level("mask")
def mask_observations(work: Work, context: Context) -> bool:
    """Every tool result before the attention window becomes <MASKED>; replies and their calls
    stay."""
    history = work.history
    boundary = context.keep_start(history)
    cleared = len(work.cleared)
    for index in range(context.scan_start(mask_observations, history), boundary):
        block = history[index]
        if block.role not in TOOL_RESULT_ROLES or block.state == "cleared" or context.kept(block):
            continue
        clear(work, context, index, MASK)
    context.settle(mask_observations, history, boundary)
    return len(work.cleared) > cleared


def condenser_config(settings: Settings) -> str:
    """The condenser's config in OpenHands' Python."""
    return "\n".join([
        "from openhands.core.config.condenser_config import ObservationMaskingCondenserConfig",
        "",
        f"condenser = ObservationMaskingCondenserConfig(attention_window={ATTENTION_WINDOW})",
    ])


REPOSITORY = "OpenHands/OpenHands"
COMMIT = "d6fab190bfb55f07cc380993b45ec4f781706a92"
CONFIG = "openhands/core/config/condenser_config.py L19-29, ObservationMaskingCondenserConfig"
HARNESS = Strategy(
    "openhands-masking",
    N_(
        "as OpenHands' observation masking condenser does it: before every call, tool results older "
        "than the last 100 messages become <MASKED>; no model call"
    ),
    (mask_observations,),
    until_fits=False,
    product="OpenHands",
    keep_rule=attention_window,
    config=ProductConfig("python", condenser_config),
    citations=(
        Citation("trigger", REPOSITORY, COMMIT, f"{CONFIG}: it masks at every step"),
        Citation("ATTENTION_WINDOW", REPOSITORY, COMMIT, f"{CONFIG}: attention_window 100"),
        Citation("MASK", REPOSITORY, COMMIT, f"{CONFIG}: observations before the window become <MASKED>"),
        Citation("condenser_config", REPOSITORY, COMMIT, CONFIG),
    ),
)
